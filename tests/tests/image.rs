//! The image (deploy/image): built by deploy/image/build.sh with buildah (daemonless, Debian's)
//! from this test build's server and the wardle plugin, then run with `buildah run` and driven with kubectl. Its
//! storage is a temporary directory of the test's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use e2e::{free_port, server_binary, wait_until};
use serde_json::Value;

const TAG: &str = "localhost/wasm-apiserver:e2e";

fn buildah(storage: &Path) -> Command {
    let mut command = Command::new("buildah");
    command
        .arg("--root")
        .arg(storage.join("root"))
        .arg("--runroot")
        .arg(storage.join("run"))
        .args(["--storage-driver", "vfs"]);
    command
}

fn ok(command: &mut Command, what: &str) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (apt-get install buildah)"));
    assert!(out.status.success(), "{what} failed:\n{}", e2e::output_text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_image_builds_with_buildah_and_serves_its_plugins_to_kubectl() {
    let storage = tempfile::Builder::new()
        .prefix("wasm-apiserver-image-")
        .tempdir()
        .unwrap();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let built = ok(
        Command::new(repository.join("deploy/image/build.sh"))
            .arg("--binary")
            .arg(server_binary())
            .args(["--tag", TAG, "--plugins", "wardle"])
            .arg("--root")
            .arg(storage.path().join("root"))
            .arg("--runroot")
            .arg(storage.path().join("run")),
        "deploy/image/build.sh",
    );
    assert_eq!(built.trim(), TAG);
    let inspected: Value = serde_json::from_str(&ok(
        buildah(storage.path()).args(["inspect", "--type", "image", TAG]),
        "inspect",
    ))
    .unwrap();
    let config = &inspected["OCIv1"]["config"];
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(config["Entrypoint"][0], "/usr/local/bin/wasm-apiserver", "{config}");

    ok(
        buildah(storage.path()).args(["from", "--name", "e2e", TAG]),
        "buildah from",
    );
    let port = free_port().unwrap();
    let log = std::fs::File::create(storage.path().join("server.log")).unwrap();
    let command_line = format!(
        "/usr/local/bin/wasm-apiserver serve --plugin-dir=/plugins --data-dir=/var/lib/wasm-apiserver \
         --secure-port=0 --insecure-port={port}"
    );
    let mut server = buildah(storage.path())
        .args(["run", "--isolation", "chroot", "e2e", "--"])
        .args(command_line.split(' '))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("buildah run");
    // buildah runs the server in a session of its own: the server's process is found by its whole command line (the
    // processes around it have others), as `kill` in the container would find it.
    let signal = |name: &str| {
        let _ = Command::new("pkill")
            .arg(format!("-{name}"))
            .args(["-x", "-f", "--", &command_line])
            .status();
    };
    let server_running = || {
        Command::new("pgrep")
            .args(["-x", "-f", "--", &command_line])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let url = format!("http://127.0.0.1:{port}");
    let ready = wait_until(Duration::from_secs(90), || {
        reqwest::blocking::get(format!("{url}/readyz")).is_ok_and(|r| r.status().is_success())
    });
    let server_log = || std::fs::read_to_string(storage.path().join("server.log")).unwrap_or_default();
    if !ready {
        signal("KILL");
        panic!("the server in the image was not ready:\n{}", server_log());
    }
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let mut command = Command::new(e2e::kubectl_path());
        command
            .arg(format!("--server={url}"))
            .args(args)
            .env("KUBECONFIG", storage.path().join("no-kubeconfig"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        use std::io::Write as _;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().unwrap()
    };
    assert!(
        server_running(),
        "the server's process is not found by its command line"
    );
    let flunder = e2e::flunder_v1beta1("from-the-image", "x").to_string();
    let created = kubectl(&["create", "-f", "-"], Some(&flunder));
    let listed = kubectl(&["get", "flunders"], None);
    signal("TERM");
    // The server stops on SIGTERM, and buildah with it.
    let stopped = wait_until(Duration::from_secs(20), || {
        !server_running() && server.try_wait().is_ok_and(|s| s.is_some())
    });
    if !stopped {
        signal("KILL");
        let _ = server.wait();
    }
    assert!(
        created.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&created.stderr),
        server_log()
    );
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        table.contains("from-the-image"),
        "{table}\n{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(stopped, "the server did not stop on SIGTERM:\n{}", server_log());
    let _ = buildah(storage.path()).args(["rm", "e2e"]).output();
    let _ = buildah(storage.path()).args(["rmi", "-f", TAG]).output();
}
