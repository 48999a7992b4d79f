//! wasm-apiserver: a Kubernetes-style API server whose resource types are WebAssembly components.
//!
//! This crate is the binary's: [`options`] (the flags of a running server, and how they assemble one),
//! [`kubeconfig`], [`scaffold`] (`plugin new`), [`push`] (`plugin push`) and [`snapshot`]. The server itself is a stack of crates, each one concept and
//! each using only those below it (docs/architecture.md draws them), bottom up:
//!
//! - `apimachinery`, `component-base`, `storage`, `schema` and `plugin-runtime`: pure Kubernetes types and rules,
//!   metrics, storage and the watch cache, structural schemas and CEL, and the sandbox plugins run in;
//! - `authn`: who a user is and the authenticators;
//! - `rest`: a served group of types (`Plugin`) and the one `Strategy` trait of its types;
//! - `builtin`: the server's own types, as plugins with native strategies;
//! - `registry`: the generic store over storage and a strategy, with admission, garbage collection and quota;
//! - `authz` (authorization) and `loader` (the plugin directory);
//! - `endpoints`: request info, negotiation, the REST handlers, discovery, OpenAPI;
//! - `audit` and `tenants`;
//! - `server`: listeners, TLS, the handler chain (filters), health.

// `ApiError` carries a whole Kubernetes `Status` (message, details, causes, a continue token): results that may fail
// with one are large, and clippy says so at each of the many functions returning one. Errors are the rare path and
// the copies cost nanoseconds; boxing would add an allocation to every error for nothing measurable.
#![allow(clippy::result_large_err)]

pub mod kubeconfig;
pub mod options;
pub mod push;
pub mod scaffold;
pub mod snapshot;
pub mod trace_layer;
pub mod tracing_setup;
