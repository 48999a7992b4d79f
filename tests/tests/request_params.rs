//! Query parameters and methods checked as kube-apiserver checks them: numbers that do not fit are 400,
//! booleans read as Go's strconv.ParseBool reads them, and a POST to an object's path is 405.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use reqwest::Method;

#[test]
fn a_post_to_an_object_path_is_not_allowed_and_creates_nothing() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let body = flunder_v1beta1("from-body", "x").to_string().into_bytes();
    let reply = http.send(
        Method::POST,
        &format!("{FLUNDERS_V1BETA1}/in-path"),
        Some("application/json"),
        body,
    );
    reply.assert_status(405, "MethodNotAllowed");
    http.get(&format!("{FLUNDERS_V1BETA1}/from-body"))
        .assert_status(404, "NotFound");
    http.get(&format!("{FLUNDERS_V1BETA1}/in-path"))
        .assert_status(404, "NotFound");
}

#[test]
fn numbers_that_do_not_fit_are_bad_requests() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    for query in [
        "watch=true&timeoutSeconds=18446744073709551615",
        "watch=true&timeoutSeconds=-1",
        "watch=true&timeoutSeconds=soon",
        "limit=99999999999999999999",
    ] {
        let reply = http.get(&format!("{FLUNDERS_V1BETA1}?{query}"));
        reply.assert_status(400, "BadRequest");
    }
    // The largest int64 is a timeout too far to keep: the watch just has none.
    let mut watch = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&timeoutSeconds=9223372036854775807"
    ));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("late", "x"))
        .expect(201);
    let event = watch.next(Duration::from_secs(30)).expect("an event");
    assert_eq!(str_at(&event, "/type"), "ADDED", "{event:#}");
}

#[test]
fn booleans_are_read_as_go_reads_them() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("one", "x"))
        .expect(201);
    for spelling in ["True", "t", "1", "TRUE"] {
        let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch={spelling}"));
        let event = watch.next(Duration::from_secs(30)).expect("a watch event");
        assert_eq!(str_at(&event, "/type"), "ADDED", "watch={spelling}: {event:#}");
    }
    let list = http.get(&format!("{FLUNDERS_V1BETA1}?watch=False"));
    assert_eq!(list.expect(200)["kind"], "FlunderList", "{}", list.text);
    http.get(&format!("{FLUNDERS_V1BETA1}?watch=maybe"))
        .assert_status(400, "BadRequest");

    let pretty = http.get(&format!("{FLUNDERS_V1BETA1}/one?pretty=True"));
    assert!(pretty.text.contains("\n  \"metadata\": {\n"), "{}", pretty.text);
    let plain = http.get(&format!("{FLUNDERS_V1BETA1}/one?pretty=0"));
    assert!(!plain.text.trim_end().contains('\n'), "{}", plain.text);
}

/// With a selector, a page holds `limit` matching objects (kube reads on until it has them) and no
/// remainingItemCount (unknown with a selector); following the continue tokens yields every match once.
#[test]
fn a_page_with_a_selector_is_filled_and_counts_nothing_remaining() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    for i in 0..30 {
        let mut f = flunder_v1beta1(&format!("f{i:02}"), "x");
        if i % 3 == 0 {
            f["metadata"]["labels"] = serde_json::json!({"pick": "yes"});
        }
        http.post_json(FLUNDERS_V1BETA1, &f).expect(201);
    }
    let mut names = Vec::new();
    let mut pages = Vec::new();
    let mut query = String::from("labelSelector=pick%3Dyes&limit=4");
    loop {
        let page = http.get(&format!("{FLUNDERS_V1BETA1}?{query}"));
        let page = page.expect(200).clone();
        assert!(page["metadata"].get("remainingItemCount").is_none(), "{page:#}");
        let items = page["items"].as_array().unwrap();
        pages.push(items.len());
        names.extend(items.iter().map(|i| str_at(i, "/metadata/name").to_owned()));
        match page["metadata"]["continue"].as_str().filter(|c| !c.is_empty()) {
            Some(token) => query = format!("labelSelector=pick%3Dyes&limit=4&continue={token}"),
            None => break,
        }
    }
    assert_eq!(pages, [4, 4, 2]);
    let expected: Vec<String> = (0..30).step_by(3).map(|i| format!("f{i:02}")).collect();
    assert_eq!(names, expected);

    // Without a selector the count is there.
    let page = http.get(&format!("{FLUNDERS_V1BETA1}?limit=4"));
    assert_eq!(page.expect(200)["metadata"]["remainingItemCount"], 26, "{}", page.text);

    // kubectl pages the same way.
    let out = server.kubectl_ok(&["get", "flunders", "-l", "pick=yes", "--chunk-size=3", "-o", "name"]);
    assert_eq!(out.lines().count(), 10, "{out}");
}

/// A watch of one object's path streams only that object; a field selector naming another is refused.
#[test]
fn a_watch_of_an_object_path_streams_only_that_object() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}/b?watch=1"));
    for name in ["a", "b", "c"] {
        http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(name, "x"))
            .expect(201);
    }
    http.delete(&format!("{FLUNDERS_V1BETA1}/a")).expect(200);
    http.delete(&format!("{FLUNDERS_V1BETA1}/b")).expect(200);
    let first = watch.next(Duration::from_secs(30)).expect("b's ADDED");
    assert_eq!(
        (str_at(&first, "/type"), str_at(&first, "/object/metadata/name")),
        ("ADDED", "b")
    );
    let second = watch.next(Duration::from_secs(30)).expect("b's DELETED");
    assert_eq!(
        (str_at(&second, "/type"), str_at(&second, "/object/metadata/name")),
        ("DELETED", "b")
    );

    http.get(&format!("{FLUNDERS_V1BETA1}/b?watch=1&fieldSelector=metadata.name%3Dc"))
        .assert_status(400, "BadRequest");
}

/// A read at a resourceVersion the store has not reached waits, then answers kube's 504 with the
/// ResourceVersionTooLarge cause that reflectors look for, and a retry delay.
#[test]
fn a_resource_version_from_the_future_is_a_timeout_with_its_cause() {
    let server = Server::start(&["wardle"]);
    let reply = server.http().get(&format!(
        "{FLUNDERS_V1BETA1}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"
    ));
    let status = reply.assert_status(504, "Timeout");
    assert!(
        str_at(status, "/message").starts_with("Timeout: Too large resource version: 999999999, current: "),
        "{status:#}"
    );
    assert_eq!(
        status["details"]["causes"],
        serde_json::json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1, "{status:#}");
}

/// A list of at least 128 KiB goes gzip-compressed to a client that accepts it, as kube-apiserver sends it; kubectl
/// (which asks for gzip) reads it; a client that does not ask gets it plain.
#[test]
fn a_large_list_is_gzip_compressed_for_clients_that_accept_it() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let padding = "p".repeat(1000);
    for i in 0..200 {
        let mut f = flunder_v1beta1(&format!("big{i:03}"), "x");
        f["metadata"]["annotations"] = serde_json::json!({"example.com/padding": padding});
        http.post_json(FLUNDERS_V1BETA1, &f).expect(201);
    }
    let url = http.url(FLUNDERS_V1BETA1);
    let compressed = http
        .client()
        .get(&url)
        .header("Accept-Encoding", "gzip")
        .send()
        .unwrap();
    assert_eq!(compressed.status(), 200);
    assert_eq!(compressed.headers()["content-encoding"], "gzip");
    let bytes = compressed.bytes().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    let list: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 200);
    assert!(
        bytes.len() < text.len() / 10,
        "{} compressed of {}",
        bytes.len(),
        text.len()
    );

    let plain = http.client().get(&url).send().unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let small = http
        .client()
        .get(format!("{url}/big000"))
        .header("Accept-Encoding", "gzip")
        .send()
        .unwrap();
    assert!(
        small.headers().get("content-encoding").is_none(),
        "a small object goes plain"
    );

    let names = server.kubectl_ok(&["get", "flunders", "-o", "name"]);
    assert_eq!(names.lines().count(), 200);
}

/// An unsupported dryRun or fieldValidation on a write is 422 Invalid on the verb's options kind, as kube's
/// ValidateCreateOptions (and Update, Patch) answer, and nothing is written.
#[test]
fn unsupported_write_options_are_invalid_on_their_options_kind() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let body = flunder_v1beta1("opt", "x");
    let created = http.post_json(&format!("{FLUNDERS_V1BETA1}?dryRun=Some"), &body);
    let status = created.assert_status(422, "Invalid");
    assert_eq!(
        str_at(status, "/message"),
        r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Some": supported values: "All""#
    );
    http.get(&format!("{FLUNDERS_V1BETA1}/opt"))
        .assert_status(404, "NotFound");
    http.post_json(FLUNDERS_V1BETA1, &body).expect(201);
    let put = http.put_json(&format!("{FLUNDERS_V1BETA1}/opt?fieldValidation=Loose"), &body);
    let status = put.assert_status(422, "Invalid");
    assert_eq!(status["details"]["kind"], "UpdateOptions", "{status:#}");
    assert_eq!(status["details"]["causes"][0]["field"], "fieldValidation", "{status:#}");
    let patch = http.patch(
        &format!("{FLUNDERS_V1BETA1}/opt?dryRun=Partly"),
        "application/merge-patch+json",
        &serde_json::json!({"metadata": {"labels": {"a": "b"}}}),
    );
    let status = patch.assert_status(422, "Invalid");
    assert_eq!(status["details"]["kind"], "PatchOptions", "{status:#}");
}
