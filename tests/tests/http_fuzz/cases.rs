//! The HTTP fuzz run's generator: case `index` of a seeded run, as raw bytes (or parts for a normal client).

use serde_json::{json, Value};

/// The seeded source of a case (the harness's SplitMix64).
struct Random(e2e::SplitMix);

impl Random {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

/// How a case is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Transport {
    /// On a shared keep-alive connection: the request is well framed, exactly one response is read.
    KeepAlive = 0,
    /// On a connection of its own, closed for writing after the request: the framing may be broken; every
    /// response up to the server's close is read.
    Alone = 1,
    /// Through reqwest (well-formed HTTP from a normal client).
    Client = 2,
}

/// One generated request.
pub struct Case {
    pub transport: Transport,
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// The raw bytes to send, for `KeepAlive` and `Alone`.
    pub raw: Vec<u8>,
    /// A watch may start streaming: a 200 whose body does not end is then fine.
    pub may_stream: bool,
    /// The bytes start with the HTTP/2 preface: the answer is HTTP/2 frames (a GOAWAY), not HTTP/1.
    pub http2: bool,
    /// What the generator did, for failure messages.
    pub label: String,
}

const COLLECTIONS: &[&str] = &[
    "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    "/apis/wardle.example.com/v1beta1/namespaces/default/flunders",
    "/apis/wardle.example.com/v1alpha1/namespaces/fuzz/flunders",
    "/apis/wardle.example.com/v1alpha1/flunders",
    "/apis/wardle.example.com/v1alpha1/fischers",
    "/apis/wardle.example.com/v1alpha1/namespaces//flunders",
    "/apis/wardle.example.com/v9/namespaces/default/flunders",
    "/apis/wardle.example.com/v1alpha1/namespaces/default/nonesuch",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    "/api/v1/namespaces",
    "/api/v1/namespaces/default/flunders",
    "/tenants/x/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    "/tenants//apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    "/tenants/../apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
];

const OTHER_PATHS: &[&str] = &[
    "/",
    "",
    "*",
    "/api",
    "/api/v1",
    "/apis",
    "/apis/wardle.example.com",
    "/apis/wardle.example.com/v1alpha1",
    "/version",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/apis/wardle.example.com/v1alpha1",
    "/openapi/v3/apis/nonesuch/v1",
    "/healthz",
    "/healthz/ping",
    "/livez/nonesuch",
    "/readyz?verbose",
    "/metrics",
    "/tenants",
    "/tenants/x",
    "/tenants/x/apis",
    "/tenants/x/api/v1/namespaces",
    "/apis/wardle.example.com/v1alpha1/watch/namespaces/default/flunders",
    "http://127.0.0.1/apis",
    "/../../etc/passwd",
    "/apis/%2e%2e/%2e%2e",
    "/api/v1/namespaces/default/../kube-system",
];

const NAMES: &[&str] = &[
    "fuzz-target",
    "fuzz-target",
    "fuzz-target",
    "fuzz-new",
    "fuzz-new",
    "UPPER",
    "..",
    ".",
    "a%2Fb",
    "a%00b",
    "%ff%fe",
    "%",
    "%zz",
    "%C3%A9t%C3%A9",
    "🙂",
    "名前",
    "a b",
    "a\"b",
    "-leading",
    "x;y",
];

const SUBRESOURCES: &[&str] = &["status", "scale", "proxy", "exec", "status/extra", "", "log"];

const QUERY_KEYS_VALUES: &[(&str, &[&str])] = &[
    (
        "limit",
        &[
            "-1",
            "0",
            "abc",
            "99999999999999999999",
            "1.5",
            "",
            "1e3",
            "9223372036854775807",
        ],
    ),
    (
        "continue",
        &[
            "garbage",
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiLi4vIn0",
            "%%%",
            "AAAA====",
            "",
        ],
    ),
    (
        "labelSelector",
        &[
            "a=",
            "=b",
            "a in (",
            "!!",
            "a,,b",
            "a notin x",
            "a=b=c",
            "%ff",
            "a>1",
            "a in (b,c",
            "x==y",
        ],
    ),
    (
        "fieldSelector",
        &[
            "metadata.name",
            "spec.nonesuch=x",
            "metadata.name=",
            "a!==b",
            "metadata.namespace=default,,",
            "%00",
        ],
    ),
    (
        "timeoutSeconds",
        &["-5", "abc", "1e9", "99999999999999999999", "", "0.5"],
    ),
    ("watch", &["maybe", "2", "", "TRUE", "yes", "0"]),
    (
        "resourceVersion",
        &[
            "abc",
            "-1",
            "99999999999999999999",
            "",
            "1.0",
            "0x10",
            "18446744073709551615",
        ],
    ),
    ("resourceVersionMatch", &["Exact", "NotOlderThan", "odd", "", "exact"]),
    ("dryRun", &["odd", "All", "", "all", "All,All"]),
    ("propagationPolicy", &["odd", "Orphan", "Foreground", "", "background"]),
    ("gracePeriodSeconds", &["-1", "abc", "99999999999999999999"]),
    ("fieldValidation", &["Strict", "Warn", "Ignore", "odd", ""]),
    ("pretty", &["true", "maybe"]),
    ("allowWatchBookmarks", &["maybe"]),
    ("sendInitialEvents", &["maybe", "true"]),
    ("orphanDependents", &["maybe"]),
    ("force", &["maybe", "true"]),
    ("%ff", &["%fe"]),
    ("", &[""]),
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
    "application/vnd.kubernetes.protobuf",
    "application/cbor",
    "text/plain",
    "application/json; charset=utf-16",
    "application/json;;;",
    "application/json; q=",
    "*/*",
    "",
    "application/",
    "/json",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    "application/json;as=Table;v=v9;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=Nope;v=v1;g=meta.k8s.io",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/vnd.kubernetes.protobuf;stream=watch",
    "application/cbor",
    "application/json;stream=watch",
    "application/json;q=0, */*;q=0",
    "application/json;q=abc",
    "text/html",
    "*/*",
    "*/json",
    ";;;",
    "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io",
    "application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io,application/json",
    "application/json;g=",
];

/// A JSON value nested `depth` times in arrays.
fn nested(depth: usize, open: &str, close: &str, inner: &str) -> Vec<u8> {
    let mut body = open.repeat(depth);
    body.push_str(inner);
    body.push_str(&close.repeat(depth));
    body.into_bytes()
}

/// A flunder body with `spec` and `metadata` replaced by odd values.
fn flunder_with(metadata: Value, spec: Value) -> Vec<u8> {
    json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": metadata, "spec": spec})
        .to_string()
        .into_bytes()
}

/// The bodies the generator picks from (built once: some are megabytes).
pub fn bodies() -> Vec<(Vec<u8>, &'static str)> {
    let huge = "1".repeat(400);
    vec![
        (Vec::new(), "empty"),
        (b"{".to_vec(), "truncated"),
        (b"{\"apiVersion\": \"wardle.example.com/v1alpha1\", \"kind\": \"Flun".to_vec(), "truncated-2"),
        (nested(100_000, "[", "]", ""), "nested-arrays-100k"),
        (nested(100_000, "{\"a\":", "}", "1"), "nested-objects-100k"),
        (nested(2_000, "[", "]", ""), "nested-arrays-2k"),
        (b"{\"metadata\":{\"name\":\"x\",\"generation\":1e999999}}".to_vec(), "1e999999"),
        (flunder_with(json!({"name": "fuzz-num"}), json!({"replicas": 123456789012345678901234567890.0})), "float-replicas"),
        (format!("{{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{{\"name\":\"fuzz-big\"}},\"spec\":{{\"replicas\":{huge}}}}}").into_bytes(), "400-digit-replicas"),
        (b"{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"fuzz-e\"},\"spec\":{\"replicas\":-1e999999}}".to_vec(), "neg-1e999999"),
        (flunder_with(json!("a string"), json!({})), "metadata-string"),
        (flunder_with(json!({"name": 5}), json!({})), "name-number"),
        (flunder_with(json!({"name": "fuzz-l", "labels": ["a"]}), json!({})), "labels-array"),
        (flunder_with(json!({"name": "fuzz-l", "labels": {"a": 1}}), json!({})), "label-number"),
        (flunder_with(json!({"name": "fuzz-a", "annotations": {"a": null}}), json!({})), "annotation-null"),
        (flunder_with(json!({"name": "fuzz-rv", "resourceVersion": 12}), json!({})), "rv-number"),
        (flunder_with(json!({"name": "fuzz-rv2", "resourceVersion": "abc"}), json!({})), "rv-abc"),
        (flunder_with(json!({"name": "fuzz-ts", "creationTimestamp": "yesterday"}), json!({})), "timestamp-bad"),
        (flunder_with(json!({"name": "fuzz-del", "deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": -7}), json!({})), "deletion-set"),
        (flunder_with(json!({"name": "fuzz-gen", "generation": -1, "uid": 7}), json!({})), "generation-negative"),
        (flunder_with(json!({"name": "fuzz-fin", "finalizers": [1, null, "x/y"]}), json!({})), "finalizers-bad"),
        (flunder_with(json!({"name": "fuzz-own", "ownerReferences": [{"kind": 1}]}), json!({})), "owner-bad"),
        (flunder_with(json!({"name": "fuzz-mf", "managedFields": [{"fieldsV1": "x", "operation": 3}]}), json!({})), "managed-fields-bad"),
        (flunder_with(json!({"generateName": "g".repeat(300)}), json!({})), "generate-name-long"),
        (flunder_with(json!({"name": "n".repeat(10_000)}), json!({})), "name-long"),
        (flunder_with(json!({"name": "fuzz-spec"}), json!([1, 2])), "spec-array"),
        (flunder_with(json!({"name": "fuzz-spec2"}), json!({"reference": {"a": [1]}, "referenceType": 7})), "spec-types"),
        (json!({"apiVersion": 1, "kind": ["Flunder"]}).to_string().into_bytes(), "type-meta-wrong"),
        (json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz-ns"}}).to_string().into_bytes(), "namespace"),
        (json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": 5, "preconditions": {"uid": 1}}).to_string().into_bytes(), "delete-options-bad"),
        (json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": -99999999999i64, "dryRun": ["Nope"]}).to_string().into_bytes(), "delete-options-odd"),
        (json!([{"op": "nope", "path": "/x"}]).to_string().into_bytes(), "json-patch-bad-op"),
        (json!([{"op": "add", "path": "metadata", "value": 1}]).to_string().into_bytes(), "json-patch-bad-path"),
        (json!([{"op": "replace", "path": "/metadata/name", "value": "other"}]).to_string().into_bytes(), "json-patch-rename"),
        (json!([{"op": "test", "path": "/spec/~2", "value": 1}, {"op": "move", "from": "/spec", "path": "/spec/x"}]).to_string().into_bytes(), "json-patch-move-into-self"),
        (json!([{"op": "remove", "path": "/metadata"}]).to_string().into_bytes(), "json-patch-remove-metadata"),
        (json!([{"op": "add", "path": "/metadata/labels/a~1b", "value": {"x": 1}}]).to_string().into_bytes(), "json-patch-label-object"),
        (json!([{"op": "copy", "from": "/spec", "path": "/spec/a/b/c/d"}]).to_string().into_bytes(), "json-patch-copy-deep"),
        (json!({"metadata": {"$patch": "delete"}, "spec": {"$retainKeys": [1]}}).to_string().into_bytes(), "smp-directives"),
        (json!({"metadata": null}).to_string().into_bytes(), "merge-metadata-null"),
        (json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": "many"}}).to_string().into_bytes(), "merge-stale-rv"),
        (b"a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n".to_vec(), "yaml-billion-laughs"),
        (b"apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: fuzz-yaml\n  labels: &l {a: b}\n  annotations: *l\nspec: {reference: x}\n".to_vec(), "yaml-alias"),
        (b"apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: fuzz-yaml2}\nspec: !!binary AAAA\n".to_vec(), "yaml-tag"),
        (b"- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n".repeat(100), "yaml-sequences"),
        (b"a: [\n".repeat(5_000), "yaml-unclosed"),
        (b"%YAML 9.9\n---\na: 1\n---\nb: 2\n".to_vec(), "yaml-documents"),
        (b"managedFields: 1\nmetadata: {name: fuzz-apply}\n".to_vec(), "apply-odd"),
        (b"{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"fuzz-\xff\xfe\"},\"spec\":{}}".to_vec(), "invalid-utf8-name"),
        (b"\xff\xfe\x00{\x00}".to_vec(), "invalid-utf8"),
        (b"\xef\xbb\xbf{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"fuzz-bom\"},\"spec\":{}}".to_vec(), "utf8-bom"),
        (b"\x0a\x0b\x12\x00\xff\xff\xff\xff\x0f".to_vec(), "protobuf-garbage"),
        (b"k8s\x00\x0a\xff\xff\xff\xff\x0f".to_vec(), "protobuf-magic-garbage"),
        (b"\xd9\xd9\xf7\xbf\xff".to_vec(), "cbor-garbage"),
        (b"{\"a\":\"\\ud800\"}".to_vec(), "lone-surrogate"),
        (b"{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"fuzz-dup\",\"name\":\"fuzz-dup2\"},\"spec\":{},\"spec\":[]}".to_vec(), "duplicate-keys"),
        (vec![b'x'; 3 * 1024 * 1024 + 7], "3MiB-garbage"),
        (b"null".to_vec(), "null"),
        (b"1".to_vec(), "number"),
        (b"\"str\"".to_vec(), "string"),
    ]
}

/// Percent-encodes one random character of `path`, or makes another odd change to it.
fn mangle_path(random: &mut Random, path: &str) -> String {
    match random.below(12) {
        0 => path.replacen('/', "//", 1 + random.below(3)),
        1 => format!("{path}/"),
        2 => format!("{path}/{}", "s".repeat(8_000 + random.below(4_000))),
        3 => path.replace('a', "%61"),
        4 => path.replace('/', "%2F"),
        5 => format!("{path}/../../.."),
        6 => format!("{path}%"),
        7 => format!("{path}/%ff%00"),
        8 => path.to_uppercase(),
        9 => format!("{path}/é/🙂"),
        10 => format!("{path}#fragment"),
        _ => format!("/./{path}"),
    }
}

fn target(random: &mut Random) -> (String, bool) {
    let mut path = if random.chance(15) {
        random.pick(OTHER_PATHS).to_owned()
    } else {
        // Half the time one that exists, so that requests reach the handlers and the plugin.
        let mut path = if random.chance(50) {
            random.pick(&COLLECTIONS[..5])
        } else {
            random.pick(COLLECTIONS)
        }
        .to_owned();
        if random.chance(60) {
            path.push('/');
            path.push_str(random.pick(NAMES));
            if random.chance(25) {
                path.push('/');
                path.push_str(random.pick(SUBRESOURCES));
            }
        }
        path
    };
    if random.chance(15) {
        path = mangle_path(random, &path);
    }
    let mut query = Vec::new();
    for _ in 0..random.below(4) {
        let (key, values) = QUERY_KEYS_VALUES[random.below(QUERY_KEYS_VALUES.len())];
        let value = values[random.below(values.len())];
        query.push(format!("{key}={value}"));
    }
    if random.chance(3) {
        query.push(format!("fieldManager={}", "m".repeat(200 + random.below(20_000))));
    }
    if random.chance(2) {
        query.push("a=b&&&==&".to_owned());
    }
    if random.chance(2) {
        query.push(format!("limit={}", "9".repeat(50)));
    }
    // A watch with valid parameters streams; the default tenant's deprecated watch path too.
    let may_stream = path.contains("/watch/") || query.iter().any(|q| q.starts_with("watch="));
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query.join("&"));
    }
    (path, may_stream)
}

fn method(random: &mut Random) -> String {
    let methods = [
        "GET", "GET", "GET", "GET", "POST", "POST", "POST", "PUT", "PUT", "PATCH", "PATCH", "PATCH", "DELETE",
        "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "get", "PROPFIND", "BREW", "M-SEARCH",
    ];
    methods[random.below(methods.len())].to_owned()
}

fn headers(random: &mut Random, has_body: bool) -> Vec<(String, Vec<u8>)> {
    let mut headers: Vec<(String, Vec<u8>)> = vec![("Host".into(), b"127.0.0.1".to_vec())];
    // Half the bodies are sent as JSON and half the requests accept any JSON, so that many reach the handlers.
    if has_body || random.chance(20) {
        let content_type = if random.chance(50) {
            "application/json"
        } else {
            random.pick(CONTENT_TYPES)
        };
        headers.push(("Content-Type".into(), content_type.as_bytes().to_vec()));
    }
    if random.chance(40) {
        headers.push(("Accept".into(), random.pick(ACCEPTS).as_bytes().to_vec()));
    }
    if random.chance(5) {
        headers.push(("Content-Type".into(), random.pick(CONTENT_TYPES).as_bytes().to_vec()));
    }
    if random.chance(5) {
        let credentials: &[&[u8]] = &[
            b"Bearer garbage",
            b"Bearer ",
            b"Basic !!!",
            b"Basic YWRtaW46YWRtaW4=",
            b"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
            b"Negotiate x",
            b"",
        ];
        headers.push((
            "Authorization".into(),
            credentials[random.below(credentials.len())].to_vec(),
        ));
    }
    if random.chance(4) {
        let impersonation: &[(&str, &str)] = &[
            ("Impersonate-User", "someone"),
            ("Impersonate-Group", "system:masters"),
            ("Impersonate-Uid", "1"),
            ("Impersonate-Extra-%ff", "x"),
            ("Impersonate-User", ""),
        ];
        let (name, value) = impersonation[random.below(impersonation.len())];
        headers.push((name.into(), value.as_bytes().to_vec()));
    }
    if random.chance(3) {
        headers.push(("X-Huge".into(), vec![b'h'; 8_000 + random.below(50_000)]));
    }
    if random.chance(2) {
        for i in 0..(50 + random.below(100)) {
            headers.push((format!("X-Many-{i}"), b"v".to_vec()));
        }
    }
    if random.chance(3) {
        let odd: &[(&str, &[u8])] = &[
            ("Accept-Encoding", b"gzip;q=abc, br, *;q=0"),
            ("Content-Encoding", b"gzip"),
            ("Accept-Charset", b"utf-16"),
            ("User-Agent", b"\xff\xfe agent"),
            ("X-Binary", b"\x01\x02"),
            ("Connection", b"Upgrade, HTTP2-Settings"),
            ("Upgrade", b"h2c"),
            ("Upgrade", b"websocket"),
            ("Audit-ID", b"\xffx"),
            ("If-None-Match", b"*"),
            ("Range", b"bytes=0-1"),
            ("Expect", b"100-continue"),
            ("Expect", b"nonsense"),
            ("X-Remote-User", b"admin"),
            ("Cookie", b"a=b; c"),
        ];
        let (name, value) = odd[random.below(odd.len())];
        headers.push((name.into(), value.to_vec()));
    }
    headers
}

/// The raw request with correct framing.
fn raw_request(method: &str, target: &str, headers: &[(String, Vec<u8>)], body: &[u8]) -> Vec<u8> {
    let mut raw = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        raw.extend_from_slice(name.as_bytes());
        raw.extend_from_slice(b": ");
        raw.extend_from_slice(value);
        raw.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || method != "GET" {
        raw.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    raw.extend_from_slice(body);
    raw
}

/// A request whose framing or syntax is broken, sent alone.
fn broken_request(random: &mut Random, method: &str, target: &str, body: &[u8]) -> (Vec<u8>, &'static str) {
    let head =
        |extra: &str| format!("{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}");
    let take = &body[..body.len().min(64)];
    let with = |prefix: String, rest: &[u8]| {
        let mut raw = prefix.into_bytes();
        raw.extend_from_slice(rest);
        raw
    };
    match random.below(22) {
        0 => (
            with(head(&format!("Content-Length: {}\r\n\r\n", take.len() + 100)), take),
            "content-length-larger",
        ),
        1 => (
            with(head("Content-Length: 2\r\n\r\n"), b"{}GARBAGE / HTTP/1.1\r\n\r\n"),
            "content-length-smaller",
        ),
        2 => (with(head("Content-Length: abc\r\n\r\n"), take), "content-length-abc"),
        3 => (
            with(head("Content-Length: -1\r\n\r\n"), take),
            "content-length-negative",
        ),
        4 => (
            with(head("Content-Length: 2\r\nContent-Length: 3\r\n\r\n"), b"{}"),
            "content-length-twice",
        ),
        5 => (
            with(head("Content-Length: 99999999999999999999999\r\n\r\n"), take),
            "content-length-huge",
        ),
        6 => (
            with(
                head("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n"),
                b"2\r\n{}\r\n0\r\n\r\n",
            ),
            "te-and-cl",
        ),
        7 => (
            with(head("Transfer-Encoding: chunked\r\n\r\n"), b"zz\r\n{}\r\n0\r\n\r\n"),
            "chunk-size-garbage",
        ),
        8 => (
            with(head("Transfer-Encoding: chunked\r\n\r\n"), b"5\r\n{}\r\n0\r\n\r\n"),
            "chunk-size-wrong",
        ),
        9 => (
            with(head("Transfer-Encoding: chunked\r\n\r\n"), b"2\r\n{}\r\n"),
            "chunk-no-end",
        ),
        10 => (
            with(
                head("Transfer-Encoding: chunked\r\n\r\n"),
                b"ffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
            ),
            "chunk-size-overflow",
        ),
        11 => (
            with(
                head("Transfer-Encoding: gzip, chunked\r\n\r\n"),
                b"2\r\n{}\r\n0\r\n\r\n",
            ),
            "te-gzip",
        ),
        12 => (
            with(
                head("Transfer-Encoding: chunked\r\n\r\n"),
                b"2;ext=\"\xff\r\n{}\r\n0\r\nTrailer: x\r\n\r\n",
            ),
            "chunk-ext",
        ),
        13 => (b"GARBAGE\r\n\r\n".to_vec(), "garbage-line"),
        14 => (format!("{method} /\r\n\r\n").into_bytes(), "http-0.9"),
        15 => (
            format!("{method} / HTTP/9.9\r\nHost: x\r\n\r\n").into_bytes(),
            "http-9.9",
        ),
        16 => (
            format!("{method} {target} HTTP/1.1\nHost: x\n\n").into_bytes(),
            "bare-lf",
        ),
        17 => (
            format!("{method} {target} HTTP/1.1\r\nHost: x\r\nNo-Colon\r\n X-Folded: y\r\n\r\n").into_bytes(),
            "header-syntax",
        ),
        18 => (
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04\x00\x00\x00\x00\x00garbage".to_vec(),
            "h2-preface-garbage",
        ),
        19 => (
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03garbage-tls".to_vec(),
            "tls-on-plain",
        ),
        20 => (
            (0..2_000).map(|_| (random.next() & 0xff) as u8).collect(),
            "binary-noise",
        ),
        _ => (
            format!("{method} {} HTTP/1.1\r\nHost: x\r\n\r\n", "/a".repeat(40_000)).into_bytes(),
            "uri-huge",
        ),
    }
}

/// Case `index` of the run with `seed`: each case has a generator of its own, so the run is the same whatever the
/// order the workers take the cases in.
pub fn generate(seed: u64, index: usize, bodies: &[(Vec<u8>, &'static str)]) -> Case {
    let random = &mut Random(e2e::SplitMix(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407)));
    let method = method(random);
    let (target, may_stream) = target(random);
    let wants_body = random.chance(40) || ["POST", "PUT", "PATCH"].contains(&method.as_str()) && random.chance(90);
    let (body, body_label) = if wants_body {
        let (body, label) = &bodies[random.below(bodies.len())];
        (body.clone(), *label)
    } else {
        (Vec::new(), "none")
    };
    let headers = headers(random, !body.is_empty());
    let roll = random.below(100);
    let (transport, raw, framing) = if roll < 12 {
        let (raw, label) = broken_request(random, &method, &target, &body);
        (Transport::Alone, raw, label)
    } else if roll < 22
        && headers
            .iter()
            .all(|(_, v)| v.is_ascii() && !v.iter().any(u8::is_ascii_control))
    {
        (Transport::Client, Vec::new(), "client")
    } else {
        (
            Transport::KeepAlive,
            raw_request(&method, &target, &headers, &body),
            "framed",
        )
    };
    let shown: String = target.chars().take(160).collect();
    Case {
        transport,
        label: format!("#{index} {method} {shown} body={body_label} framing={framing}"),
        method,
        target,
        headers,
        body,
        raw,
        may_stream,
        http2: framing == "h2-preface-garbage",
    }
}
