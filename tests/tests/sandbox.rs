//! The plugin sandbox, end to end: the `hostile` test plugin (`plugins/hostile`) misbehaves on request — an endless
//! loop, a memory bomb, a trap, invalid JSON, reading `/etc/passwd`, opening a socket — and the server must answer each
//! request with a clear `Status`, stay healthy, keep serving another plugin (wardle) at the same time, and serve the
//! hostile plugin normally again right after, on a fresh instance.
//!
//! The server runs with its default limits: a 100 ms deadline per plugin call and 64 MiB of memory per instance.

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use e2e::{flunder_v1beta1, str_at, wait_until, Reply, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

/// The collection URL of trials (the `hostile` plugin) in the `default` namespace.
const TRIALS: &str = "/apis/hostile.example.com/v1/namespaces/default/trials";
/// The plugin's name as error messages quote it.
const HOSTILE: &str = "\"hostile\"";
/// The call in which a trial misbehaves by default.
const PREPARE: &str = "create-strategy.prepare-for-create";
/// The call in which a trial with `stage: validate` misbehaves.
const VALIDATE: &str = "create-strategy.validate";
/// The longest a request stopped by the call deadline (100 ms) may take end to end: a generous behaviour bound, not
/// a benchmark.
const DEADLINE_BOUND: Duration = Duration::from_secs(5);
/// The most resident memory the server may use during and after several memory bombs (each instance may use 64 MiB).
const RSS_BOUND_KIB: u64 = 500 * 1024;
/// How much the server's resident memory may grow over all the bombs. Each bomb makes about 8 MiB resident (see the
/// plugin's `BOMB_BLOCK`), so the sixteen bombs would leave 128 MiB behind if failed instances' memory were kept.
const RSS_GROWTH_BOUND_KIB: u64 = 64 * 1024;

/// A trial named `name` doing `mode` in the call named by `stage` (`None`: prepare-for-create).
fn trial(name: &str, mode: &str, stage: Option<&str>) -> Value {
    let mut trial = json!({
        "apiVersion": "hostile.example.com/v1",
        "kind": "Trial",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"mode": mode},
    });
    if let Some(stage) = stage {
        trial["spec"]["stage"] = json!(stage);
    }
    trial
}

/// The server's resident set size in KiB, from `/proc/<pid>/status`.
fn rss_kib(server: &Server) -> u64 {
    let pid = server.pid().expect("the server is running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("read /proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status:\n{status}"))
}

/// Asserts that `/healthz` answers 200 `ok`.
fn assert_healthy(server: &Server, when: &str) {
    let reply = server.http().get("/healthz");
    assert_eq!((reply.status, reply.text.trim()), (200, "ok"), "/healthz {when}");
}

/// One hostile request's reply and how long it took.
struct Attempt {
    reply: Reply,
    elapsed: Duration,
}

/// What happened while hostile requests ran.
struct Run {
    /// The replies to the hostile requests, in order.
    attempts: Vec<Attempt>,
    /// How many wardle requests completed (successfully) while hostile requests were still running.
    wardle_during: usize,
    /// The largest resident set size of the server seen meanwhile, in KiB.
    peak_rss_kib: u64,
}

/// Creates `trials` one after another from another thread while this thread keeps creating flunders through the
/// wardle plugin and checking `/healthz` (at least once, and until the trials are done). Asserts every flunder is
/// created and every health check passes; returns the trials' replies.
fn alongside(server: &Server, label: &str, trials: &[Value]) -> Run {
    let http = server.http();
    thread::scope(|scope| {
        let hostile = scope.spawn(|| {
            trials
                .iter()
                .map(|trial| {
                    let started = Instant::now();
                    let reply = http.post_json(TRIALS, trial);
                    Attempt {
                        reply,
                        elapsed: started.elapsed(),
                    }
                })
                .collect::<Vec<_>>()
        });
        let mut wardle_during = 0;
        let mut peak_rss_kib = 0;
        for n in 0.. {
            let was_finished = hostile.is_finished();
            let name = format!("{label}-{n}");
            let reply = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&name, "x"));
            assert_eq!(
                reply.status, 201,
                "creating flunder {name} alongside hostile {label} trials: {}",
                reply.text
            );
            assert_healthy(server, &format!("alongside hostile {label} trials"));
            peak_rss_kib = peak_rss_kib.max(rss_kib(server));
            if !hostile.is_finished() {
                wardle_during += 1;
            }
            if was_finished {
                break;
            }
        }
        let attempts = hostile.join().expect("the hostile client thread panicked");
        Run {
            attempts,
            wardle_during,
            peak_rss_kib,
        }
    })
}

/// Asserts that a well-behaved trial can be created now (a failed instance was discarded, a fresh one works), and
/// that the server is healthy.
fn assert_recovers(server: &Server, name: &str) {
    let reply = server.http().post_json(TRIALS, &trial(name, "ok", None));
    let created = reply.expect(201);
    assert_eq!(str_at(created, "/metadata/name"), name, "{}", reply.text);
    let got = server.http().get(&format!("{TRIALS}/{name}"));
    assert_eq!(str_at(got.expect(200), "/spec/mode"), "ok", "{}", got.text);
    assert_healthy(server, &format!("after {name}"));
}

/// Asserts that a Status message names the hostile plugin and, when given, the call.
fn assert_names(status: &Value, call: Option<&str>) {
    let message = str_at(status, "/message");
    assert!(
        message.contains(HOSTILE),
        "the message does not name the plugin: {message:?}"
    );
    if let Some(call) = call {
        assert!(message.contains(call), "the message does not name {call}: {message:?}");
    }
}

#[test]
fn well_behaved_trials_are_created() {
    let server = Server::start(&["wardle", "hostile"]);
    let run = alongside(
        &server,
        "ok",
        &[trial("fine", "ok", None), trial("fine-too", "ok", Some("validate"))],
    );
    for attempt in &run.attempts {
        attempt.reply.expect(201);
    }
    assert_recovers(&server, "ok-after");
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline_with_504() {
    let server = Server::start(&["wardle", "hostile"]);
    let stages = [(None, PREPARE), (Some("validate"), VALIDATE)];
    let trials: Vec<Value> = (0..6)
        .map(|i| trial(&format!("loop-{i}"), "loop", stages[i % 2].0))
        .collect();
    let run = alongside(&server, "loop", &trials);
    for (i, attempt) in run.attempts.iter().enumerate() {
        let status = attempt.reply.assert_status(504, "Timeout");
        assert_names(status, Some(stages[i % 2].1));
        assert!(
            attempt.elapsed < DEADLINE_BOUND,
            "loop trial {i} took {:?} (bound {DEADLINE_BOUND:?})",
            attempt.elapsed
        );
        eprintln!(
            "loop trial {i}: {} in {:?}: {}",
            attempt.reply.status,
            attempt.elapsed,
            str_at(status, "/message")
        );
    }
    // Six calls of at least 100 ms each: wardle requests went through while they ran.
    assert!(
        run.wardle_during >= 1,
        "no wardle request completed while the loops ran"
    );
    eprintln!("wardle requests completed while the loops ran: {}", run.wardle_during);
    assert_recovers(&server, "ok-after-loop");
}

#[test]
fn a_memory_bomb_fails_with_500_and_the_server_memory_stays_bounded() {
    // The memory limit, not the call deadline, must stop the bombs: on a loaded machine a bomb's page faults can
    // take longer than the default 100 ms deadline (a 504, tested elsewhere), so this server allows calls 2 s.
    let server = Server::start_with_args(&["wardle", "hostile"], &["--plugin-call-timeout", "2000"]);
    let before = rss_kib(&server);
    let stages = [(None, PREPARE), (Some("validate"), VALIDATE)];
    for round in 0..4 {
        let trials: Vec<Value> = (0..4)
            .map(|i| trial(&format!("bomb-{round}-{i}"), "bomb", stages[i % 2].0))
            .collect();
        let run = alongside(&server, &format!("bomb-{round}"), &trials);
        for (i, attempt) in run.attempts.iter().enumerate() {
            let status = attempt.reply.assert_status(500, "InternalError");
            assert_names(status, Some(stages[i % 2].1));
            eprintln!(
                "bomb trial {round}-{i}: {} in {:?}: {}",
                attempt.reply.status,
                attempt.elapsed,
                str_at(status, "/message")
            );
        }
        let after = rss_kib(&server);
        eprintln!(
            "server RSS: {before} KiB before the bombs, peak {} KiB during round {round}, {after} KiB after it",
            run.peak_rss_kib
        );
        assert!(
            run.peak_rss_kib < RSS_BOUND_KIB && after < RSS_BOUND_KIB,
            "server RSS grew past {RSS_BOUND_KIB} KiB: peak {} KiB, after {after} KiB (before {before} KiB)",
            run.peak_rss_kib
        );
        assert_recovers(&server, &format!("ok-after-bomb-{round}"));
    }
    let after = rss_kib(&server);
    assert!(
        after.saturating_sub(before) < RSS_GROWTH_BOUND_KIB,
        "server RSS grew by {} KiB over the bombs (bound {RSS_GROWTH_BOUND_KIB} KiB): {before} KiB before, {after} KiB after",
        after.saturating_sub(before)
    );
}

/// A metric of the hostile plugin's (`name{plugin="hostile"}`) from `/metrics`; 0 when absent.
fn hostile_metric(server: &Server, name: &str) -> f64 {
    let text = server.http().get("/metrics").text;
    e2e::metric_value(&text, &format!("{name}{{plugin=\"hostile\"}} ")).unwrap_or(0.0)
}

#[test]
fn an_instance_whose_memory_grew_is_retired_after_its_call() {
    let server = Server::start(&["wardle", "hostile"]);
    const MEMORY: &str = "wasm_apiserver_plugin_memory_bytes";
    const RETIRED: &str = "wasm_apiserver_plugin_instances_retired_total";
    server
        .http()
        .post_json(TRIALS, &trial("before", "ok", None))
        .expect(201);
    let pooled = hostile_metric(&server, MEMORY);
    assert!(pooled > 0.0, "no instance of the plugin is pooled after a create");
    assert_eq!(hostile_metric(&server, RETIRED), 0.0);
    // The call keeps 16 MiB and succeeds: the trial is created, and the grown instance is not pooled again.
    for (i, stage) in [None, Some("validate")].into_iter().enumerate() {
        let name = format!("leak-{i}");
        let reply = server.http().post_json(TRIALS, &trial(&name, "leak", stage));
        assert_eq!(str_at(reply.expect(201), "/metadata/name"), name, "{}", reply.text);
        assert_eq!(
            hostile_metric(&server, RETIRED),
            (i + 1) as f64,
            "retired instances after {name}"
        );
        let memory = hostile_metric(&server, MEMORY);
        assert!(
            memory <= pooled,
            "the instances' memory after {name}: {memory} bytes, {pooled} before the leaks"
        );
    }
    assert_recovers(&server, "after-leaks");
}

/// With the server's own log filter, a request it failed (a trap: 500) is logged, one it served is not.
#[test]
fn by_default_only_failed_requests_are_logged() {
    let server = Server::start_with_default_log(&["hostile"]);
    server
        .http()
        .post_json(TRIALS, &trial("logged-ok", "ok", None))
        .expect(201);
    server
        .http()
        .post_json(TRIALS, &trial("logged-trap", "trap", None))
        .expect(500);
    let request_lines = || -> Vec<String> {
        let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains("wasm_apiserver::http") && l.contains("/trials"))
            .map(str::to_owned)
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(10), || request_lines()
            .iter()
            .any(|l| l.contains("status=500"))),
        "the failed request is not in the log: {:?}",
        request_lines()
    );
    let lines = request_lines();
    assert!(
        lines.iter().all(|l| !l.contains("status=201")),
        "a served request was logged: {lines:?}"
    );
}

#[test]
fn a_trap_fails_with_500_naming_the_plugin_and_call() {
    let server = Server::start(&["wardle", "hostile"]);
    // `trap` panics (the SDK's panic hook logs the message through the host, then the panic traps); `abort`
    // executes `unreachable`.
    let cases = [
        ("trap", None, PREPARE),
        ("trap", Some("validate"), VALIDATE),
        ("abort", None, PREPARE),
        ("abort", Some("validate"), VALIDATE),
    ];
    let trials: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (mode, stage, _))| trial(&format!("{mode}-{i}"), mode, *stage))
        .collect();
    let run = alongside(&server, "trap", &trials);
    for (attempt, (mode, _, call)) in run.attempts.iter().zip(cases) {
        let status = attempt.reply.assert_status(500, "InternalError");
        assert_names(status, Some(call));
        let message = str_at(status, "/message");
        assert!(message.contains("unreachable"), "{message}");
        // A panic's message and location reach the client; a bare `unreachable` has none to give.
        let panic = "the plugin's last error log: panicked at plugins/hostile/src/lib.rs";
        assert_eq!(message.contains(panic), mode == "trap", "{message}");
        if mode == "trap" {
            assert!(
                message.ends_with("hostile: this trial asked the plugin to trap"),
                "{message}"
            );
        }
        eprintln!(
            "{mode} in {call}: {} in {:?}: {message}",
            attempt.reply.status, attempt.elapsed
        );
    }
    assert_recovers(&server, "ok-after-trap");
}

#[test]
fn invalid_json_from_the_plugin_fails_with_500() {
    let server = Server::start(&["wardle", "hostile"]);
    let run = alongside(&server, "garbage", &[trial("garbage", "garbage", None)]);
    let attempt = &run.attempts[0];
    let status = attempt.reply.assert_status(500, "InternalError");
    assert_names(status, Some(PREPARE));
    let message = str_at(status, "/message");
    assert!(message.contains("invalid JSON"), "{message:?}");
    eprintln!("garbage: {} in {:?}: {message}", attempt.reply.status, attempt.elapsed);
    // Nothing was stored.
    server
        .http()
        .get(&format!("{TRIALS}/garbage"))
        .assert_status(404, "NotFound");
    assert_recovers(&server, "ok-after-garbage");
}

#[test]
fn an_internal_error_of_a_plugin_is_a_500_naming_the_plugin_and_the_hook() {
    let server = Server::start(&["wardle", "hostile"]);
    let run = alongside(&server, "internal", &[trial("internal", "internal", None)]);
    let attempt = &run.attempts[0];
    let status = attempt.reply.assert_status(500, "InternalError");
    assert_names(status, Some(PREPARE));
    let message = str_at(status, "/message");
    assert!(message.contains("asked for an internal error"), "{message:?}");
    server
        .http()
        .get(&format!("{TRIALS}/internal"))
        .assert_status(404, "NotFound");
    assert_recovers(&server, "ok-after-internal");
}

/// Asserts that a trial touching the outside world failed with a Status naming the plugin: either the plugin got an
/// error and reported it (403 Forbidden) or the host's trap stub stopped it (500 InternalError).
fn assert_denied(attempt: &Attempt, what: &str) -> String {
    // Denied by a trap (500), or by an error the plugin returns when the sandbox answers that there is no such file
    // (no directory is preopened): 403 from prepare-for-create, a Forbidden field error (422) from validate.
    let (code, reason) = match attempt.reply.status {
        403 => (403, "Forbidden"),
        422 => (422, "Invalid"),
        _ => (500, "InternalError"),
    };
    let status = attempt.reply.assert_status(code, reason);
    if code == 422 {
        assert_eq!(
            str_at(status, "/details/causes/0/reason"),
            "FieldValueForbidden",
            "{what}"
        );
    }
    let message = str_at(status, "/message");
    assert!(
        message.contains("hostile"),
        "the {what} message does not name the plugin: {message:?}"
    );
    eprintln!("{what}: {} in {:?}: {message}", attempt.reply.status, attempt.elapsed);
    message.to_owned()
}

#[test]
fn reading_a_host_file_is_denied() {
    let server = Server::start(&["wardle", "hostile"]);
    let run = alongside(
        &server,
        "passwd",
        &[
            trial("passwd-0", "passwd", None),
            trial("passwd-1", "passwd", Some("validate")),
        ],
    );
    for (attempt, stage) in run.attempts.iter().zip(["prepare-for-create", "validate"]) {
        assert!(
            !attempt.reply.text.contains("root:"),
            "the response carries /etc/passwd: {}",
            attempt.reply.text
        );
        assert_denied(attempt, &format!("passwd in {stage}"));
    }
    for name in ["passwd-0", "passwd-1"] {
        let got = server.http().get(&format!("{TRIALS}/{name}"));
        assert!(
            !got.text.contains("root:"),
            "{name} was stored with /etc/passwd: {}",
            got.text
        );
        got.assert_status(404, "NotFound");
    }
    assert_recovers(&server, "ok-after-passwd");
}

#[test]
fn opening_a_socket_is_denied() {
    let server = Server::start(&["wardle", "hostile"]);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener");
    let port = listener.local_addr().expect("the listener's address").port();
    let trials: Vec<Value> = [None, Some("validate")]
        .into_iter()
        .enumerate()
        .map(|(i, stage)| {
            let mut t = trial(&format!("socket-{i}"), "socket", stage);
            t["spec"]["port"] = json!(port);
            t
        })
        .collect();
    let run = alongside(&server, "socket", &trials);
    for (attempt, stage) in run.attempts.iter().zip(["prepare-for-create", "validate"]) {
        assert_denied(attempt, &format!("socket in {stage}"));
    }
    // The connection attempts are synchronous: had one got through, it would be waiting in the accept queue now.
    listener.set_nonblocking(true).expect("make the listener non-blocking");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("the plugin connected to 127.0.0.1:{port} (from {peer})"),
        Err(e) => panic!("accept on 127.0.0.1:{port}: {e}"),
    }
    assert_recovers(&server, "ok-after-socket");
}
