//! Overload protection: the fixed in-flight limit (`--enable-priority-and-fairness=false`; requests queue for a place; 429 with Retry-After when the wait runs
//! out; masters exempt; recovery), the header-read
//! timeout against slow clients, and request bodies read only after authentication (413 past 3 MiB).

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use e2e::{flunder_v1beta1, wait_until, Server, FLUNDERS_V1BETA1};
use serde_json::json;

const TRIALS: &str = "/apis/hostile.example.com/v1/namespaces/default/trials";

/// The value of a metric line (`name{labels} value`) in `/metrics`, or 0.
fn metric(server: &Server, line_prefix: &str) -> f64 {
    e2e::metric_value(&server.http().get("/metrics").text, line_prefix).unwrap_or(0.0)
}

#[test]
fn the_mutating_limit_answers_429_while_full_exempts_masters_and_recovers() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "bob-token,bob,uid-bob,\"dev\"\n").unwrap();
    let server = Server::start_with_args(
        &["wardle", "hostile"],
        &[
            "--token-auth-file",
            tokens.path().to_str().unwrap(),
            // The fixed limits (tests/priority_and_fairness.rs has API Priority and Fairness's).
            "--enable-priority-and-fairness=false",
            "--max-mutating-requests-inflight",
            "1",
            "--plugin-call-timeout",
            "7000",
        ],
    );
    // Bob (not in system:masters, so the limit applies to him) may create in default.
    server.grant("default", "edit", "dev");
    let https = server.https();
    let create_as_bob = |path: &str, body: &serde_json::Value| {
        https
            .client()
            .post(https.url(path))
            .bearer_auth("bob-token")
            .json(body)
            .send()
            .unwrap()
    };
    let gauge = "apiserver_current_inflight_requests{request_kind=\"mutating\"}";
    std::thread::scope(|scope| {
        // Bob's slow create (a plugin call that loops until its 7 s deadline) holds the only mutating place.
        let slow = scope.spawn(|| {
            let trial = json!({
                "apiVersion": "hostile.example.com/v1", "kind": "Trial",
                "metadata": {"name": "slow", "namespace": "default"}, "spec": {"mode": "loop"},
            });
            create_as_bob(TRIALS, &trial).status().as_u16()
        });
        assert!(
            wait_until(Duration::from_secs(10), || metric(&server, gauge) >= 1.0),
            "the slow create never held the mutating place: {}",
            server
                .http()
                .get("/metrics")
                .text
                .lines()
                .filter(|l| l.contains("inflight"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        // A create while it is held waits in its tenant's queue; the place stays taken past the longest wait (5 s):
        // 429. Meanwhile reads (which have a limit of their own) and system:masters pass.
        let queued = scope.spawn(|| create_as_bob(FLUNDERS_V1BETA1, &flunder_v1beta1("while-full", "x")));
        server.http().get(FLUNDERS_V1BETA1).expect(200);
        server
            .http()
            .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("by-admin", "x"))
            .expect(201);
        let reply = queued.join().unwrap();
        assert_eq!(reply.status().as_u16(), 429);
        assert_eq!(
            reply.headers().get("retry-after").and_then(|v| v.to_str().ok()),
            Some("1")
        );
        let status: serde_json::Value = reply.json().unwrap();
        assert_eq!(
            (status["reason"].as_str(), status["code"].as_u64()),
            (Some("TooManyRequests"), Some(429))
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 1, "{status}");
        // Creates sent from now on wait for the place, which the slow create gives up at its deadline (7 s of its
        // own CPU time): the one waiting then is served.
        let mut last = 0;
        assert!(
            wait_until(Duration::from_secs(120), || {
                last = create_as_bob(FLUNDERS_V1BETA1, &flunder_v1beta1("queued", "x"))
                    .status()
                    .as_u16();
                last != 429
            }),
            "no queued create was served"
        );
        assert_eq!(last, 201, "the queued create was served once the place was free");
        assert_eq!(slow.join().unwrap(), 504, "the slow create ends at its plugin deadline");
    });
    assert!(metric(&server, "apiserver_dropped_requests_total{request_kind=\"mutating\"}") >= 1.0);
    // The place is free again.
    let reply = create_as_bob(FLUNDERS_V1BETA1, &flunder_v1beta1("after", "x"));
    assert_eq!(reply.status().as_u16(), 201);
}

#[test]
fn a_client_that_sends_half_a_header_is_disconnected() {
    let server = Server::start_with_args(&["wardle"], &["--header-read-timeout", "1s"]);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
        .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let outcome = stream.read(&mut buf);
    assert!(
        matches!(outcome, Ok(0)) || outcome.is_err() && started.elapsed() < Duration::from_secs(20),
        "the connection was not closed: {outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "closed only by our own read timeout"
    );
    // Other clients are served.
    server.http().get("/healthz").expect(200);
}

#[test]
fn bodies_are_read_after_authentication_and_capped_at_3_mib() {
    let server = Server::start_with_args(&["wardle"], &["--anonymous-auth=false"]);
    let mut big = flunder_v1beta1("big", "x");
    big["metadata"]["annotations"] = json!({"pad": "x".repeat(4 << 20)});
    let body = serde_json::to_vec(&big).unwrap();
    let post = |http: &e2e::Http| {
        http.client()
            .post(http.url(FLUNDERS_V1BETA1))
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send()
            .unwrap()
    };
    let reply = post(&server.https());
    assert_eq!(reply.status().as_u16(), 401, "refused before its body is read");
    let reply = post(&server.https_as("admin", &["system:masters"]));
    assert_eq!(reply.status().as_u16(), 413);
    let status: serde_json::Value = reply.json().unwrap();
    assert_eq!(status["reason"], "RequestEntityTooLarge");
}

#[test]
fn watches_per_user_are_capped_and_the_places_come_back_when_watches_end() {
    let server = Server::start_with_args(&["wardle"], &["--max-watches-per-user", "2"]);
    server.grant("default", "view", "dev");
    let bob = server.https_as("bob", &["dev"]);
    let watch = |timeout: u32| {
        bob.client()
            .get(bob.url(&format!("{FLUNDERS_V1BETA1}?watch=1&timeoutSeconds={timeout}")))
            .send()
            .unwrap()
    };
    // Two watches that end by themselves in a few seconds hold bob's two places.
    let first = watch(3);
    let second = watch(3);
    assert_eq!((first.status().as_u16(), second.status().as_u16()), (200, 200));
    let third = watch(3);
    assert_eq!(third.status().as_u16(), 429);
    assert_eq!(third.headers()["retry-after"], "1");
    let status: serde_json::Value = third.json().unwrap();
    assert_eq!(status["reason"], "TooManyRequests");
    // Other users and administrators are not held back by bob's watches.
    let carol = server.https_as("carol", &["dev"]);
    let reply = carol
        .client()
        .get(carol.url(&format!("{FLUNDERS_V1BETA1}?watch=1&timeoutSeconds=1")))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    assert!(metric(&server, "apiserver_dropped_requests_total{request_kind=\"watch\"}") >= 1.0);
    // Once bob's watches end, he may watch again.
    drop((first, second));
    assert!(
        wait_until(Duration::from_secs(20), || watch(1).status().as_u16() == 200),
        "bob's places never came back"
    );
}
