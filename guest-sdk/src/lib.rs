//! The Rust SDK for wasm-apiserver plugins.
//!
//! A plugin is a WebAssembly component that serves one API group: it exports the interfaces of the WIT contract
//! (package `wasm-apiserver:plugin@0.1.1`) that match the verbs it supports, and the host does everything generic.
//! This crate gives a plugin author:
//!
//! - [`bindings!`]: generates the plugin's bindings for a ready world (`plugin`, `crud-plugin`, `full-plugin`) or a
//!   world of its own, sharing the contract's [`types`] and [`host`] modules with this crate;
//! - [`Object`] and [`ObjectMeta`]: typed objects that keep the fields they do not know;
//! - [`field`]: field errors built like `k8s.io/apimachinery/pkg/util/validation/field`;
//! - [`error`]: constructors for the contract's [`Error`] and helpers for [`Validation`];
//! - [`client`]: typed reads through the host (`get`, `list`) and logging;
//! - [`pipeline`]: the one-call create (`create-pipeline`) derived from the plugin's strategy.
//!
//! See the crate's README for a complete example.

pub mod client;
pub mod error;
pub mod field;
pub mod meta;
pub mod object;
pub mod pipeline;

/// The generated bindings of the contract's imports. Generated code is FFI glue and needs `unsafe`.
#[allow(unsafe_code, missing_docs, clippy::all)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/sdk_bindings.rs"));
}

/// The contract's shared types (`wasm-apiserver:plugin/types`): errors, field errors, validations, admission requests.
pub use bindings::wasm_apiserver::plugin::types;

/// The host's imports (`wasm-apiserver:plugin/host`): `log`, `get` and `list`. See [`client`] for typed versions.
pub use bindings::wasm_apiserver::plugin::host;

pub use client::request_user;
pub use error::{Error, Validation};
pub use field::{FieldError, FieldErrorKind, FieldPath};
pub use meta::{ObjectMeta, OwnerReference};
pub use object::{decode, encode, Object};
pub use types::{AdmissionRequest, AdmissionRule, Operation, User, UserInfo};

include!(concat!(env!("OUT_DIR"), "/bindings_macro.rs"));

/// Re-exports used by the code [`bindings!`] generates; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;

    /// Makes a panic log its message (with its location) through the host at `error` level before it traps, so
    /// the client's error and the server's log say why the call failed. Without it, Rust's default panic hook
    /// would first ask for the environment and stderr, which the sandbox does not provide. Run once per instance,
    /// before the first export, by the static constructor [`bindings!`](crate::bindings) adds to the plugin.
    pub extern "C" fn install_panic_hook() {
        std::panic::set_hook(Box::new(|info| {
            crate::host::log(crate::host::LogLevel::Error, &info.to_string());
        }));
    }
}
