//! An HTTP fuzz run: 10,000 malformed or odd requests against the insecure port, from a seeded generator (set
//! `HTTP_FUZZ_SEED` to replay another run, `HTTP_FUZZ_CASES` to change the count).
//!
//! The requests are bad paths (percent-encoding, `..`, empty and very long segments, unicode, unknown tenants),
//! methods, headers (huge, many, duplicated, bad Content-Length and chunked framing, odd media types, bad
//! credentials), bodies (truncated and deeply nested JSON, huge numbers, wrong types, YAML alias bombs, invalid
//! UTF-8), query values and content types. Most go over raw TCP on a few keep-alive connections, so that malformed
//! request lines and framing are possible; requests whose framing is broken go on a connection of their own that
//! the test closes for writing; some well-formed ones go through a normal HTTP client.
//!
//! The server must answer each with a status below 500 or close the connection (a request it cannot parse), never
//! leave a request unanswered; every `Status` it answers is well-formed (`apiVersion: v1`, `code` equal to the
//! HTTP status, `status: Failure` for errors); and at the end it is still alive and serving, with no panic in its
//! log.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{Server, FLUNDERS_V1ALPHA1};
use serde_json::{json, Value};

/// How many requests the run sends.
const DEFAULT_CASES: usize = 10_000;
/// How many connections send at once.
const WORKERS: usize = 6;
/// How long a request may wait for its answer (or for the server to close the connection) before it counts as a
/// hang.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);
/// The default seed.
const DEFAULT_SEED: u64 = 0x0F0F_2026_1326;

/// A tiny deterministic PRNG (SplitMix64).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
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
enum Transport {
    /// On a shared keep-alive connection: the request is well framed, exactly one response is read.
    KeepAlive = 0,
    /// On a connection of its own, closed for writing after the request: the framing may be broken; every
    /// response up to the server's close is read.
    Alone = 1,
    /// Through reqwest (well-formed HTTP from a normal client).
    Client = 2,
}

/// One generated request.
struct Case {
    transport: Transport,
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    /// The raw bytes to send, for `KeepAlive` and `Alone`.
    raw: Vec<u8>,
    /// A watch may start streaming: a 200 whose body does not end is then fine.
    may_stream: bool,
    /// The bytes start with the HTTP/2 preface: the answer is HTTP/2 frames (a GOAWAY), not HTTP/1.
    http2: bool,
    /// What the generator did, for failure messages.
    label: String,
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
fn bodies() -> Vec<(Vec<u8>, &'static str)> {
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
fn generate(seed: u64, index: usize, bodies: &[(Vec<u8>, &'static str)]) -> Case {
    let random = &mut Random(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
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

/// One parsed response.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// The outcome of reading a response from a buffer.
enum Parsed {
    Complete(Answer, usize),
    Incomplete,
    Malformed(String),
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses one HTTP/1.1 response at the start of `buffer` (for a request with `method`).
fn parse_response(buffer: &[u8], method: &str) -> Parsed {
    let Some(end) = find(buffer, b"\r\n\r\n") else {
        return Parsed::Incomplete;
    };
    let head = String::from_utf8_lossy(&buffer[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    };
    let Ok(status) = code.parse::<u16>() else {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    }
    let mut content_length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Parsed::Malformed(format!("header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<usize>() {
                Ok(n) => content_length = Some(n),
                Err(_) => return Parsed::Malformed(format!("content-length {value:?}")),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let start = end + 4;
    if (100..200).contains(&status) {
        return Parsed::Complete(
            Answer {
                status,
                body: Vec::new(),
            },
            start,
        );
    }
    if method == "HEAD" || status == 204 || status == 304 {
        return Parsed::Complete(
            Answer {
                status,
                body: Vec::new(),
            },
            start,
        );
    }
    if chunked {
        let mut body = Vec::new();
        let mut at = start;
        loop {
            let Some(line_end) = find(&buffer[at..], b"\r\n") else {
                return Parsed::Incomplete;
            };
            let size_text = String::from_utf8_lossy(&buffer[at..at + line_end]);
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let Ok(size) = usize::from_str_radix(size_text, 16) else {
                return Parsed::Malformed(format!("chunk size {size_text:?}"));
            };
            at += line_end + 2;
            if size == 0 {
                // No trailers from this server: the final CRLF.
                if buffer.len() < at + 2 {
                    return Parsed::Incomplete;
                }
                return Parsed::Complete(Answer { status, body }, at + 2);
            }
            if buffer.len() < at + size + 2 {
                return Parsed::Incomplete;
            }
            body.extend_from_slice(&buffer[at..at + size]);
            at += size + 2;
        }
    }
    match content_length {
        Some(n) if buffer.len() >= start + n => Parsed::Complete(
            Answer {
                status,
                body: buffer[start..start + n].to_vec(),
            },
            start + n,
        ),
        Some(_) => Parsed::Incomplete,
        // Neither: the body runs to the close; the caller reads to EOF.
        None => Parsed::Incomplete,
    }
}

/// What went wrong with one case.
type Failure = String;

/// How many answers had each status code (for the run's summary).
static STATUSES: Mutex<std::collections::BTreeMap<u16, usize>> = Mutex::new(std::collections::BTreeMap::new());

/// Checks one answer: no 5xx, and a well-formed Status when the body is one.
fn check_answer(case: &Case, answer: &Answer, failures: &mut Vec<Failure>) {
    *STATUSES.lock().expect("the statuses").entry(answer.status).or_default() += 1;
    if answer.status >= 500 {
        failures.push(format!(
            "{}: answered {} {}",
            case.label,
            answer.status,
            String::from_utf8_lossy(&answer.body[..answer.body.len().min(400)])
        ));
    }
    let Ok(value) = serde_json::from_slice::<Value>(&answer.body) else {
        return;
    };
    if value["kind"] != "Status" {
        return;
    }
    // A success Status (a delete's) may leave `code` out, as kube's registry does.
    let well_formed = value["apiVersion"] == "v1"
        && if answer.status >= 400 {
            value["code"] == answer.status && value["status"] == "Failure" && value["reason"].is_string()
        } else {
            (value["code"].is_null() || value["code"] == answer.status) && value["status"] == "Success"
        };
    if !well_formed {
        failures.push(format!(
            "{}: malformed Status for HTTP {}: {value}",
            case.label, answer.status
        ));
    }
}

/// A keep-alive connection to the server.
struct Connection {
    stream: Option<TcpStream>,
    port: u16,
}

impl Connection {
    fn stream(&mut self) -> std::io::Result<&mut TcpStream> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(("127.0.0.1", self.port))?;
            stream.set_read_timeout(Some(Duration::from_millis(500)))?;
            stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
        }
        Ok(self.stream.as_mut().expect("just connected"))
    }
}

/// The status of a response whose head is complete at the start of `buffer`, and whether the server closes the
/// connection after it.
fn head(buffer: &[u8]) -> Option<(u16, bool)> {
    let end = find(buffer, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, head.contains("\r\nconnection: close")))
}

/// How a read of the answers ended.
enum Ending {
    /// The server closed the connection (or reset it).
    Closed,
    /// A complete response is at the start of the buffer (keep-alive), or a watch started streaming.
    Answered,
}

/// Reads from `stream` into `buffer` until `done(buffer)`, the server closes, or the answer deadline passes (an
/// error: a hang).
fn read_until(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    mut done: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<Ending> {
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        if done(buffer) {
            return Ok(Ending::Answered);
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(Ending::Closed),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(Ending::Closed),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether `buffer` holds what a case waits for: a complete final response, or the head of a watch's 200.
fn answered(case: &Case, buffer: &[u8]) -> bool {
    let mut rest = buffer;
    loop {
        match parse_response(rest, &case.method) {
            Parsed::Complete(answer, used) if (100..200).contains(&answer.status) => rest = &rest[used..],
            Parsed::Complete(..) | Parsed::Malformed(_) => return true,
            Parsed::Incomplete => return case.may_stream && head(rest).is_some_and(|(status, _)| status == 200),
        }
    }
}

/// Checks every response in `buffer`; a last one cut short by the close (or a watch's stream) by its status and
/// what arrived of its body.
fn check_all(case: &Case, buffer: &[u8], failures: &mut Vec<Failure>) {
    let mut rest = buffer;
    // Later answers are to what followed a request whose body ended early: not to the case's method.
    let mut method = case.method.as_str();
    while !rest.is_empty() {
        match parse_response(rest, method) {
            Parsed::Complete(answer, used) => {
                check_answer(case, &answer, failures);
                rest = &rest[used..];
                if answer.status >= 200 {
                    method = "GET";
                }
            }
            Parsed::Incomplete => {
                match head(rest) {
                    Some((status, _)) => {
                        let body = find(rest, b"\r\n\r\n")
                            .map(|end| rest[end + 4..].to_vec())
                            .unwrap_or_default();
                        check_answer(case, &Answer { status, body }, failures);
                    }
                    None => failures.push(format!(
                        "{}: a partial answer: {:?}",
                        case.label,
                        String::from_utf8_lossy(rest)
                    )),
                }
                return;
            }
            Parsed::Malformed(why) => {
                failures.push(format!("{}: malformed answer: {why}", case.label));
                return;
            }
        }
    }
}

/// Sends a well-framed case on the keep-alive connection and checks its response.
fn send_keep_alive(connection: &mut Connection, case: &Case, failures: &mut Vec<Failure>) {
    let started = Instant::now();
    let fresh = connection.stream.is_none();
    let result = (|| -> std::io::Result<(Ending, Vec<u8>)> {
        let stream = connection.stream()?;
        // The server may stop reading a request it refused early: a failed write still lets us read its answer.
        let _ = stream.write_all(&case.raw);
        let mut buffer = Vec::new();
        let read = read_until(stream, &mut buffer, |b| answered(case, b))?;
        Ok((read, buffer))
    })();
    match result {
        // The server closed a kept-alive connection before reading this request: send it again on a new one.
        Ok((Ending::Closed, buffer)) if buffer.is_empty() && !fresh => {
            connection.stream = None;
            send_keep_alive(connection, case, failures);
        }
        Ok((read, buffer)) => {
            check_all(case, &buffer, failures);
            let close = head(&buffer).is_none_or(|(status, close)| close || status == 200 && case.may_stream);
            if matches!(read, Ending::Closed) || close || case.may_stream {
                connection.stream = None;
            }
        }
        Err(e) => {
            failures.push(format!("{}: no answer after {:?}: {e}", case.label, started.elapsed()));
            connection.stream = None;
        }
    }
}

/// Sends a broken case on a connection of its own, closes it for writing, and reads every answer until the
/// server closes it (or a watch starts streaming).
fn send_alone(port: u16, case: &Case, failures: &mut Vec<Failure>) {
    let started = Instant::now();
    let result = (|| -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_millis(500)))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let _ = stream.write_all(&case.raw);
        let _ = stream.shutdown(Shutdown::Write);
        let mut buffer = Vec::new();
        read_until(&mut stream, &mut buffer, |b| {
            case.may_stream && head(b).is_some_and(|(status, _)| status == 200)
        })?;
        Ok(buffer)
    })();
    match result {
        Ok(_) if case.http2 => {}
        Ok(buffer) => check_all(case, &buffer, failures),
        Err(e) => failures.push(format!("{}: no close after {:?}: {e}", case.label, started.elapsed())),
    }
}

/// Sends a case through reqwest.
fn send_client(client: &reqwest::blocking::Client, base: &str, case: &Case, failures: &mut Vec<Failure>) {
    // CONNECT asks a client for a tunnel, not a request.
    let Ok(method) = reqwest::Method::from_bytes(case.method.as_bytes()) else {
        return;
    };
    if method == reqwest::Method::CONNECT {
        return;
    }
    let url = format!(
        "{base}{}",
        if case.target.starts_with('/') {
            &case.target
        } else {
            "/"
        }
    );
    let mut request = client.request(method, &url).body(case.body.clone());
    for (name, value) in &case.headers {
        if name != "Host" {
            request = request.header(name.as_str(), value.as_slice());
        }
    }
    match request.send() {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = if case.may_stream && status == 200 {
                Vec::new()
            } else {
                match response.bytes() {
                    Ok(bytes) => bytes.to_vec(),
                    Err(e) => {
                        failures.push(format!("{}: body of {status} not read: {e}", case.label));
                        return;
                    }
                }
            };
            check_answer(case, &Answer { status, body }, failures);
        }
        // reqwest refuses some URLs and headers itself; only a server that did not answer is a failure.
        Err(e) if e.is_builder() => {}
        // The server answered (and closed the connection) before it read the whole body: fine, as on raw TCP.
        Err(e) => {
            let mut chain = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                chain.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            // The server answered (and closed the connection) before it read the whole body: fine, as on raw TCP.
            // Closing a socket with unread data in it resets the connection, and the reset may overtake the end of
            // the answer (hyper has no lingering close): with a large unread body, a lost answer is tolerated too.
            let reset = case.body.len() > 64 * 1024 && chain.contains("error decoding response body");
            if !chain.contains("error writing a body to connection") && !reset {
                failures.push(format!("{}: {chain}", case.label));
            }
        }
    }
}

#[test]
fn ten_thousand_malformed_requests_get_no_5xx_no_panic_and_no_hang() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}}),
    )
    .expect(201);
    let target = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "fuzz-target", "namespace": "default", "labels": {"a": "b"}},
        "spec": {"reference": "x"},
    });
    http.post_json(FLUNDERS_V1ALPHA1, &target).expect(201);

    let seed = std::env::var("HTTP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let count = std::env::var("HTTP_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    // `HTTP_FUZZ_ONLY=<index>` replays one case (printing it) to investigate a failure.
    let only: Option<usize> = std::env::var("HTTP_FUZZ_ONLY").ok().and_then(|s| s.parse().ok());
    let count = if only.is_some() { 1 } else { count };
    let bodies = Arc::new(bodies());
    let next = Arc::new(AtomicUsize::new(0));
    let sent: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
    let failures = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let port = server.port();
    let base = server.base_url();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (bodies, next, sent) = (bodies.clone(), next.clone(), sent.clone());
            let (failures, base) = (failures.clone(), base.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::builder()
                    .timeout(ANSWER_TIMEOUT)
                    .build()
                    .expect("an HTTP client");
                let mut connection = Connection { stream: None, port };
                let mut found = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        break;
                    }
                    let case = generate(seed, only.unwrap_or(index), &bodies);
                    if only.is_some() {
                        let shown = &case.raw[..case.raw.len().min(2_000)];
                        eprintln!(
                            "{}\n{:?}\n{}",
                            case.label,
                            case.transport,
                            String::from_utf8_lossy(shown)
                        );
                    }
                    sent[case.transport as usize].fetch_add(1, Ordering::Relaxed);
                    match case.transport {
                        Transport::KeepAlive => send_keep_alive(&mut connection, &case, &mut found),
                        Transport::Alone => send_alone(port, &case, &mut found),
                        Transport::Client => send_client(&client, &base, &case, &mut found),
                    }
                }
                failures.lock().expect("the failures").extend(found);
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a fuzz worker");
    }
    let elapsed = started.elapsed();
    let by_transport = |t: Transport| sent[t as usize].load(Ordering::Relaxed);
    eprintln!(
        "http fuzz: {count} requests (seed {seed:#x}; {} keep-alive, {} alone, {} client) in {elapsed:?}",
        by_transport(Transport::KeepAlive),
        by_transport(Transport::Alone),
        by_transport(Transport::Client)
    );
    eprintln!(
        "http fuzz: answers by status: {:?}",
        STATUSES.lock().expect("the statuses")
    );
    let failures = failures.lock().expect("the failures");
    assert!(
        failures.is_empty(),
        "{} of {count} requests failed (seed {seed:#x}):\n{}",
        failures.len(),
        failures.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );

    // Still alive and serving.
    assert_eq!(http.get("/readyz").status, 200, "readyz after the fuzz run");
    let after = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "after-fuzz", "namespace": "fuzz"}, "spec": {"reference": "x"},
    });
    http.post_json("/apis/wardle.example.com/v1alpha1/namespaces/fuzz/flunders", &after)
        .expect(201);
    let pid = server.pid().expect("the server runs");
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(!state.contains(") Z "), "the server process is a zombie: {state}");
    let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).take(10).collect();
    assert!(panics.is_empty(), "the server log shows panics:\n{}", panics.join("\n"));
}

/// Sends `raw` on `stream` and reads one response (with a Content-Length body); returns its head and body.
fn exchange(stream: &mut TcpStream, raw: &[u8]) -> (String, Vec<u8>) {
    stream.write_all(raw).expect("send the request");
    let mut buffer = Vec::new();
    read_until(stream, &mut buffer, |b| {
        matches!(parse_response(b, "POST"), Parsed::Complete(..))
    })
    .expect("an answer");
    let end = find(&buffer, b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    (head, buffer[end + 4..].to_vec())
}

#[test]
fn an_answer_that_leaves_the_request_body_unread_closes_the_connection() {
    let server = Server::start(&["wardle"]);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a read timeout");
    // A body the handlers read (a create): the connection carries the next request.
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "kept-alive"}, "spec": {"reference": "x"},
    })
    .to_string();
    let create = format!(
        "POST {FLUNDERS_V1ALPHA1} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{flunder}",
        flunder.len()
    );
    let (head, _) = exchange(&mut stream, create.as_bytes());
    assert!(head.starts_with("http/1.1 201"), "{head}");
    assert!(!head.contains("\r\nconnection: close"), "{head}");
    // A body no handler reads (no such path): the answer says the connection closes, so that a client does not
    // send its next request on it.
    let body = vec![b'x'; 1024 * 1024];
    let mut unread = b"POST /nonesuch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec();
    unread.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    unread.extend_from_slice(&body);
    let (head, _) = exchange(&mut stream, &unread);
    assert!(head.starts_with("http/1.1 404"), "{head}");
    assert!(head.contains("\r\nconnection: close"), "{head}");
}
