//! End-to-end test harness for `wasm-apiserver`.
//!
//! The tests in `tests/tests/*.rs` start the real server binary (see [`Server`]) on a loopback port with a temporary
//! plugin and data directory, then drive it with the real `kubectl` (see [`Server::kubectl`]) and with raw HTTP (see
//! [`Server::http`]). Nothing here sleeps for synchronisation: waits poll a condition with a deadline
//! ([`wait_until`]) or read a stream with a deadline ([`JsonStream::next`]).
//!
//! Locations, overridable through the environment:
//! - the server binary: `$WASM_APISERVER_BIN`, else `<target>/debug/wasm-apiserver`;
//! - the plugins: `<target>/plugins/<name>.wasm` (built by `scripts/build-plugins.sh`);
//! - kubectl: `$KUBECTL`, else `kubectl` on `PATH`; it must be kubectl 1.37.
//!
//! `<target>` is `$CARGO_TARGET_DIR` when set, else the workspace's `target/` directory.
//!
//! Tests that compare with, or sit behind, a real kube-apiserver start it with [`KubeApiserver`] (binary in
//! `$KUBE_APISERVER`; they are skipped when it is unset).
//!
//! With `E2E_STORAGE=etcd`, every server stores its data in a real etcd of its own (see [`Etcd`]) instead of the
//! embedded store.

mod etcd;
mod http;
mod kube_apiserver;
mod kubectl;
mod registry;
mod server;
mod stream;
mod table;
mod webhook;

use std::time::{Duration, Instant};

pub use etcd::Etcd;
pub use http::{Http, Reply};
pub use kube_apiserver::{kube_apiserver_binary, Ca, KubeApiserver};
pub use kubectl::{kubectl_path, KubectlAt, KubectlWatch};
pub use registry::{Registry, RegistryAuth};
pub use server::{free_port, server_binary, target_dir, Server};
pub use stream::JsonStream;
pub use table::parse_table;
pub use webhook::{self_signed_tls, Verdict, WebhookServer};

/// The collection URL of v1beta1 flunders in the `default` namespace.
pub const FLUNDERS_V1BETA1: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
/// The collection URL of v1alpha1 flunders in the `default` namespace.
pub const FLUNDERS_V1ALPHA1: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
/// The collection URL of (cluster-scoped) v1alpha1 fischers.
pub const FISCHERS_V1ALPHA1: &str = "/apis/wardle.example.com/v1alpha1/fischers";
/// The collection URL of notes (the `partial` plugin) in the `default` namespace.
pub const NOTES_V1: &str = "/apis/partial.example.com/v1/namespaces/default/notes";

/// A finished command's exit code, standard output and standard error, for an assertion's message.
pub fn output_text(output: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Polls `condition` every 50 ms until it returns `true` or `timeout` has passed; returns whether it became true.
///
/// The condition is always evaluated at least once, and once more after the deadline, so a slow last poll is not
/// reported as a timeout.
pub fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return condition();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A v1beta1 flunder in the `default` namespace referring to the flunder `flunder_reference`.
pub fn flunder_v1beta1(name: &str, flunder_reference: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"flunderReference": flunder_reference, "referenceType": "Flunder"},
    })
}

/// GETs `path` as plain JSON and with `pretty=true`; asserts both carry the same JSON and that the plain answer is
/// exactly its compact serialization (what the wire paths, written from stored bytes, must produce); returns it.
pub fn plain_equals_pretty(server: &Server, path: &str) -> serde_json::Value {
    let join = if path.contains('?') { '&' } else { '?' };
    let plain = server.http().get(path);
    plain.expect(200);
    assert_eq!(plain.content_type, "application/json", "{path}");
    let pretty = server.http().get(&format!("{path}{join}pretty=true"));
    assert_eq!(
        plain.json,
        *pretty.expect(200),
        "{path}: the plain and the pretty answer differ"
    );
    assert_eq!(
        plain.text,
        serde_json::to_string(&pretty.json).expect("serialize"),
        "{path}: the plain answer is not the compact serialization of the pretty one"
    );
    plain.json
}

/// Creates flunders `f0`..`f<count>` (v1beta1), some with labels and annotations JSON escapes, and one by an apply.
pub fn create_escaped_flunders(server: &Server, count: usize) {
    for i in 0..count {
        let mut flunder = crate::flunder_v1beta1(&format!("f{i}"), "x");
        if i % 2 == 0 {
            flunder["metadata"]["labels"] = serde_json::json!({"app": "wire", "n": i.to_string()});
            flunder["metadata"]["annotations"] = serde_json::json!({"note": "a \"quoted\" } and \\ é"});
        }
        server.http().post_json(FLUNDERS_V1BETA1, &flunder).expect(201);
    }
    server
        .http()
        .patch(
            &format!("{FLUNDERS_V1BETA1}/applied?fieldManager=wire"),
            "application/apply-patch+yaml",
            &crate::flunder_v1beta1("applied", "y"),
        )
        .expect(201);
}

/// A v1alpha1 fischer (cluster-scoped) that bans the given flunder names. As in sample-apiserver, the list is a
/// top-level field (a Fischer has no `spec`).
pub fn fischer_v1alpha1(name: &str, disallowed_flunders: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Fischer",
        "metadata": {"name": name},
        "disallowedFlunders": disallowed_flunders,
    })
}

/// Whether a table cell looks like a kubectl age (`5s`, `3m2s`, `4h`...), not a timestamp.
pub fn is_age(cell: &str) -> bool {
    !cell.is_empty()
        && cell.chars().next().is_some_and(|c| c.is_ascii_digit())
        && cell.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
}

/// Returns the string at the JSON pointer `pointer` in `value` (for example `/spec/referenceType`), or `""` when it
/// is missing or not a string, so assertions show the whole object instead of panicking on a lookup.
pub fn str_at<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(serde_json::Value::as_str).unwrap_or("")
}

/// A small deterministic pseudo-random source (SplitMix64) for seeded tests: the same seed gives the same run.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The value of the first sample in Prometheus text whose line starts with `series` (a name, with its labels when
/// it has some), if any.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The wardle plugins: sample-apiserver's group in Rust (`plugins/wardle`) and in Go (`plugins/wardle-go`), which
/// must behave the same.
pub const WARDLES: [&str; 2] = ["wardle", "wardle-go"];

/// Runs each named test (a function taking the plugin's name) on both wardles: `rust::<test>` loads
/// `plugins/wardle`, `go::<test>` loads `plugins/wardle-go`.
#[macro_export]
macro_rules! on_both_wardles {
    ($($test:ident),* $(,)?) => {
        mod rust {
            $(#[test]
            fn $test() {
                super::$test($crate::WARDLES[0])
            })*
        }
        mod go {
            $(#[test]
            fn $test() {
                super::$test($crate::WARDLES[1])
            })*
        }
    };
}
