//! A CRD version's `additionalPrinterColumns`, as kube's CRD table convertor serves them
//! (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`): checked as kube's CRD validation checks
//! them, each `jsonPath` evaluated with kube's JSONPath ([`apimachinery::jsonpath`]) and its first result
//! formatted by the column's type.

use anyhow::{anyhow, bail};
use serde_json::{json, Value};

use apimachinery::jsonpath::{self, JsonPath};
use apimachinery::scheme::Column;

/// The column types kube accepts.
const TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];

/// The column formats kube accepts.
const FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// What kube describes a column without a description as.
const DEFAULT_DESCRIPTION: &str = "Custom resource definition column (in JSONPath format): ";

/// One printer column: its definition and its parsed path.
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    /// The column as a table shows it.
    pub column: Column,
    /// The parsed `jsonPath`.
    pub path: JsonPath,
}

impl PrinterColumn {
    /// Reads and checks one `additionalPrinterColumns` entry (`at` names it in errors, such as
    /// `spec.versions[0].additionalPrinterColumns[1]`).
    pub fn parse(c: &Value, at: &str) -> anyhow::Result<PrinterColumn> {
        let field = |name: &str| c.get(name).and_then(Value::as_str).unwrap_or("");
        let (name, type_, format, json_path) = (field("name"), field("type"), field("format"), field("jsonPath"));
        if name.is_empty() {
            bail!("{at}.name: Required value");
        }
        if !TYPES.contains(&type_) {
            bail!(
                "{at}.type: Unsupported value: {type_:?}: must be one of {}",
                TYPES.join(",")
            );
        }
        if !format.is_empty() && !FORMATS.contains(&format) {
            bail!(
                "{at}.format: Unsupported value: {format:?}: must be one of {}",
                FORMATS.join(",")
            );
        }
        if json_path.is_empty() {
            bail!("{at}.jsonPath: Required value");
        }
        if !json_path.starts_with('.') {
            bail!("{at}.jsonPath: Invalid value: {json_path:?}: must be a simple json path starting with .");
        }
        // kube's table convertor cannot use a path it cannot parse (it falls back to Name and Age): refused here.
        let path = JsonPath::column(json_path)
            .map_err(|e| anyhow!("{at}.jsonPath: Invalid value: {json_path:?}: unrecognized column definition: {e}"))?;
        let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
        let priority = i32::try_from(priority).map_err(|_| anyhow!("{at}.priority: Invalid value: {priority}"))?;
        let description = match field("description") {
            "" => format!("{DEFAULT_DESCRIPTION}{json_path}"),
            d => d.to_owned(),
        };
        Ok(PrinterColumn {
            column: Column {
                name: name.to_owned(),
                type_: type_.to_owned(),
                format: format.to_owned(),
                description,
                priority,
                // kube shows every date column as an age; the table computes it when served.
                shows_age: type_ == "date",
            },
            path,
        })
    }

    /// The column kube gives a version without printer columns: the object's age.
    pub fn default_age() -> PrinterColumn {
        PrinterColumn {
            column: crate::age_column(),
            path: JsonPath::column(".metadata.creationTimestamp").expect("a valid path"),
        }
    }

    /// The cell of an object: the first value the path finds, formatted by the column's type; `null` when the path
    /// finds nothing (or fails, as an index out of range does). A `date` cell is left as its timestamp (the table
    /// turns it into an age when served).
    pub fn cell(&self, obj: &Value) -> Value {
        let Some(value) = self.path.first(obj) else {
            return Value::Null;
        };
        if self.column.type_ == "string" {
            return Value::String(jsonpath::text(&value));
        }
        cell_for_json_value(&self.column.type_, value)
    }
}

/// A value in a column of a type other than `string`, as kube's `cellForJSONValue`: an `integer` column truncates a
/// number, a `number` column takes integers, and a value of the wrong type is an empty cell.
fn cell_for_json_value(type_: &str, value: Value) -> Value {
    match (type_, &value) {
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            // Go's int64(float64) truncates toward zero.
            None => n.as_f64().map_or(Value::Null, |f| json!(f.trunc() as i64)),
        },
        ("number", Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(0.0);
            // Go writes a whole float64 without a fraction: 3, not 3.0.
            if f.fract() == 0.0 && f.abs() < 9e15 {
                json!(f as i64)
            } else {
                json!(f)
            }
        }
        ("boolean", Value::Bool(_)) | ("date", Value::String(_)) => value,
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(type_: &str, path: &str) -> PrinterColumn {
        PrinterColumn::parse(&json!({"name": "C", "type": type_, "jsonPath": path}), "c").expect("valid")
    }

    #[test]
    fn cells_are_formatted_as_kubes_crd_tables_format_them() {
        let obj = json!({
            "metadata": {"creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"b": "2", "a": "1"}},
            "spec": {"replicas": 3, "ratio": 2.75, "ports": [80, 443], "enabled": true, "nothing": null,
                "text": "7"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}
        });
        let cell = |type_: &str, path: &str| column(type_, path).cell(&obj);
        assert_eq!(cell("integer", ".spec.replicas"), json!(3));
        // An integer column holding a float truncates it; a number column holding an integer keeps it.
        assert_eq!(cell("integer", ".spec.ratio"), json!(2));
        assert_eq!(cell("number", ".spec.ratio"), json!(2.75));
        assert_eq!(cell("number", ".spec.replicas"), json!(3));
        // A value of another type is an empty cell, except in a string column, which prints anything.
        assert_eq!(cell("integer", ".spec.text"), Value::Null);
        assert_eq!(cell("boolean", ".spec.replicas"), Value::Null);
        assert_eq!(cell("boolean", ".spec.enabled"), json!(true));
        assert_eq!(cell("string", ".spec.replicas"), json!("3"));
        assert_eq!(cell("string", ".spec.ratio"), json!("2.75"));
        assert_eq!(cell("string", ".spec.enabled"), json!("true"));
        // Lists and maps print as JSON with sorted keys; [*] shows the first element only (kube's first result).
        assert_eq!(cell("string", ".spec.ports"), json!("[80,443]"));
        assert_eq!(cell("string", ".metadata.labels"), json!(r#"{"a":"1","b":"2"}"#));
        assert_eq!(cell("string", ".spec.ports[*]"), json!("80"));
        assert_eq!(cell("integer", ".spec.ports[-1]"), json!(443));
        // Missing is empty; an explicit null prints as Go's template does in a string column.
        assert_eq!(cell("string", ".spec.missing"), Value::Null);
        assert_eq!(cell("string", ".spec.nothing"), json!("<no value>"));
        assert_eq!(cell("integer", ".spec.nothing"), Value::Null);
        assert_eq!(cell("string", ".spec.ports[7]"), Value::Null);
        // Filters.
        assert_eq!(
            cell("string", ".status.conditions[?(@.type==\"Synced\")].status"),
            json!("False")
        );
        assert_eq!(
            cell("string", ".status.conditions[?(@.type==\"Gone\")].status"),
            Value::Null
        );
        // Dates stay timestamps (the table shows their age); a non-string date is empty.
        assert_eq!(
            cell("date", ".metadata.creationTimestamp"),
            json!("2024-01-01T00:00:00Z")
        );
        assert_eq!(cell("date", ".spec.replicas"), Value::Null);
    }

    #[test]
    fn definitions_are_checked_as_kube_checks_them() {
        let parse = |c: Value| PrinterColumn::parse(&c, "spec.versions[0].additionalPrinterColumns[0]");
        let ok = parse(json!({"name": "Ready", "type": "string", "jsonPath": ".status.ready", "priority": 1}))
            .expect("valid");
        assert_eq!(ok.column.priority, 1);
        assert_eq!(
            ok.column.description,
            "Custom resource definition column (in JSONPath format): .status.ready"
        );
        assert!(!ok.column.shows_age);
        assert!(
            parse(json!({"name": "A", "type": "date", "jsonPath": ".a"}))
                .expect("valid")
                .column
                .shows_age
        );
        for (c, message) in [
            (json!({"type": "string", "jsonPath": ".a"}), ".name: Required value"),
            (
                json!({"name": "A", "type": "text", "jsonPath": ".a"}),
                ".type: Unsupported value: \"text\"",
            ),
            (
                json!({"name": "A", "type": "string", "format": "x", "jsonPath": ".a"}),
                ".format: Unsupported value",
            ),
            (json!({"name": "A", "type": "string"}), ".jsonPath: Required value"),
            (
                json!({"name": "A", "type": "string", "jsonPath": "spec.a"}),
                "must be a simple json path starting with .",
            ),
            (
                json!({"name": "A", "type": "string", "jsonPath": ".conditions[?(@.type==\"Ready\""}),
                "unrecognized column definition: unterminated filter",
            ),
            (
                json!({"name": "A", "type": "string", "jsonPath": ".items[x]"}),
                "unrecognized column definition: invalid array index x",
            ),
        ] {
            let err = parse(c).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(message), "{message:?} not in {err:?}");
            assert!(err.starts_with("spec.versions[0].additionalPrinterColumns[0]"), "{err}");
        }
    }
}
