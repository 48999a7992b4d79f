//! The bodies of the coverage-guided fuzz targets: each takes the fuzzer's bytes, feeds them to a
//! decoder of untrusted input and checks what the decoder must guarantee (an error rather than a panic, the status
//! code of that error, a printer's output that parses back to the same value, what a plugin may and may not change).
//!
//! `fuzz/` (cargo-fuzz, libFuzzer, nightly) makes one fuzz target of each; this crate's tests run them on their
//! seed corpora (`fuzz/seeds/<target>/`, which also keeps the inputs of bugs found) in every test run, and on stable
//! Rust, where nightly cannot be had, `fuzz_targets_on_mutated_seeds` runs them on mutations of those seeds
//! ([`mutation`]). The bodies use the server's crates through their public API only.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large, as in the server's crates.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;

pub mod mutation;

use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};

use apimachinery::fields::{default_field_label_conversion, escape_value, unescape_value};
use apimachinery::objectmeta::{validate_object_meta, validate_object_meta_update};
use apimachinery::plugin::{AdmissionRule, AdmissionRules, Operation, PluginError};
use apimachinery::scheme::{json_path_fields, Column, Exports, ScalePaths};
use apimachinery::status::{ApiError, Cause};
use apimachinery::validation::NameRule;
use apimachinery::{parse_bool, FieldSelector, LabelSelector};
use endpoints::negotiate::{decode_object, decode_yaml, encode, negotiate, Encoding, Output};
use endpoints::request_info::{parse_query, RequestInfo};
use endpoints::response::{add_warnings, full};
use endpoints::table::{age, IncludeObject};
use plugin_runtime::bindings::exports::wasm_apiserver::plugin::scheme as wit_scheme;
use plugin_runtime::bindings::wasm_apiserver::plugin::types as wit;
use plugin_runtime::calls::{parse_cells, parse_object};
use plugin_runtime::contract::{admission_rule_from_wit, error_from_wit, field_error_from_wit, scheme_from_wit};
use registry::read::{ReadAt, WatchFrom};
use registry::store::{decode_continue, encode_continue};
use schema::structural;

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and its seed directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("label_selector", label_selector),
    ("field_selector", field_selector),
    ("request_info", request_info),
    ("continue_token", continue_token),
    ("request_body", request_body),
    ("plugin_object", plugin_object),
    ("plugin_results", plugin_results),
    ("plugin_scheme", plugin_scheme),
];

/// An error answered for bad input: a client error with a `Status` that has its code and a message.
fn client_error(e: &ApiError, what: &str) {
    assert!((400..500).contains(&e.code), "{what}: {} for bad input: {e:?}", e.code);
    status_holds(e);
}

/// The `Status` of an error carries its code, reason and message, and one cause per cause.
fn status_holds(e: &ApiError) {
    let status = e.to_status();
    assert_eq!(status["code"], json!(e.code), "{e:?}");
    assert_eq!(status["reason"], json!(e.reason), "{e:?}");
    assert!(!e.message.is_empty(), "an error without a message: {e:?}");
    let causes = status
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    assert_eq!(causes, e.causes.len(), "{e:?}");
    // What the client gets is a JSON document (and YAML, when it asked for YAML).
    for encoding in [Encoding::Json, Encoding::Yaml] {
        let output = Output { encoding, table: None };
        assert!(!encode(output, &status, false).is_empty(), "{encoding:?} of {status}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Selectors.

/// Label sets to match selectors against: none, and the values each requirement names.
fn label_sets(selector: &LabelSelector) -> Vec<BTreeMap<String, String>> {
    let mut sets = vec![BTreeMap::new()];
    let mut first = BTreeMap::new();
    let mut last = BTreeMap::new();
    for r in selector.requirements() {
        first.insert(r.key().to_string(), r.values().first().cloned().unwrap_or_default());
        last.insert(r.key().to_string(), r.values().last().cloned().unwrap_or_default());
    }
    sets.push(first);
    sets.push(last);
    sets
}

/// `labelSelector` strings; and, when the input is JSON, `metav1.LabelSelector` objects. A parsed selector prints as
/// one that parses back to itself; any selector prints as one that matches the same labels, and whose printed form
/// is printed back unchanged.
pub fn label_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = Some((true, LabelSelector::parse(&text)));
    let json = serde_json::from_slice::<Value>(data)
        .ok()
        .map(|v| (false, LabelSelector::from_json(&v)));
    for (from_text, selector) in [parsed, json].into_iter().flatten() {
        match selector {
            Ok(selector) => {
                let printed = selector.to_string();
                let again = LabelSelector::parse(&printed)
                    .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
                let reprinted = again.to_string();
                assert_eq!(LabelSelector::parse(&reprinted).as_ref(), Ok(&again), "{printed:?}");
                if from_text {
                    assert_eq!(reprinted, printed, "{text:?}");
                    assert_eq!(again, selector, "{text:?} printed as {printed:?}");
                }
                // A selector that matches nothing (a null `metav1.LabelSelector`) prints as the empty selector, as
                // kube's does; and an object's `values` may repeat a value, which the text form cannot. Otherwise
                // the printed selector is the same selector.
                for labels in label_sets(&selector).iter().filter(|_| !selector.matches_nothing()) {
                    assert_eq!(
                        again.matches(labels),
                        selector.matches(labels),
                        "{text:?} / {printed:?} on {labels:?}"
                    );
                }
                if let Some(r) = selector.requirements().first() {
                    let _ = selector.requires_exact_match(r.key());
                }
            }
            Err(e) => client_error(&ApiError::bad_request(e.to_string()), "label selector"),
        }
    }
}

/// `fieldSelector` strings: a selector prints as one that parses back to itself and matches the same objects;
/// escaping a value and unescaping it gives the value back.
pub fn field_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        unescape_value(&escape_value(&text)).as_deref(),
        Ok(&*text),
        "escaped as {:?}",
        escape_value(&text)
    );
    match FieldSelector::parse(&text) {
        Ok(selector) => {
            let printed = selector.to_string();
            let again = FieldSelector::parse(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
            // The same terms (in the order of their text, which printing may change) ...
            let terms = |s: &FieldSelector| {
                let mut terms: Vec<String> = s.requirements().iter().map(ToString::to_string).collect();
                terms.sort();
                terms
            };
            assert_eq!(terms(&again), terms(&selector), "{text:?} printed as {printed:?}");
            // ... and printed, the same selector.
            assert_eq!(
                FieldSelector::parse(&again.to_string()).as_ref(),
                Ok(&again),
                "{printed:?}"
            );
            let fields: BTreeMap<&str, &str> = selector
                .requirements()
                .iter()
                .map(|r| (r.field.as_str(), r.value.as_str()))
                .collect();
            let get = |f: &str| fields.get(f).copied();
            assert_eq!(again.matches(get), selector.matches(get), "{text:?}");
            assert_eq!(
                again.matches(|_| None::<&str>),
                selector.matches(|_| None::<&str>),
                "{text:?}"
            );
            for r in selector.requirements() {
                if let Some(v) = selector.requires_exact_match(&r.field) {
                    // What a selector pins is what one-term selectors of it match.
                    assert!(FieldSelector::one_term_equal(r.field.clone(), v).matches(|_| Some(v)));
                }
            }
            match selector.transform(default_field_label_conversion) {
                Ok(t) => assert!(t.requirements().iter().all(|r| r.field.starts_with("metadata."))),
                Err(e) => client_error(&ApiError::bad_request(e), "field label conversion"),
            }
        }
        Err(e) => client_error(
            &ApiError::bad_request(format!("invalid field selector: {e}")),
            "field selector",
        ),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The request line: path, query parameters, headers.

const METHODS: [Method; 8] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::CONNECT,
];

/// A request: a method (the first byte), then `path?query`, then the Accept header on the next line. The request
/// info names what the path does; the query parameters and the Accept header are taken or refused as the handlers
/// take them, refusals being client errors.
pub fn request_info(data: &[u8]) {
    let Some((&m, rest)) = data.split_first() else { return };
    let method = &METHODS[m as usize % METHODS.len()];
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let target = lines.next().unwrap_or("");
    let accept = lines.next();
    let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
    let query = parse_query(query);
    let info = RequestInfo::resolve(method, path, &query);
    match &info.tenant {
        Some(t) => {
            assert!(info.path.starts_with('/'), "{path:?} -> {:?}", info.path);
            assert!(!t.is_empty() && !t.contains('/'), "{path:?}: tenant {t:?}");
        }
        None => assert_eq!(info.path, path),
    }
    if info.resource_request {
        assert!(info.api_prefix == "api" || info.api_prefix == "apis", "{info:?}");
        assert!(!info.version.is_empty() && !info.version.contains('/'), "{info:?}");
        assert!(
            !info.parts.is_empty() && info.parts.iter().all(|p| !p.is_empty() && !p.contains('/')),
            "{info:?}"
        );
        assert_eq!(info.resource, info.parts[0], "{info:?}");
        assert_eq!(info.name.as_ref(), info.parts.get(1), "{info:?}");
        assert_eq!(info.subresource.as_ref(), info.parts.get(2), "{info:?}");
        assert!(
            [
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
                "unknown"
            ]
            .contains(&info.verb),
            "{info:?}"
        );
    } else {
        assert!(
            info.parts.is_empty() && info.name.is_none() && info.resource.is_empty(),
            "{info:?}"
        );
    }
    if let Some(selected) = &info.selected_name {
        assert!(info.name.is_none() && matches!(info.verb, "list" | "watch"), "{info:?}");
        assert!(!selected.is_empty() && !selected.contains('/'), "{info:?}");
    }
    assert_eq!(info.long_running(), info.resource_request && info.verb == "watch");
    let kind = info.metric_kind(method);
    assert_eq!(kind.resource, info.resource);
    let _ = info.authorized_name();

    // The query parameters of reads, as the handlers parse them.
    let q = |k: &str| query.get(k).map(String::as_str);
    let bool_param = |k: &str| -> Result<Option<bool>, ApiError> {
        match q(k).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => parse_bool(v)
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("invalid boolean for {k}: {v:?}"))),
        }
    };
    let check = |r: Result<(), ApiError>, what: &str| {
        if let Err(e) = r {
            client_error(&e, what)
        }
    };
    check(
        ReadAt::for_get(q("resourceVersion")).map(drop),
        "resourceVersion of a get",
    );
    let limit = q("limit").and_then(|l| l.parse::<i64>().ok()).unwrap_or(0).max(0) as usize;
    check(
        ReadAt::for_list(q("resourceVersion"), q("resourceVersionMatch"), limit).map(drop),
        "list options",
    );
    check(
        ReadAt::check_continue(q("resourceVersion"), q("resourceVersionMatch")),
        "continue options",
    );
    if let Some(token) = q("continue").filter(|t| !t.is_empty()) {
        check(decode_continue(token).map(drop), "continue");
    }
    match (bool_param("sendInitialEvents"), bool_param("allowWatchBookmarks")) {
        (Ok(send), Ok(bookmarks)) => check(
            WatchFrom::parse(
                q("resourceVersion"),
                q("resourceVersionMatch"),
                send,
                bookmarks.unwrap_or(false),
            )
            .map(drop),
            "watch options",
        ),
        (Err(e), _) | (_, Err(e)) => client_error(&e, "boolean parameter"),
    }
    if let Some(s) = q("labelSelector") {
        let _ = LabelSelector::parse(s);
    }
    if let Some(s) = q("fieldSelector") {
        let _ = FieldSelector::parse(s);
    }
    check(IncludeObject::parse(q("includeObject")).map(drop), "includeObject");
    for allow_table in [false, true] {
        match negotiate(accept, allow_table) {
            Ok(output) => {
                assert!(allow_table || output.table.is_none(), "{accept:?}");
                assert!(!output.content_type().is_empty());
            }
            Err(e) => {
                assert_eq!(e.code, 406, "{accept:?}: {e:?}");
                status_holds(&e);
            }
        }
    }
}

/// Continue tokens: a token is decoded or refused with 400; what decodes encodes back to a token that decodes the
/// same; any revision and key make a token that decodes to them.
pub fn continue_token(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match decode_continue(&text) {
        Ok((rv, start)) => {
            assert!(rv > 0 || rv == -1, "{text:?} decoded to revision {rv}");
            assert_eq!(decode_continue(&encode_continue(rv, &start)).ok(), Some((rv, start)));
        }
        Err(e) => {
            assert_eq!(e.code, 400, "{e:?}");
            status_holds(&e);
        }
    }
    let rv = data
        .get(..8)
        .map_or(7, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .checked_abs()
        .filter(|rv| *rv > 0)
        .unwrap_or(-1);
    let token = encode_continue(rv, &text);
    assert_eq!(decode_continue(&token).ok(), Some((rv, text.to_string())));
}

// ---------------------------------------------------------------------------------------------------------------
// Request bodies.

/// The Content-Types a request body may come with: the accepted ones, variants of them, and others.
const CONTENT_TYPES: [Option<&str>; 14] = [
    None,
    Some("application/json"),
    Some("application/yaml"),
    Some("application/json; charset=utf-8"),
    Some("APPLICATION/YAML;;;"),
    Some("application/x-yaml"),
    Some("text/yaml"),
    Some("application/vnd.kubernetes.protobuf"),
    Some("application/merge-patch+json"),
    Some("application/json-patch+json"),
    Some("application/strategic-merge-patch+json"),
    Some("application/apply-patch+yaml"),
    Some("text/plain"),
    Some(""),
];

/// The object patches are applied to.
fn current_object() -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f1", "namespace": "default", "labels": {"a": "b"}, "finalizers": ["x"]},
        "spec": {"reference": "r", "list": [1, 2, {"k": "v"}]},
        "status": {}
    })
}

/// A request body: a Content-Type (the first byte), then the body. It decodes to an object (which encodes to
/// JSON and YAML that decode to it again) or is refused with a client error; patches apply or are refused so; a
/// body of DeleteOptions decodes to an object or is refused so.
pub fn request_body(data: &[u8]) {
    let Some((&c, body)) = data.split_first() else { return };
    let content_type = CONTENT_TYPES[c as usize % CONTENT_TYPES.len()];
    match decode_object(content_type, body) {
        Ok(value) => {
            assert!(value.is_object(), "{content_type:?}");
            let json = encode(Output::JSON, &value, false);
            let back: Value = serde_json::from_slice(&json).expect("the server's JSON decodes");
            assert_eq!(back, value, "{content_type:?}: JSON round trip");
            let yaml = encode(
                Output {
                    encoding: Encoding::Yaml,
                    table: None,
                },
                &value,
                false,
            );
            assert!(!yaml.is_empty(), "{value}: no YAML");
            match decode_yaml(&yaml) {
                Ok(back) => assert_eq!(back, value, "{content_type:?}: YAML round trip of {value}"),
                // Only what nests past the YAML parser's depth limit cannot be read back.
                Err(e) => assert!(depth(&value) > 100, "the server's YAML of {value} does not decode: {e}"),
            }
        }
        Err(e) => client_error(&e, "request body"),
    }
    // As for a built-in type, so that strategic merge patches are parsed and applied too.
    match endpoints::resource::parse_patch(content_type, body, true) {
        Ok(apply) => match apply(&current_object()) {
            Ok(_) => {}
            Err(e) => client_error(&e, "patch"),
        },
        Err(e) => client_error(&e, "patch body"),
    }
    match endpoints::resource::delete_options_body(body) {
        Ok(v) => assert!(v.is_object()),
        Err(e) => client_error(&e, "DeleteOptions"),
    }
}

/// How deep arrays and objects nest in a value.
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// What plugins return.

/// The calls that return an object as text.
const OBJECT_CALLS: [&str; 6] = [
    "defaulter.default",
    "create-strategy.prepare-for-create",
    "update-strategy.prepare-for-update",
    "status-strategy.prepare-for-status-update",
    "converter.convert",
    "mutating-admission.admit",
];

/// The schema of the object the plugin was given.
fn flunder_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "reference": {"type": "string", "maxLength": 10},
                "list": {"type": "array", "items": {"x-kubernetes-int-or-string": true}},
                "count": {"type": "integer", "minimum": 0, "default": 1}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

/// The text a plugin's object call returned (which call: the first byte), as the registry takes it: invalid JSON or
/// JSON that is no object is a plugin failure (500); of an object, the plugin may change labels, annotations and
/// the fields under the schema, never the rest of the metadata, the API version or the kind; the result is
/// validated (422 with causes) and encoded.
pub fn plugin_object(data: &[u8]) {
    let Some((&c, rest)) = data.split_first() else { return };
    let call = OBJECT_CALLS[c as usize % OBJECT_CALLS.len()];
    let text = String::from_utf8_lossy(rest);
    let before = current_object();
    let after = match parse_object("p", call, &text) {
        Ok(after) => after,
        Err(e) => {
            assert!(matches!(e, PluginError::Failed { .. }), "{e:?}");
            let e = registry::errors::from_plugin(e, "wardle.example.com", "flunders", "Flunder", "f1");
            assert_eq!(e.code, 500, "{e:?}");
            assert!(e.message.contains("\"p\"") && e.message.contains(call), "{e:?}");
            status_holds(&e);
            return;
        }
    };
    assert!(after.is_object());
    let mut obj = apimachinery::object::keep_host_metadata(&before, after.clone());
    assert_eq!(obj["apiVersion"], before["apiVersion"]);
    assert_eq!(obj["kind"], before["kind"]);
    for (k, v) in before["metadata"].as_object().expect("metadata") {
        if k != "labels" && k != "annotations" {
            assert_eq!(&obj["metadata"][k], v, "metadata.{k} changed by {text:?}");
        }
    }
    for field in ["labels", "annotations"] {
        match after
            .get("metadata")
            .and_then(|m| m.get(field))
            .filter(|v| !v.is_null())
        {
            Some(v) => assert_eq!(&obj["metadata"][field], v),
            None => assert!(obj["metadata"].get(field).is_none()),
        }
    }
    let mut errs = validate_object_meta(&obj["metadata"], true, NameRule::Dns1123Subdomain);
    errs.extend(validate_object_meta_update(&obj["metadata"], &before["metadata"]));
    let schema = flunder_schema();
    if let Some(e) = schema::embedded_type_error(&obj, &schema) {
        assert!(!e.is_empty());
    }
    let unknown = schema::prune(&mut obj, &schema);
    if !unknown.is_empty() {
        assert!(!schema::strict_error(&unknown).is_empty());
    }
    structural::prune_nulls(&schema, &mut obj);
    structural::default(&schema, &mut obj);
    errs.extend(structural::validate_update(&schema, &obj, Some(&before)));
    if !errs.is_empty() {
        let n = errs.len();
        let causes: Vec<Cause> = errs.into_iter().map(Cause::from).collect();
        let e = ApiError::invalid("wardle.example.com", "Flunder", "f1", causes);
        assert_eq!((e.code, e.causes.len()), (422, n));
        status_holds(&e);
    }
    structural::canonical_numbers(&mut obj);
    let once = obj.clone();
    structural::canonical_numbers(&mut obj);
    assert_eq!(obj, once, "canonical numbers are canonical");
    for encoding in [Encoding::Json, Encoding::Yaml] {
        assert!(!encode(Output { encoding, table: None }, &obj, true).is_empty());
    }
    if let Ok(cells) = parse_cells("p", "table-convertor.row", &text) {
        cells_hold(&cells);
    }
}

/// A string of a JSON value: the string itself, else its JSON text (nothing for null).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Strings of a JSON value: an array's items, else the value as one string (none for null).
fn texts_of(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(text_of).collect(),
        Value::Null => Vec::new(),
        other => vec![text_of(other)],
    }
}

fn number_of(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

fn bool_of(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| number_of(v) != 0)
}

fn field_error_of(v: &Value) -> wit::FieldError {
    use wit::FieldErrorKind as K;
    let kinds = [
        K::Required,
        K::Invalid,
        K::NotSupported,
        K::Duplicate,
        K::Forbidden,
        K::TooLong,
        K::TooMany,
        K::Internal,
    ];
    wit::FieldError {
        kind: kinds[number_of(&v["kind"]).unsigned_abs() as usize % kinds.len()],
        field: text_of(&v["field"]),
        detail: text_of(&v["detail"]),
    }
}

fn field_errors_of(v: &Value) -> Vec<wit::FieldError> {
    match v {
        Value::Array(items) => items.iter().map(field_error_of).collect(),
        Value::Null => Vec::new(),
        other => vec![field_error_of(other)],
    }
}

fn operation_of(v: &Value) -> wit::Operation {
    [wit::Operation::Create, wit::Operation::Update, wit::Operation::Delete][number_of(v).unsigned_abs() as usize % 3]
}

/// Table cells as the registry shows them: a date column's cells become ages, whatever their text.
fn cells_hold(cells: &[Value]) {
    for cell in cells {
        if let Some(ts) = cell.as_str() {
            let shown = age(ts);
            assert!(!shown.is_empty(), "{ts:?}");
        }
    }
}

/// The structured results of plugin calls, in one JSON document whose members are each optional and may have any
/// type: `validation` (`errors`, `warnings`), `error` (a WIT error: `case`, `text`, `errors`), `attrs` (get-attrs'
/// pairs) with a `selector`, `cells` (a row, as text or JSON), `rules` (admission rules) and a `request`
/// to match them with, `paths` (scale paths).
pub fn plugin_results(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // Validation: errors are a 422 with one cause each; warnings become one Warning header each.
    let validation = &v["validation"];
    let errors = field_errors_of(&validation["errors"]);
    let warnings = texts_of(&validation["warnings"]);
    if !errors.is_empty() {
        let causes: Vec<Cause> = errors.iter().cloned().map(|e| field_error_from_wit(e).into()).collect();
        assert_eq!(causes.len(), errors.len());
        for (cause, error) in causes.iter().zip(&errors) {
            assert!(
                cause.reason.starts_with("FieldValue") || cause.reason == "InternalError",
                "{cause:?}"
            );
            assert!(!cause.message.is_empty() && cause.field == error.field, "{cause:?}");
        }
        let e = ApiError::invalid("wardle.example.com", "Flunder", &text_of(&v["name"]), causes);
        assert_eq!(e.code, 422);
        status_holds(&e);
    }
    let mut resp = Response::new(full(""));
    add_warnings(&mut resp, &warnings);
    let headers: Vec<_> = resp.headers().get_all("Warning").iter().collect();
    assert_eq!(
        headers.len(),
        warnings.len(),
        "warnings {warnings:?} gave headers {headers:?}"
    );
    // A WIT error: a Status with the code of its case.
    if let Some(error) = v.get("error") {
        let text = text_of(&error["text"]);
        let (e, code) = match number_of(&error["case"]).unsigned_abs() % 6 {
            0 => (wit::Error::Invalid(field_errors_of(&error["errors"])), 422),
            1 => (wit::Error::Forbidden(text), 403),
            2 => (wit::Error::BadRequest(text), 400),
            3 => (wit::Error::Conflict(text), 409),
            4 => (wit::Error::NotFound(text), 404),
            _ => (wit::Error::Internal(text), 500),
        };
        let e = registry::errors::from_plugin(
            error_from_wit("p", "create-strategy.validate", e),
            "wardle.example.com",
            "flunders",
            "Flunder",
            "f1",
        );
        assert_eq!(e.code, code, "{e:?}");
        if !e.message.is_empty() {
            status_holds(&e);
        }
        let _ = StatusCode::from_u16(e.code).expect("a valid status code");
    }
    // get-attrs: a field selector matches on them; a pair's own one-term selector matches.
    let attrs: Vec<(String, String)> = match &v["attrs"] {
        Value::Array(pairs) => pairs.iter().map(|p| (text_of(&p[0]), text_of(&p[1]))).collect(),
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), text_of(v))).collect(),
        _ => Vec::new(),
    };
    let get = |field: &str| attrs.iter().find(|(k, _)| k == field).map(|(_, v)| v.clone());
    if let Ok(selector) = FieldSelector::parse(&text_of(&v["selector"])) {
        let _ = selector.matches(get);
    }
    for (k, _) in &attrs {
        let value = get(k).expect("found");
        assert!(
            FieldSelector::one_term_equal(k.clone(), value).matches(get),
            "{k:?} in {attrs:?}"
        );
    }
    // Table rows: as text, or as the JSON value itself.
    match &v["cells"] {
        Value::String(text) => {
            if let Ok(cells) = parse_cells("p", "table-convertor.row", text) {
                cells_hold(&cells)
            }
        }
        Value::Array(cells) => cells_hold(cells),
        _ => {}
    }
    // Admission rules: a request matches a rule of its own group, resource and operation, and `*` matches any.
    let rules: Vec<AdmissionRule> = match &v["rules"] {
        Value::Array(rules) => rules
            .iter()
            .map(|r| {
                admission_rule_from_wit(wit::AdmissionRule {
                    group: text_of(&r["group"]),
                    resources: texts_of(&r["resources"]),
                    operations: match &r["operations"] {
                        Value::Array(ops) => ops.iter().map(operation_of).collect(),
                        other => vec![operation_of(other)],
                    },
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    let request = &v["request"];
    let (group, resource, sub) = (
        text_of(&request["group"]),
        text_of(&request["resource"]),
        text_of(&request["subresource"]),
    );
    let op = [Operation::Create, Operation::Update, Operation::Delete]
        [number_of(&request["operation"]).unsigned_abs() as usize % 3];
    let _ = AdmissionRules(rules.clone()).matches(&group, &resource, &sub, op);
    let own = AdmissionRule {
        group: group.clone(),
        resources: vec![if sub.is_empty() {
            resource.clone()
        } else {
            format!("{resource}/{sub}")
        }],
        operations: vec![op],
    };
    if !resource.contains('/') && !sub.contains('/') {
        assert!(AdmissionRules(vec![own]).matches(&group, &resource, &sub, op));
    }
    let any = AdmissionRule {
        group: "*".into(),
        resources: vec!["*/*".into(), "*".into()],
        operations: vec![op],
    };
    assert!(AdmissionRules(vec![any]).matches(&group, &resource, &sub, op));
    // Scale paths: checked, and those that pass are simple paths under `.spec` or `.status`.
    if let Some(p) = v.get("paths") {
        let paths = ScalePaths {
            spec_replicas: text_of(&p["spec"]),
            status_replicas: text_of(&p["status"]),
            label_selector: p.get("selector").map(text_of),
        };
        if paths.problem().is_none() {
            let fields = json_path_fields(&paths.spec_replicas).expect("a simple path");
            assert!(fields.len() >= 2 && fields[0] == "spec", "{paths:?}");
        }
    }
}

/// A plugin's `scheme.info()` (with the interfaces it exports), in JSON whose members may be missing or of any
/// type: it is taken or refused with a message; what is taken has a group, resources of one storage version and
/// object schemas, and makes discovery documents and OpenAPI documents for every version; an example object is
/// validated and defaulted by each version's schema.
pub fn plugin_scheme(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let bits = number_of(&input["exports"]).unsigned_abs();
    let bit = |i: u32| bits & (1 << i) != 0;
    let exports = Exports {
        create: bit(0),
        update: bit(1),
        delete: bit(2),
        lister: bit(3),
        table: bit(4),
        converter: bit(5),
        defaulter: bit(6),
        mutating: bit(7),
        validating: bit(8),
        status: bit(9),
        scaler: bit(10),
        create_pipeline: bit(11),
    };
    let resources = match &input["resources"] {
        Value::Array(rs) => rs.as_slice(),
        _ => &[],
    };
    let info = wit_scheme::PluginInfo {
        group: text_of(&input["group"]),
        resources: resources
            .iter()
            .map(|r| wit_scheme::Resource {
                kind: text_of(&r["kind"]),
                plural: text_of(&r["plural"]),
                singular: text_of(&r["singular"]),
                short_names: texts_of(&r["shortNames"]),
                categories: texts_of(&r["categories"]),
                scope: if bool_of(&r["namespaced"]) {
                    wit_scheme::Scope::Namespaced
                } else {
                    wit_scheme::Scope::Cluster
                },
                versions: match &r["versions"] {
                    Value::Array(vs) => vs
                        .iter()
                        .map(|v| wit_scheme::Version {
                            name: text_of(&v["name"]),
                            served: bool_of(&v["served"]),
                            storage: bool_of(&v["storage"]),
                            deprecated: bool_of(&v["deprecated"]),
                            deprecation_warning: v.get("warning").map(text_of),
                            // The schema is text: a JSON value's own text, or a string as it is.
                            schema: match &v["schema"] {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            },
                        })
                        .collect(),
                    _ => Vec::new(),
                },
            })
            .collect(),
        reads: texts_of(&input["reads"])
            .into_iter()
            .map(|r| {
                let (group, resource) = r.split_once('/').unwrap_or(("", &r));
                wit_scheme::GroupResource {
                    group: group.into(),
                    resource: resource.into(),
                }
            })
            .collect(),
    };
    let mut group = match scheme_from_wit(info, &exports) {
        Ok(group) => group,
        Err(e) => {
            assert!(e.to_string().starts_with("scheme.info: "), "{e}");
            return;
        }
    };
    assert!(!group.group.is_empty() && !group.resources.is_empty());
    for r in &mut group.resources {
        let r = std::sync::Arc::make_mut(r);
        assert!(!r.kind.is_empty() && !r.plural.is_empty() && !r.singular.is_empty());
        assert_eq!(r.versions.iter().filter(|v| v.storage).count(), 1, "{}", r.plural);
        assert!(r.versions.len() == 1 || exports.converter);
        assert_eq!(r.verbs, exports.verbs());
        assert!(r.served_version(r.storage_version()).is_none_or(|v| v.storage));
        for v in &r.versions {
            assert_eq!(v.schema["type"], "object", "{}", v.name);
        }
        if let Value::Array(cols) = &input["columns"] {
            r.set_columns(
                cols.iter()
                    .map(|c| Column {
                        shows_age: false,
                        name: text_of(&c["name"]),
                        type_: text_of(&c["type"]),
                        format: text_of(&c["format"]),
                        description: text_of(&c["description"]),
                        priority: number_of(&c["priority"]) as i32,
                    })
                    .collect(),
            );
        }
    }
    let groups = std::slice::from_ref(&group);
    let _ = endpoints::discovery::api_group_list(groups).to_string();
    let _ = endpoints::discovery::api_group(&group).to_string();
    let _ = endpoints::discovery::aggregated_discovery(groups).to_string();
    let _ = endpoints::openapi::openapi_v3_root(groups).to_string();
    let _ = endpoints::openapi::openapi_v2(groups).to_string();
    let example = input.get("example").cloned().unwrap_or_else(|| json!({"spec": {}}));
    for r in &group.resources {
        for version in r.versions.iter().filter(|v| v.served) {
            assert!(
                endpoints::discovery::api_resource_list(&group, &version.name).is_some(),
                "no resource list for the served version {}",
                version.name
            );
            if let Some((doc, etag)) = endpoints::openapi::openapi_v3_group_version(&group, &version.name) {
                assert!(!etag.is_empty());
                let _ = doc.to_string();
            }
            let mut obj = example.clone();
            if !obj.is_object() {
                continue;
            }
            structural::prune_nulls(&version.schema, &mut obj);
            structural::default(&version.schema, &mut obj);
            let _ = schema::prune(&mut obj, &version.schema);
            let _ = schema::embedded_type_error(&obj, &version.schema);
            for e in structural::validate(&version.schema, &obj) {
                assert!(!e.message.is_empty(), "{e:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests;
