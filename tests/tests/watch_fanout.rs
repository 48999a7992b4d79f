//! Watch fan-out: many watchers of one resource each get every event once and in order; a watcher
//! that stops reading is ended as kube-apiserver ends it (its stream just ends, and
//! `apiserver_terminated_watchers_total` counts it) while the others keep getting everything; watchers of the same
//! version get the very same bytes for an event (encoded once), and watchers of another version or format get
//! theirs.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use e2e::{metric_value, str_at, JsonStream, Server, FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

/// How long to wait for the events expected.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A v1alpha1 flunder with an annotation of `pad` bytes (to fill a connection's buffers with few events).
fn flunder(name: &str, pad: usize) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "annotations": {"pad": "x".repeat(pad)}},
        "spec": {"reference": name},
    })
}

/// A client without a request timeout, for watches read late or slowly.
fn streaming_client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .expect("a streaming client")
}

/// Starts a watch of `path` and returns its response, unread.
fn open_watch(
    client: &reqwest::blocking::Client,
    server: &Server,
    path: &str,
    accept: &str,
) -> reqwest::blocking::Response {
    let response = client
        .get(server.http().url(path))
        .header("Accept", accept)
        .send()
        .unwrap_or_else(|e| panic!("watch {path}: {e:#}"));
    assert_eq!(response.status().as_u16(), 200, "watch {path}");
    response
}

/// The list's resourceVersion.
fn list_rv(server: &Server, path: &str) -> String {
    str_at(server.http().get(path).expect(200), "/metadata/resourceVersion").to_owned()
}

/// `(type, name, resourceVersion)` of an event.
fn summary(event: &Value) -> (String, String, String) {
    (
        str_at(event, "/type").to_owned(),
        str_at(event, "/object/metadata/name").to_owned(),
        str_at(event, "/object/metadata/resourceVersion").to_owned(),
    )
}

fn terminated_watchers(server: &Server) -> f64 {
    let text = server.http().get("/metrics").text.clone();
    metric_value(
        &text,
        "apiserver_terminated_watchers_total{group=\"wardle.example.com\",resource=\"flunders\"}",
    )
    .unwrap_or(0.0)
}

#[test]
fn a_watcher_that_never_reads_is_ended_as_kube_ends_it_and_another_gets_every_event() {
    let server = Server::start(&["wardle"]);
    let rv = list_rv(&server, FLUNDERS_V1ALPHA1);
    let watch = format!("{FLUNDERS_V1ALPHA1}?watch=true&resourceVersion={rv}");
    let client = streaming_client();
    let slow = open_watch(&client, &server, &watch, "application/json");
    // Read through a buffer: a reader that asks the connection for each byte would itself be too slow.
    let mut fast = JsonStream::spawn(BufReader::with_capacity(
        1 << 20,
        open_watch(&client, &server, &watch, "application/json"),
    ));

    // Write until the server ends the slow watcher: its queue of 1,024 events fills once the connection's buffers
    // are full. Events of 16 KiB fill the buffers within a few hundred.
    let mut written: Vec<(String, String)> = Vec::new();
    while terminated_watchers(&server) < 1.0 {
        assert!(
            written.len() < 6000,
            "the slow watcher was not ended after {} events",
            written.len()
        );
        let batch: Vec<_> = (written.len()..written.len() + 100)
            .map(|i| format!("f{i:05}"))
            .collect();
        let replies: Vec<_> = std::thread::scope(|s| {
            let workers: Vec<_> = batch
                .chunks(25)
                .map(|names| {
                    let server = &server;
                    s.spawn(move || {
                        names
                            .iter()
                            .map(|name| {
                                let reply = server.http().post_json(FLUNDERS_V1ALPHA1, &flunder(name, 16 << 10));
                                let rv = str_at(reply.expect(201), "/metadata/resourceVersion").to_owned();
                                (name.clone(), rv)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("a writer")).collect()
        });
        written.extend(replies);
    }
    written.sort_by_key(|(_, rv)| rv.parse::<i64>().expect("a numeric resourceVersion"));
    let expected: Vec<_> = written
        .iter()
        .map(|(name, rv)| ("ADDED".to_owned(), name.clone(), rv.clone()))
        .collect();

    // The reading watcher got every event, once, in resourceVersion order.
    let events = fast.collect_until(TIMEOUT, |events| events.len() >= expected.len());
    let got: Vec<_> = events.iter().map(summary).collect();
    assert_eq!(got.len(), expected.len(), "the reading watcher's events");
    assert!(got == expected, "the reading watcher got every event in order");

    // The slow watcher, read now, got the events in order up to its end, then its stream ended without an ERROR
    // event (kube-apiserver closes a watcher that cannot keep up; the client watches again from where it was).
    let mut slow = JsonStream::spawn(BufReader::new(slow));
    let mut delivered = Vec::new();
    while let Some(event) = slow.next(TIMEOUT) {
        assert_ne!(event["type"], "ERROR", "the slow watcher got an ERROR event: {event:#}");
        delivered.push(summary(&event));
    }
    assert_eq!(
        slow.end_reason(),
        Some("end of stream"),
        "the slow watcher's stream ended"
    );
    assert!(
        !delivered.is_empty() && delivered.len() < expected.len(),
        "the slow watcher got {} of {} events before it was ended",
        delivered.len(),
        expected.len()
    );
    assert!(
        expected.starts_with(&delivered),
        "the slow watcher's events are in order, with no gap"
    );
    assert_eq!(terminated_watchers(&server), 1.0);
}

#[test]
fn two_hundred_watchers_each_get_every_event_once_in_order() {
    let server = Server::start(&["wardle"]);
    let rv = list_rv(&server, FLUNDERS_V1ALPHA1);
    let watch = format!("{FLUNDERS_V1ALPHA1}?watch=true&resourceVersion={rv}");
    let mut watchers: Vec<JsonStream> = (0..200).map(|_| server.http().watch(&watch)).collect();
    // Creates, updates and deletes.
    let mut expected = Vec::new();
    for i in 0..20 {
        let name = format!("f{i:02}");
        let reply = server.http().post_json(FLUNDERS_V1ALPHA1, &flunder(&name, 0));
        let created = reply.expect(201).clone();
        expected.push((
            "ADDED".to_owned(),
            name.clone(),
            str_at(&created, "/metadata/resourceVersion").to_owned(),
        ));
        if i % 2 == 0 {
            let mut changed = created.clone();
            changed["spec"]["reference"] = json!("changed");
            let reply = server.http().put_json(&format!("{FLUNDERS_V1ALPHA1}/{name}"), &changed);
            let rv = str_at(reply.expect(200), "/metadata/resourceVersion").to_owned();
            expected.push(("MODIFIED".to_owned(), name.clone(), rv));
        }
        if i % 4 == 0 {
            let reply = server.http().delete(&format!("{FLUNDERS_V1ALPHA1}/{name}"));
            reply.expect(200);
            // The DELETED event's resourceVersion is the deletion's revision: the next write's revision less one.
            expected.push(("DELETED".to_owned(), name.clone(), String::new()));
        }
    }
    for (n, watcher) in watchers.iter_mut().enumerate() {
        let events = watcher.collect_until(TIMEOUT, |events| events.len() >= expected.len());
        let got: Vec<_> = events.iter().map(summary).collect();
        assert_eq!(got.len(), expected.len(), "watcher {n}: {got:?}");
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!((&g.0, &g.1), (&e.0, &e.1), "watcher {n}");
            if !e.2.is_empty() {
                assert_eq!(g.2, e.2, "watcher {n}: the resourceVersion of {e:?}");
            }
        }
        let revisions: Vec<i64> = got.iter().map(|g| g.2.parse().expect("a resourceVersion")).collect();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "watcher {n}: in order: {revisions:?}"
        );
        // Nothing more (no duplicate).
        assert_eq!(
            watcher.next(Duration::from_millis(200)),
            None,
            "watcher {n}: an event too many"
        );
    }
}

/// Reads `n` lines of a watch response, as bytes.
fn read_lines(response: reqwest::blocking::Response, n: usize) -> Vec<Vec<u8>> {
    let handle = std::thread::spawn(move || {
        let mut reader = BufReader::new(response);
        let mut lines = Vec::new();
        for _ in 0..n {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                break;
            }
            lines.push(line);
        }
        lines
    });
    handle.join().expect("the reader")
}

#[test]
fn watchers_of_one_version_get_the_same_bytes_and_other_versions_and_tables_their_own() {
    let server = Server::start(&["wardle"]);
    let rv = list_rv(&server, FLUNDERS_V1ALPHA1);
    let client = streaming_client();
    let query = format!("?watch=true&resourceVersion={rv}");
    let alpha: Vec<_> = (0..2)
        .map(|_| {
            open_watch(
                &client,
                &server,
                &format!("{FLUNDERS_V1ALPHA1}{query}"),
                "application/json",
            )
        })
        .collect();
    let beta: Vec<_> = (0..2)
        .map(|_| {
            open_watch(
                &client,
                &server,
                &format!("{FLUNDERS_V1BETA1}{query}"),
                "application/json",
            )
        })
        .collect();
    let table = open_watch(
        &client,
        &server,
        &format!("{FLUNDERS_V1ALPHA1}{query}"),
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    );
    let names = ["a", "b", "c"];
    for name in names {
        server
            .http()
            .post_json(FLUNDERS_V1ALPHA1, &flunder(name, 0))
            .expect(201);
    }
    let a = server.http().get(&format!("{FLUNDERS_V1ALPHA1}/a")).expect(200).clone();
    let mut changed = a.clone();
    changed["spec"]["reference"] = json!("changed");
    server
        .http()
        .put_json(&format!("{FLUNDERS_V1ALPHA1}/a"), &changed)
        .expect(200);
    const EVENTS: usize = 4;

    let alpha: Vec<_> = alpha.into_iter().map(|r| read_lines(r, EVENTS)).collect();
    let beta: Vec<_> = beta.into_iter().map(|r| read_lines(r, EVENTS)).collect();
    let table = read_lines(table, EVENTS);
    for lines in alpha.iter().chain(&beta).chain([&table]) {
        assert_eq!(lines.len(), EVENTS);
    }
    assert_eq!(alpha[0], alpha[1], "two v1alpha1 watchers get the same bytes");
    assert_eq!(beta[0], beta[1], "two v1beta1 watchers get the same bytes");

    // Each version's events are the objects as a GET in that version returns them.
    let parse = |line: &[u8]| serde_json::from_slice::<Value>(line).expect("a JSON line");
    for (lines, collection, api_version) in [
        (&alpha[0], FLUNDERS_V1ALPHA1, "wardle.example.com/v1alpha1"),
        (&beta[0], FLUNDERS_V1BETA1, "wardle.example.com/v1beta1"),
    ] {
        let events: Vec<Value> = lines.iter().map(|l| parse(l)).collect();
        let kinds: Vec<_> = events.iter().map(|e| str_at(e, "/type").to_owned()).collect();
        assert_eq!(kinds, ["ADDED", "ADDED", "ADDED", "MODIFIED"]);
        for event in &events {
            assert_eq!(event["object"]["apiVersion"], api_version, "{event:#}");
        }
        // The last state of every object, from its last event, is what a GET in that version answers.
        for name in names {
            let last = events
                .iter()
                .rev()
                .find(|e| str_at(e, "/object/metadata/name") == name)
                .expect("an event of each object");
            let got = server.http().get(&format!("{collection}/{name}")).expect(200).clone();
            assert_eq!(last["object"], got, "{name} in {api_version}");
        }
    }
    assert_eq!(
        str_at(&parse(&beta[0][3]), "/object/spec/flunderReference"),
        "changed",
        "the v1beta1 event carries the converted field"
    );

    // The Table watch gets rows, the first with the column definitions.
    let tables: Vec<Value> = table.iter().map(|l| parse(l)).collect();
    for (i, event) in tables.iter().enumerate() {
        assert_eq!(event["object"]["kind"], "Table", "{event:#}");
        let rows = event["object"]["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["cells"][0], json!(["a", "b", "c", "a"][i]), "{event:#}");
        let columns = event["object"]["columnDefinitions"].as_array().map_or(0, Vec::len);
        assert_eq!(columns > 0, i == 0, "only the first row has the column definitions");
    }
}
