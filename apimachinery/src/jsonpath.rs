//! Kubernetes' JSONPath (`k8s.io/client-go/util/jsonpath`), as the CRD table convertor uses it for
//! `additionalPrinterColumns`: kube's own grammar (not RFC 9535: no `$` needed, filters in `[?(...)]`, templates with
//! `{...}` actions), evaluated on an unstructured object with missing keys allowed.
//!
//! - fields `.a.b` (with `\.` escaping a dot in a key), `.*` and `['key']`;
//! - array indices and slices `[0]`, `[-1]`, `[1:3]`, `[::2]`, `[*]`, unions `[0,2]`;
//! - recursive descent `..name`;
//! - filters `[?(@.type=="Ready")]`, `[?(@.n>1.5)]`, `[?(@.optional)]`, with Go's comparison rules.
//!
//! `range`/`end` loops are refused: a printer column shows one value.

mod eval;
mod parse;
mod print;

use serde_json::Value;

pub use print::text;

/// A parsed JSONPath template.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    nodes: Vec<parse::Node>,
}

/// A template that does not parse, with kube's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

impl JsonPath {
    /// Parses a template: text with `{...}` actions, such as `{.metadata.name}`.
    pub fn parse(template: &str) -> Result<JsonPath, ParseError> {
        parse::parse(template)
            .map(|nodes| JsonPath { nodes })
            .map_err(ParseError)
    }

    /// Parses a printer column's `jsonPath` (such as `.status.replicas`) as the CRD table convertor does: as the one
    /// action `{<path>}`.
    pub fn column(json_path: &str) -> Result<JsonPath, ParseError> {
        JsonPath::parse(&format!("{{{json_path}}}"))
    }

    /// The values each part of the template finds in `data` (kube's `FindResults`), or why evaluation failed (an
    /// index out of range, an index into a non-array, a filter comparing several values).
    pub fn find_results(&self, data: &Value) -> Result<Vec<Vec<Value>>, String> {
        let results = eval::find_results(&self.nodes, data)?;
        Ok(results
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.into_owned()).collect())
            .collect())
    }

    /// What a printer column shows: the first value the first part finds, none when it finds nothing or fails.
    pub fn first(&self, data: &Value) -> Option<Value> {
        let results = eval::find_results(&self.nodes, data).ok()?;
        results.into_iter().next()?.into_iter().next().map(|v| v.into_owned())
    }

    /// The template's output, as kube's `Execute` prints it: each part's values separated by spaces.
    pub fn execute(&self, data: &Value) -> Result<String, String> {
        let mut out = String::new();
        for values in eval::find_results(&self.nodes, data)? {
            let texts: Vec<String> = values.iter().map(|v| text(v)).collect();
            out.push_str(&texts.join(" "));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({
            "kind": "Pod",
            "metadata": {"name": "web", "labels": {"app": "web", "example.com/tier": "front"}},
            "spec": {"containers": [
                {"name": "nginx", "image": "nginx:1", "cpu": 1.5, "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "envoy", "cpu": 0.25, "ports": [{"containerPort": 9901}, {"containerPort": 15000}]}
            ], "replicas": 3},
            "status": {"conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}
            ]}
        })
    }

    fn run(path: &str, data: &Value) -> String {
        JsonPath::column(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .execute(data)
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn fields_indices_and_slices() {
        let p = pod();
        assert_eq!(run(".metadata.name", &p), "web");
        assert_eq!(run(".spec.containers[0].name", &p), "nginx");
        assert_eq!(run(".spec.containers[-1].name", &p), "sidecar");
        assert_eq!(run(".spec.containers[*].name", &p), "nginx sidecar");
        assert_eq!(run(".spec.containers[0:1].name", &p), "nginx");
        assert_eq!(run(".spec.containers[::2].name", &p), "nginx");
        assert_eq!(run(".spec.containers[0,1].image", &p), "nginx:1 envoy");
        assert_eq!(run(".metadata.labels.example\\.com/tier", &p), "front");
        assert_eq!(run(".metadata['name']", &p), "web");
        assert_eq!(run("$.metadata.name", &p), "web");
        // Missing keys give nothing; indices out of range and indices into objects are errors.
        assert_eq!(run(".spec.missing.deeper", &p), "");
        assert!(run(".spec.containers[5].name", &p).starts_with("error: array index out of bounds"));
        assert!(run(".metadata[0]", &p).starts_with("error:"));
        // Wildcards of objects walk their keys in order.
        assert_eq!(run(".metadata.labels.*", &p), "web front");
        assert_eq!(
            run(".metadata.labels[*]", &p),
            "error: map[string]interface {} is not array or slice"
        );
    }

    #[test]
    fn recursive_descent_finds_every_match() {
        let p = pod();
        assert_eq!(run("..containerPort", &p), "80 9901 15000");
        assert_eq!(run(".spec..name", &p), "nginx sidecar");
        assert!(JsonPath::column(".....a").is_err(), "multiple recursive descent");
    }

    #[test]
    fn filters_compare_as_kube_does() {
        let p = pod();
        assert_eq!(run(".status.conditions[?(@.type==\"Ready\")].status", &p), "False");
        assert_eq!(
            run(".status.conditions[?(@.type=='Ready')].reason", &p),
            "ContainersNotReady"
        );
        assert_eq!(run(".status.conditions[?(@.type!=\"Ready\")].type", &p), "Initialized");
        assert_eq!(run(".status.conditions[?(@.reason)].type", &p), "Ready");
        assert_eq!(
            run(".spec.containers[?(@.name == \"sidecar\")].ports[1].containerPort", &p),
            "15000"
        );
        // Go's templates compare values of one kind: an integer field is never equal to a number literal (kube's
        // literals are floats), a float field is.
        assert_eq!(run(".spec.containers[?(@.ports[0].containerPort==80)].name", &p), "");
        assert_eq!(
            run(".spec.containers[?(@.ports[0].containerPort!=80)].name", &p),
            "nginx sidecar"
        );
        assert_eq!(run(".spec.containers[?(@.cpu>0.5)].name", &p), "nginx");
        assert_eq!(run(".spec.containers[?(@.cpu<=0.25)].name", &p), "sidecar");
        // A filter on an object tests its values.
        assert_eq!(run(".spec[?(@.containerPort)]", &p), "");
        assert_eq!(run(".metadata.labels[?(@==\"front\")]", &p), "front");
        // Strings order lexically.
        assert_eq!(run(".spec.containers[?(@.name<\"o\")].name", &p), "nginx");
    }

    #[test]
    fn parse_errors_are_kubes() {
        for (path, message) in [
            (".spec.containers[", "unterminated array"),
            (".spec[?(@.a==1)", "unclosed array expect ]"),
            (".a[x]", "invalid array index x"),
            (".a \"b", "unterminated quoted string"),
            (".a #", "unrecognized character in action: U+0023 '#'"),
            (".items[?(@.a=='x']", "unterminated filter"),
        ] {
            assert_eq!(
                JsonPath::column(path).err().map(|e| e.to_string()),
                Some(message.to_owned()),
                "{path}"
            );
        }
        assert!(JsonPath::parse("{.a").is_err(), "unclosed action");
        assert!(JsonPath::column("range .items").is_err(), "range is refused");
        // kube accepts these and evaluates them to nothing.
        let p = pod();
        assert!(JsonPath::column(".spec bogus").is_ok());
        assert!(JsonPath::column(".spec bogus").unwrap().first(&p).is_none());
    }

    #[test]
    fn templates_mix_text_and_actions() {
        let t = JsonPath::parse("name={.metadata.name} first={.spec.containers[0].image}").unwrap();
        assert_eq!(t.execute(&pod()).unwrap(), "name=web first=nginx:1");
    }

    #[test]
    fn results_print_as_kube_prints_them() {
        assert_eq!(text(&json!(null)), "<no value>");
        assert_eq!(text(&json!(true)), "true");
        assert_eq!(text(&json!(3)), "3");
        assert_eq!(text(&json!(1.5)), "1.5");
        assert_eq!(text(&json!(3.0)), "3");
        assert_eq!(text(&json!(1_000_000.0)), "1e+06");
        assert_eq!(text(&json!(123_456.0)), "123456");
        assert_eq!(text(&json!(0.00001)), "1e-05");
        assert_eq!(text(&json!(-0.25)), "-0.25");
        assert_eq!(text(&json!(["a", 1])), r#"["a",1]"#);
        assert_eq!(
            text(&json!({"b": 1.0, "a": "<x&y>", "c": 1e21, "d": 1e-7})),
            r#"{"a":"\u003cx\u0026y\u003e","b":1,"c":1e+21,"d":1e-7}"#
        );
    }

    #[test]
    fn first_is_what_a_printer_column_shows() {
        let p = pod();
        let first = |path: &str| JsonPath::column(path).unwrap().first(&p);
        assert_eq!(first(".spec.containers[*].name"), Some(json!("nginx")));
        assert_eq!(first(".spec.containers[0].ports"), Some(json!([{"containerPort": 80}])));
        assert_eq!(first(".spec.containers[9]"), None);
        assert_eq!(first(".nothing"), None);
    }
}
