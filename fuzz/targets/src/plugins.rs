//! What plugins return: objects, call results and schemes, as the plugin runtime reads them at its edge.

use crate::body::current_object;
use crate::status_holds;
use apimachinery::objectmeta::{validate_object_meta, validate_object_meta_update};
use apimachinery::plugin::{AdmissionRule, AdmissionRules, Operation, PluginError};
use apimachinery::scheme::{json_path_fields, Column, Exports, ScalePaths};
use apimachinery::status::{ApiError, Cause};
use apimachinery::validation::NameRule;
use apimachinery::FieldSelector;
use endpoints::negotiate::{encode, Encoding, Output};
use endpoints::response::{add_warnings, full};
use endpoints::table::age;
use hyper::{Response, StatusCode};
use plugin_runtime::bindings::exports::wasm_apiserver::plugin::scheme as wit_scheme;
use plugin_runtime::bindings::wasm_apiserver::plugin::types as wit;
use plugin_runtime::calls::{parse_cells, parse_object};
use plugin_runtime::contract::{admission_rule_from_wit, error_from_wit, field_error_from_wit, scheme_from_wit};
use schema::structural;
use serde_json::{json, Value};

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
            let e = e.into_api_error("wardle.example.com", "flunders", "Flunder", "f1");
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
        let e = error_from_wit("p", "create-strategy.validate", e).into_api_error(
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
