//! How kube's JSONPath prints a result (`PrintResults`): objects and arrays as Go's `encoding/json` writes them
//! (keys sorted, `<`, `>` and `&` escaped), other values as Go's `fmt.Print` does (floats in `%v`'s shortest form,
//! such as `1.5`, `3` or `1e+06`), and a `null` as `<no value>`.

use serde_json::Value;

use crate::gofmt::{self, Num};

/// A value as kube's JSONPath prints it.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(_) => Num::of(v).map_or_else(|| v.to_string(), Num::go_v),
        Value::Array(_) | Value::Object(_) => gofmt::json(v),
    }
}
