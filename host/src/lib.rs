//! wasm-apiserver: a Kubernetes-style API server whose resource types are WebAssembly components.
//!
//! A request flows through [`server`] (the handler chain) to [`endpoints`] (request info, negotiation, REST
//! handlers, discovery, OpenAPI), into the [`registry`] (the generic store calling the plugin's strategy) and
//! [`storage`]. [`plugins`] loads components and calls them in a sandbox; [`apimachinery`] holds the pure Kubernetes
//! logic (selectors, name validation, the `Status` error).
//!
//! # Layers
//!
//! The top-level modules form layers, listed bottom up. A module uses only modules of the layers below its own;
//! modules that share a layer do not use each other. The test `layers_import_only_downward` (src/layers.rs, which
//! holds the same list) fails on any import that runs up, or across a layer.
//!
//! 1. [`metrics`]: the process-wide Prometheus registry. Cross-cutting, so at the bottom: every layer records into it.
//! 2. [`apimachinery`]: the Kubernetes API machinery without I/O: selectors, validation, field errors, and
//!    [`ApiError`](apimachinery::status::ApiError), the one error type, rendered as a `Status`.
//! 3. [`storage`]: the `Storage` trait, etcd, the embedded store, the watch cache (cacher), encryption at rest and
//!    the key layout ([`storage::keys`]); and, in the same layer, [`authn`]: who a user is (`UserInfo`, the system
//!    users and groups) and the authenticators. Neither needs the other; authn sits this low because the registry's
//!    requests and admission carry the user.
//! 4. [`plugins`]: the wasmtime runtime, the plugin contract (WIT bindings, scheme) and the native strategy a
//!    host-served type implements in place of a component.
//! 5. [`builtin`]: the host's own types (namespaces, RBAC, access reviews, tenants, CRD files), as plugins with
//!    native strategies.
//! 6. [`registry`]: the generic store over storage and a plugin's strategy, with admission, garbage collection,
//!    structural schemas, CEL and field management; it maps storage and plugin failures onto `ApiError`.
//! 7. [`authz`]: authorization (RBAC over the registry's objects, webhook, escalation checks, the access reviews'
//!    answers); and, in the same layer, [`loader`]: the watched plugin directory and `plugin check`, which build
//!    plugins and CRD types and swap them into a registry.
//! 8. [`endpoints`]: the request context and info, REST handlers, negotiation, discovery, OpenAPI.
//! 9. [`audit`]: the audit log of requests and responses; and, in the same layer, [`tenants`]: the tenants, each a
//!    registry, plugin directory and API behind its own limits.
//! 10. [`server`]: listeners, TLS, the handler chain (filters), health.
//! 11. [`options`] (flags to a running server) and [`kubeconfig`]: what the binary's commands call.

// `ApiError` carries a whole Kubernetes `Status` (message, details, causes, a continue token): results that may fail
// with one are large, and clippy says so at each of the many functions returning one. Errors are the rare path and
// the copies cost nanoseconds; boxing would add an allocation to every error for nothing measurable.
#![allow(clippy::result_large_err)]

pub mod audit;
pub mod authn;
pub mod authz;
pub mod builtin;
pub mod endpoints;
pub mod kubeconfig;
pub mod loader;

pub mod options;
pub mod plugins;
pub mod registry;
pub mod server;
pub mod tenants;

#[cfg(test)]
mod layers;
