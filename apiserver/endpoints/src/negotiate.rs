//! Content negotiation: decoding request bodies (JSON, YAML) and choosing the response form (JSON, YAML, Table).

use serde_json::Value;

use apimachinery::status::ApiError;

/// The largest request body accepted (like kube-apiserver's 3 MiB limit).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How a response is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
}

/// What the client asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// The encoding.
    pub encoding: Encoding,
    /// Whether the object should be rendered as a `meta.k8s.io` `Table`; the `&str` is the Table's version.
    pub table: Option<&'static str>,
}

impl Output {
    /// Plain JSON.
    pub const JSON: Output = Output {
        encoding: Encoding::Json,
        table: None,
    };

    /// The Content-Type header for this output.
    pub fn content_type(&self) -> String {
        match (self.encoding, self.table) {
            (Encoding::Json, Some(v)) => format!("application/json;as=Table;v={v};g=meta.k8s.io"),
            (Encoding::Yaml, Some(v)) => format!("application/yaml;as=Table;v={v};g=meta.k8s.io"),
            (Encoding::Json, None) => "application/json".into(),
            (Encoding::Yaml, None) => "application/yaml".into(),
        }
    }
}

struct MediaType<'a> {
    essence: String,
    params: Vec<(String, &'a str)>,
}

fn parse_media_type(s: &str) -> MediaType<'_> {
    let mut parts = s.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let params = parts
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"')))
        .collect();
    MediaType { essence, params }
}

/// Chooses the response form from the Accept header. `allow_table` is false where a Table makes no sense.
pub fn negotiate(accept: Option<&str>, allow_table: bool) -> Result<Output, ApiError> {
    let accept = match accept {
        Some(a) if !a.trim().is_empty() => a,
        _ => return Ok(Output::JSON),
    };
    for candidate in accept.split(',') {
        let mt = parse_media_type(candidate);
        let encoding = match mt.essence.as_str() {
            "application/json" | "application/*" | "*/*" => Encoding::Json,
            "application/yaml" => Encoding::Yaml,
            _ => continue,
        };
        let get = |k: &str| mt.params.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        match get("as") {
            None => return Ok(Output { encoding, table: None }),
            Some("Table") if allow_table && get("g") == Some("meta.k8s.io") => match get("v") {
                Some("v1") => {
                    return Ok(Output {
                        encoding,
                        table: Some("v1"),
                    })
                }
                Some("v1beta1") => {
                    return Ok(Output {
                        encoding,
                        table: Some("v1beta1"),
                    })
                }
                _ => continue,
            },
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// Decodes a request body given its Content-Type: JSON (default) or YAML. The body must be an object.
pub fn decode_object(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let essence = content_type
        .map(|c| parse_media_type(c).essence)
        .unwrap_or_else(|| "application/json".into());
    let value: Value = match essence.as_str() {
        "application/json" | "" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(body)
            .map_err(|e| ApiError::bad_request(format!("the body of the request is not valid YAML: {e}")))?,
        super::protobuf::CONTENT_TYPE => super::protobuf::decode(body)?,
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the body of the request must be an object"));
    }
    Ok(value)
}

/// How deep `[`/`{` flow collections may nest in a YAML request body. The YAML parser scans a whole document
/// before its depth limit (128) applies, in a time quadratic in the flow depth: 100,000 nested `{"a":` took it
/// minutes. A document deeper than this fails to decode anyway; the margin is for brackets in block scalars.
const MAX_YAML_FLOW_DEPTH: usize = 1000;

/// Decodes a YAML request body (or apply patch), refusing flow collections nested deeper than
/// [`MAX_YAML_FLOW_DEPTH`] before the parser sees them.
pub fn decode_yaml(body: &[u8]) -> Result<Value, String> {
    let depth = yaml_flow_depth(body);
    if depth > MAX_YAML_FLOW_DEPTH {
        return Err(format!("flow collections nested more than {MAX_YAML_FLOW_DEPTH} deep"));
    }
    yaml_serde::from_slice(body).map_err(|e| e.to_string())
}

/// The deepest nesting of `[`/`{` outside quoted scalars and comments: an upper bound of the flow depth (brackets
/// in plain and block scalars count too). A quote opens a quoted scalar only where a scalar can start (after a
/// space, `[`, `{` or `,`, or at the start), so that a quote inside a plain scalar cannot hide brackets.
fn yaml_flow_depth(body: &[u8]) -> usize {
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    let starts_scalar = |i: usize| i == 0 || matches!(body[i - 1], b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',');
    while i < body.len() {
        match body[i] {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' if starts_scalar(i) => {
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if starts_scalar(i) => {
                // A quote inside a single-quoted scalar is written twice: it ends the scalar and starts another.
                i += 1;
                while i < body.len() && body[i] != b'\'' {
                    i += 1;
                }
            }
            b'#' if i == 0 || body[i - 1].is_ascii_whitespace() => {
                while i < body.len() && body[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// Encodes a value for the chosen output.
pub fn encode(output: Output, value: &Value, pretty: bool) -> Vec<u8> {
    match output.encoding {
        Encoding::Json if pretty => serde_json::to_vec_pretty(value).unwrap_or_default(),
        Encoding::Json => serde_json::to_vec(value).unwrap_or_default(),
        Encoding::Yaml => yaml_serde::to_string(value).unwrap_or_default().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the request_body fuzz target: a long number decoded one unit in the last place off the nearest
    /// float64 (serde_json's default float parsing), so the object answered (and stored) decoded to yet another
    /// number. Numbers decode as Go's decoder reads them, and what is answered decodes to the same value.
    #[test]
    fn numbers_decode_to_the_nearest_float_and_round_trip() {
        let body = br#"{"big": 12435678901234567890123456790}"#;
        let value = decode_object(Some("application/json"), body).unwrap();
        assert_eq!(value["big"].as_f64(), Some(1.2435678901234569e28));
        let answered = encode(Output::JSON, &value, false);
        assert_eq!(decode_object(None, &answered).unwrap(), value);
    }

    #[test]
    fn kubectl_get_asks_for_a_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(a), true).unwrap(),
            Output {
                encoding: Encoding::Json,
                table: Some("v1")
            }
        );
        assert_eq!(negotiate(Some(a), false).unwrap(), Output::JSON);
    }

    #[test]
    fn yaml_and_unsupported() {
        assert_eq!(
            negotiate(Some("application/yaml"), true).unwrap().encoding,
            Encoding::Yaml
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf"), true)
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf,*/*"), true).unwrap(),
            Output::JSON
        );
    }

    /// YAML answers (`Accept: application/yaml`) of an object with the shapes that need care: strings YAML would
    /// read as something else, multi-line and non-ASCII strings, numbers, null, empty and nested collections.
    #[test]
    fn yaml_output_is_stable() {
        let obj = serde_json::json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {
                "name": "my-flunder",
                "namespace": "default",
                "labels": {"app.kubernetes.io/name": "x", "empty": ""},
                "annotations": {"note": "line one\nline two\n", "colon": "a: b", "hash": "# not a comment"},
                "resourceVersion": "42",
                "generation": 1,
                "creationTimestamp": "2025-01-01T00:00:00Z",
                "finalizers": [],
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {".": {}, "f:reference": {}}}}]
            },
            "spec": {
                "reference": "true",
                "number": "007",
                "float": 1.5,
                "big": 12345678901234567_i64,
                "negative": -3,
                "yes": "yes",
                "off": "off",
                "tilde": "~",
                "null": null,
                "bool": false,
                "unicode": "café ✓",
                "quote": "it's \"quoted\"",
                "leadingSpace": " x",
                "list": [1, "two", {"three": 3}, [], {}],
                "empty": {},
                "long": "QUJD".repeat(60)
            }
        });
        let yaml = encode(
            Output {
                encoding: Encoding::Yaml,
                table: None,
            },
            &obj,
            false,
        );
        let expected = r#"apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  annotations:
    colon: 'a: b'
    hash: '# not a comment'
    note: |
      line one
      line two
  creationTimestamp: 2025-01-01T00:00:00Z
  finalizers: []
  generation: 1
  labels:
    app.kubernetes.io/name: x
    empty: ''
  managedFields:
  - fieldsV1:
      f:spec:
        .: {}
        f:reference: {}
    manager: kubectl
  name: my-flunder
  namespace: default
  resourceVersion: '42'
spec:
  big: 12345678901234567
  bool: false
  empty: {}
  float: 1.5
  leadingSpace: ' x'
  list:
  - 1
  - two
  - three: 3
  - []
  - {}
  long: QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD
  negative: -3
  'null': null
  number: '007'
  off: off
  quote: it's "quoted"
  reference: 'true'
  tilde: '~'
  unicode: café ✓
  yes: yes
"#;
        assert_eq!(String::from_utf8(yaml).unwrap(), expected);
        // And back: YAML 1.2 reads these scalars as the strings and numbers they were.
        let decoded = decode_object(Some("application/yaml"), expected.as_bytes()).unwrap();
        assert_eq!(decoded, obj);
        let scalars = decode_object(
            Some("application/yaml"),
            b"a: yes\nb: off\nc: ~\nd: 0x1F\ne: 1e3\nf: 2025-01-01\ng: '1'\n",
        );
        assert_eq!(
            scalars.unwrap(),
            serde_json::json!({"a": "yes", "b": "off", "c": null, "d": 31, "e": 1000.0, "f": "2025-01-01", "g": "1"})
        );
    }

    #[test]
    fn deep_yaml_flow_collections_are_refused_before_parsing() {
        let deep = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        let started = std::time::Instant::now();
        let e = decode_yaml(deep(100_000).as_bytes()).unwrap_err();
        assert!(e.contains("nested more than 1000 deep"), "{e}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        assert!(decode_yaml(format!("{}{}", "[".repeat(5_000), "]".repeat(5_000)).as_bytes()).is_err());
        // Brackets in quoted scalars and comments do not count.
        let quoted = format!(
            "a: \"{}\"\nb: '{}'\n# {}\n",
            "[".repeat(2_000),
            "{".repeat(2_000),
            "[".repeat(2_000)
        );
        assert_eq!(
            decode_yaml(quoted.as_bytes()).unwrap()["b"].as_str().map(str::len),
            Some(2_000)
        );
        assert_eq!(
            decode_yaml(deep(20).as_bytes()).unwrap().pointer(&"/a".repeat(20)),
            Some(&serde_json::json!(1))
        );
        assert_eq!(yaml_flow_depth(b"a: [1, {b: [2]}]\nc: \"]]]\\\"[[[\"\n"), 3);
        // A quote inside a plain scalar hides nothing.
        assert_eq!(yaml_flow_depth(b"a: x'[[[\nb: y\"{{\n"), 5);
    }

    #[test]
    fn decoding_rejects_garbage() {
        assert_eq!(decode_object(None, b"{not json").unwrap_err().code, 400);
        assert_eq!(decode_object(None, b"[1]").unwrap_err().code, 400);
        assert_eq!(decode_object(Some("application/xml"), b"<a/>").unwrap_err().code, 415);
        let v = decode_object(Some("application/yaml"), b"kind: A\nspec: {x: 1}\n").unwrap();
        assert_eq!(v["spec"]["x"], 1);
    }
}
