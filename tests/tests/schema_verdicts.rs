//! Schema enforcement compared with a live kube-apiserver 1.37: the same CustomResourceDefinitions are
//! served by kube-apiserver (created through its API) and by wasm-apiserver (CRD files in its plugin directory), the
//! same table of objects is created (and some updated) on both, and the verdicts must agree: accepted or not, the
//! HTTP code, the Status reason, the message and the multiset of causes (reason, field, message), the warnings, and
//! for an accepted object the object stored (after pruning and defaulting), less the metadata that legitimately
//! differs (uid, resourceVersion, creationTimestamp, generation, managedFields times).
//!
//! Every difference fails the test, with a readable diff per row, unless it is in [`KNOWN_DIFFERENCES`].
//!
//! kube-apiserver comes from `KUBE_APISERVER` (`scripts/build-kube-apiserver.sh`); without it the test is skipped.

// The CRDs are large `json!` literals.
#![recursion_limit = "512"]

mod schema_verdicts {
    pub mod crds;
    pub mod rows;
}

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use e2e::{kube_apiserver_binary, wait_until, Etcd, Http, KubeApiserver, Server};
use reqwest::Method;
use serde_json::{json, Value};

use schema_verdicts::crds::{self, group};
use schema_verdicts::rows::{ratcheting_rows, rows, Row};

/// Differences accepted on purpose: (row label, the aspects that differ, why). Each entry is a known gap, to be
/// closed; keep this list as short as possible.
const KNOWN_DIFFERENCES: &[(&str, &[&str], &str)] = &[
    // kube records warnings in the request's context and sends them with any answer; wasm-apiserver's store
    // returns them with a written object only, so an error answer lacks the unknown-field warnings of its body.
    (
        r#"arr = {"0":"a"}"#,
        &["warnings"],
        "warnings are not sent with an error answer",
    ),
    (
        r#"embeddedTyped = {"apiVersion":"v1","kind":"K","other":1,"spec":{"x":"1"}}"#,
        &["warnings"],
        "warnings are not sent with an error answer",
    ),
    (
        "update adds a field that fails and one that prunes",
        &["warnings"],
        "warnings are not sent with an error answer",
    ),
    // kube's field manager sees the decoded float 1.0 and the int 1 as one set item; wasm-apiserver's keeps both.
    (
        "intSet = [1,1.0]",
        &["managedFields"],
        "managedFields keep 1.0 beside 1 in a set",
    ),
];

/// How many requests each server gets at once.
const PARALLELISM: usize = 8;

/// What a server answered to one row, reduced to what must agree.
#[derive(Debug, Default, Clone, PartialEq)]
struct Verdict {
    /// The HTTP status code (of the update, for a row with one).
    code: u16,
    /// The Status reason, for a failure.
    reason: String,
    /// The Status message with each cause's `field: message` taken out (kube lists them in Go's map order).
    message: String,
    /// The causes as `reason | field | message`, sorted.
    causes: Vec<String>,
    /// The `Warning` headers, sorted.
    warnings: Vec<String>,
    /// The object as stored (read back with GET), less the metadata that differs between servers and less
    /// `managedFields`.
    object: Value,
    /// The stored object's `managedFields`, less their times.
    managed_fields: Value,
}

/// Sends a JSON request and returns the status, body and warnings.
fn send(http: &Http, method: Method, path: &str, body: &Value) -> (u16, Value, Vec<String>) {
    let response = http
        .client()
        .request(method.clone(), http.url(path))
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .header("User-Agent", "schema-verdicts")
        .body(body.to_string())
        .send()
        .unwrap_or_else(|e| panic!("{method} {path}: {e:#}"));
    let status = response.status().as_u16();
    let mut warnings: Vec<String> = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    warnings.sort();
    let bytes = response.bytes().unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(&bytes)}));
    (status, json, warnings)
}

/// The object less what legitimately differs between two servers, and its `managedFields` less their times.
fn normalize_object(mut obj: Value) -> (Value, Value) {
    let mut managed = Value::Null;
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            meta.remove(field);
        }
        if let Some(mut entries) = meta.remove("managedFields") {
            for entry in entries.as_array_mut().into_iter().flatten() {
                if let Some(entry) = entry.as_object_mut() {
                    entry.remove("time");
                }
            }
            managed = entries;
        }
    }
    (obj, managed)
}

/// Reduces a response to a verdict; `get` reads the object back when it was accepted.
fn verdict(status: u16, body: &Value, warnings: Vec<String>, get: impl FnOnce() -> Value) -> Verdict {
    if (200..300).contains(&status) {
        let (object, managed_fields) = normalize_object(get());
        return Verdict {
            code: status,
            warnings,
            object,
            managed_fields,
            ..Verdict::default()
        };
    }
    let raw_causes: Vec<&Value> = body["details"]["causes"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let mut message = body["message"].as_str().unwrap_or("").to_owned();
    // Take each cause's rendering out of the message, longest first so that none is part of another.
    let mut rendered: Vec<String> = raw_causes
        .iter()
        .map(|c| {
            let (field, text) = (c["field"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or(""));
            if field.is_empty() {
                text.to_owned()
            } else {
                format!("{field}: {text}")
            }
        })
        .collect();
    rendered.sort_by_key(|r| std::cmp::Reverse(r.len()));
    for r in &rendered {
        if !r.is_empty() {
            message = message.replacen(r.as_str(), "<cause>", 1);
        }
    }
    let mut causes: Vec<String> = raw_causes
        .iter()
        .map(|c| {
            format!(
                "{} | {} | {}",
                c["reason"].as_str().unwrap_or(""),
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    causes.sort();
    Verdict {
        code: status,
        reason: body["reason"].as_str().unwrap_or("").to_owned(),
        message,
        causes,
        warnings,
        ..Verdict::default()
    }
}

/// A row's collection URL and kind.
fn collection_of(row: &Row) -> (String, String, &'static str) {
    let group = group(row.plural);
    let kind = if row.plural == "keywords" { "Keyword" } else { "Rule" };
    (format!("/apis/{group}/v1/{}", row.plural), format!("{group}/v1"), kind)
}

/// POSTs a row's object; returns the status, body and warnings.
fn create(http: &Http, row: &Row, name: &str) -> (u16, Value, Vec<String>) {
    let (collection, api_version, kind) = collection_of(row);
    let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    for (k, v) in row.fields.as_object().expect("fields are an object") {
        obj[k] = v.clone();
    }
    send(http, Method::POST, &collection, &obj)
}

/// PUTs a row's update over the object at `resource_version` and returns the verdict.
fn update(http: &Http, row: &Row, name: &str, resource_version: &Value) -> Verdict {
    let (collection, api_version, kind) = collection_of(row);
    let mut updated = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "resourceVersion": resource_version}});
    for (k, v) in row
        .update
        .as_ref()
        .expect("a row with an update")
        .as_object()
        .expect("an object")
    {
        updated[k] = v.clone();
    }
    let path = format!("{collection}/{name}");
    let (status, body, warnings) = send(http, Method::PUT, &path, &updated);
    verdict(status, &body, warnings, || {
        send(http, Method::GET, &path, &Value::Null).1
    })
}

/// PUTs a row's update over the object stored under `name` and returns the verdict.
fn update_stored(http: &Http, row: &Row, name: &str) -> Result<Verdict, String> {
    let (collection, _, _) = collection_of(row);
    let stored = send(http, Method::GET, &format!("{collection}/{name}"), &Value::Null).1;
    Ok(update(http, row, name, &stored["metadata"]["resourceVersion"]))
}

/// Creates (and updates) one row's object on one server and returns the verdict.
fn run_row(http: &Http, row: &Row, name: &str) -> Result<Verdict, String> {
    let (collection, _, _) = collection_of(row);
    let (status, body, warnings) = create(http, row, name);
    if row.update.is_none() {
        let get = || send(http, Method::GET, &format!("{collection}/{name}"), &Value::Null).1;
        return Ok(verdict(status, &body, warnings, get));
    }
    if status != 201 {
        return Err(format!("the object to update was not created: {status} {body}"));
    }
    Ok(update(http, row, name, &body["metadata"]["resourceVersion"]))
}

/// Runs `step` for every row on one server, `PARALLELISM` at a time, with the object names `<prefix><index>`, and
/// returns the results in row order.
fn run_all<T: Send>(http: &Http, rows: &[Row], prefix: &str, step: impl Fn(&Http, &Row, &str) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new((0..rows.len()).map(|_| None).collect::<Vec<Option<T>>>());
    std::thread::scope(|scope| {
        for _ in 0..PARALLELISM {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(row) = rows.get(i) else { break };
                let result = step(http, row, &format!("{prefix}{i:03}"));
                results.lock().unwrap()[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every row ran"))
        .collect()
}

/// The aspects in which two verdicts differ, each with both sides, for the report.
fn differences(kube: &Verdict, ours: &Verdict) -> Vec<(&'static str, String)> {
    let mut diffs = Vec::new();
    let mut compare = |aspect: &'static str, a: String, b: String| {
        if a != b {
            diffs.push((aspect, format!("    kube: {a}\n    ours: {b}")));
        }
    };
    compare("code", kube.code.to_string(), ours.code.to_string());
    compare("reason", kube.reason.clone(), ours.reason.clone());
    compare("message", kube.message.clone(), ours.message.clone());
    compare(
        "causes",
        kube.causes.join("\n          "),
        ours.causes.join("\n          "),
    );
    compare("warnings", kube.warnings.join("; "), ours.warnings.join("; "));
    if kube.object != ours.object {
        diffs.push(("object", format!("    {}", object_diff(&kube.object, &ours.object))));
    }
    if kube.managed_fields != ours.managed_fields {
        let diff = object_diff(&kube.managed_fields, &ours.managed_fields);
        diffs.push(("managedFields", format!("    {diff}")));
    }
    diffs
}

/// The paths where two JSON values differ, with both values (`a` is kube's).
fn object_diff(a: &Value, b: &Value) -> String {
    let mut out = Vec::new();
    fn walk(a: Option<&Value>, b: Option<&Value>, path: String, out: &mut Vec<String>) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    walk(x.get(k), y.get(k), format!("{path}.{k}"), out);
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(Some(p), Some(q), format!("{path}[{i}]"), out);
                }
            }
            (a, b) if a != b => {
                let show = |v: Option<&Value>| v.map_or("(absent)".to_owned(), Value::to_string);
                out.push(format!("{path}: kube {} / ours {}", show(a), show(b)));
            }
            _ => {}
        }
    }
    walk(Some(a), Some(b), String::new(), &mut out);
    out.join("\n    ")
}

/// Creates the CRD on kube-apiserver and waits until its resource is served.
fn install_on_kube(http: &Http, crd: &Value) {
    let (status, body, _) = send(
        http,
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    );
    assert_eq!(status, 201, "kube-apiserver refused the CRD: {body:#}");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
    let served = wait_until(Duration::from_secs(60), || {
        send(
            http,
            Method::GET,
            &format!("/apis/{}/v1/{plural}", group(plural)),
            &Value::Null,
        )
        .0 == 200
    });
    assert!(served, "kube-apiserver does not serve {plural}");
}

/// Writes the CRD into wasm-apiserver's plugin directory and waits until its resource is served.
fn install_on_ours(server: &Server, crd: &Value) {
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
    std::fs::write(server.plugin_dir().join(format!("{plural}.json")), crd.to_string()).expect("write the CRD");
    let served = wait_until(Duration::from_secs(60), || {
        server
            .http()
            .get(&format!("/apis/{}/v1/{plural}", group(plural)))
            .status
            == 200
    });
    assert!(
        served,
        "wasm-apiserver does not serve {plural}:\n{}",
        server.log_tail(40)
    );
}

/// Tightens the `Keyword` schema on both servers (see `crds::tighten`) and waits until each enforces it: a dry-run
/// create of `range: 8` is refused.
fn tighten_keywords(kube: &Http, ours: &Server) {
    let path = format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/keywords.{}",
        group("keywords")
    );
    let (status, mut crd, _) = send(kube, Method::GET, &path, &Value::Null);
    assert_eq!(status, 200, "{crd:#}");
    crds::tighten(&mut crd);
    let (status, body, _) = send(kube, Method::PUT, &path, &crd);
    assert_eq!(status, 200, "kube-apiserver refused the tightened CRD: {body:#}");
    let mut ours_crd = crds::keywords();
    crds::tighten(&mut ours_crd);
    std::fs::write(ours.plugin_dir().join("keywords.json"), ours_crd.to_string()).expect("rewrite the CRD");
    let probe = Row {
        label: String::new(),
        plural: "keywords",
        fields: json!({"spec": {"range": 8}}),
        update: None,
    };
    let (collection, api_version, kind) = collection_of(&probe);
    let body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "probe"}, "spec": {"range": 8}});
    for http in [kube, ours.http()] {
        let enforced = wait_until(Duration::from_secs(60), || {
            send(http, Method::POST, &format!("{collection}?dryRun=All"), &body).0 == 422
        });
        assert!(enforced, "{} does not enforce the tightened schema", http.base());
    }
}

#[test]
fn schema_verdicts_match_kube_apiserver() {
    let Some(binary) = kube_apiserver_binary() else {
        return;
    };
    let started = Instant::now();
    // Both servers start at once; kube-apiserver's start-up dominates.
    let (kube, ours) = std::thread::scope(|scope| {
        let ours = scope.spawn(|| Server::start(&[]));
        let etcd = Etcd::start().unwrap_or_else(|e| panic!("cannot start etcd: {e:#}"));
        let kube = KubeApiserver::start(&binary, &etcd).unwrap_or_else(|e| panic!("{e:#}"));
        ((etcd, kube), ours.join().expect("wasm-apiserver start"))
    });
    let (_etcd, kube) = kube;
    let kube_http = kube.admin_http();
    for crd in [crds::keywords(), crds::rules()] {
        install_on_kube(&kube_http, &crd);
        install_on_ours(&ours, &crd);
    }
    eprintln!("servers up and CRDs served after {:?}", started.elapsed());

    let mut rows = rows();
    let (mut kube_verdicts, mut our_verdicts) = std::thread::scope(|scope| {
        let theirs = scope.spawn(|| run_all(&kube_http, &rows, "r", run_row));
        let mine = run_all(ours.http(), &rows, "r", run_row);
        (theirs.join().expect("kube rows"), mine)
    });
    eprintln!("{} rows run on both after {:?}", rows.len(), started.elapsed());

    // Ratcheting: objects created under the first schema are updated under a tightened one.
    let ratcheting = ratcheting_rows();
    for http in [&kube_http, ours.http()] {
        let created = run_all(http, &ratcheting, "t", |h, r, n| create(h, r, n).0);
        assert!(
            created.iter().all(|c| *c == 201),
            "ratcheting rows not created on {}: {created:?}",
            http.base()
        );
    }
    tighten_keywords(&kube_http, &ours);
    let updated = std::thread::scope(|scope| {
        let theirs = scope.spawn(|| run_all(&kube_http, &ratcheting, "t", update_stored));
        let mine = run_all(ours.http(), &ratcheting, "t", update_stored);
        (theirs.join().expect("kube ratcheting rows"), mine)
    });
    kube_verdicts.extend(updated.0);
    our_verdicts.extend(updated.1);
    rows.extend(ratcheting);
    eprintln!("ratcheting rows run on both after {:?}", started.elapsed());

    let mut report = Vec::new();
    let mut allowed_used = BTreeMap::new();
    let mut agreed = 0;
    for (i, row) in rows.iter().enumerate() {
        let (kube, ours) = match (&kube_verdicts[i], &our_verdicts[i]) {
            (Ok(k), Ok(o)) => (k, o),
            (k, o) => {
                report.push(format!(
                    "row r{i:03} {}: could not run:\n    kube: {k:?}\n    ours: {o:?}",
                    row.label
                ));
                continue;
            }
        };
        let diffs: Vec<_> = differences(kube, ours)
            .into_iter()
            .filter(|(aspect, _)| {
                let known = KNOWN_DIFFERENCES
                    .iter()
                    .any(|(label, aspects, _)| *label == row.label && aspects.contains(aspect));
                if known {
                    *allowed_used.entry(row.label.clone()).or_insert(0) += 1;
                }
                !known
            })
            .collect();
        if diffs.is_empty() {
            agreed += 1;
            continue;
        }
        let mut text = format!("row r{i:03} {} ({}):", row.label, row.fields);
        for (aspect, diff) in diffs {
            text.push_str(&format!("\n  {aspect}:\n{diff}"));
        }
        report.push(text);
    }
    let unused: Vec<_> = KNOWN_DIFFERENCES
        .iter()
        .filter(|(label, _, _)| !allowed_used.contains_key(*label))
        .collect();
    eprintln!(
        "{} of {} rows agree exactly, {} more differ only as the allow-list says; took {:?}",
        agreed - allowed_used.len(),
        rows.len(),
        allowed_used.len(),
        started.elapsed()
    );
    assert!(
        report.is_empty() && unused.is_empty(),
        "{} rows differ from kube-apiserver:\n\n{}\n\nallow-list entries that no longer match: {unused:?}",
        report.len(),
        report.join("\n\n")
    );
}
