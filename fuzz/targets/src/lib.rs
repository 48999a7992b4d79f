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

pub mod mutation;

use serde_json::{json, Value};

use apimachinery::status::ApiError;
use endpoints::negotiate::{encode, Encoding, Output};

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
pub(crate) fn client_error(e: &ApiError, what: &str) {
    assert!((400..500).contains(&e.code), "{what}: {} for bad input: {e:?}", e.code);
    status_holds(e);
}

/// The `Status` of an error carries its code, reason and message, and one cause per cause.
pub(crate) fn status_holds(e: &ApiError) {
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

mod body;
mod plugins;
mod request;
mod selectors;

pub use body::request_body;
pub use plugins::{plugin_object, plugin_results, plugin_scheme};
pub use request::{continue_token, request_info};
pub use selectors::{field_selector, label_selector};

#[cfg(test)]
mod tests;
