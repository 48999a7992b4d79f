//! wasm-apiserver: a Kubernetes-style API server whose resource types are WebAssembly components.
//!
//! A request flows through [`server`] (the handler chain) to [`endpoints`] (request info, negotiation, REST
//! handlers, discovery, OpenAPI), into the [`registry`] (the generic store calling the plugin's strategy) and the
//! `storage` crate. Below this crate, in crates of their own: `plugin-runtime` (components loaded and called in a
//! sandbox), `apimachinery` (the pure Kubernetes logic: selectors, names, validation, the `Status` error, object
//! metadata), `component-base` (metrics, the memory helpers of waiting threads), `storage` (the `Storage` trait, its
//! backends and decorators, the watch cache) and `schema` (structural schemas, CEL, the field manager). See
//! docs/architecture.md.
//!
//! # Layers
//!
//! The top-level modules of this crate form layers, listed bottom up. A module uses only modules of the layers below
//! its own; modules that share a layer do not use each other. The test `layers_import_only_downward` (src/layers.rs,
//! which holds the same list) fails on any import that runs up, or across a layer.
//!
//! 1. [`authn`]: who a user is (`UserInfo`, the system users and groups) and the authenticators; this low because
//!    the registry's requests and admission carry the user.
//! 2. [`rest`]: a served group of types (`Plugin`) and the one `Strategy` trait of its types; components implement
//!    it through `ComponentStrategy`.
//! 3. [`builtin`]: the host's own types (namespaces, RBAC, access reviews, tenants, CRD files), as plugins with
//!    native strategies.
//! 4. [`registry`]: the generic store over storage and a plugin's strategy, with admission, garbage collection and
//!    quota; it maps storage and plugin failures onto `ApiError`.
//! 5. [`authz`]: authorization (RBAC over the registry's objects, webhook, escalation checks, the access reviews'
//!    answers); and, in the same layer, [`loader`]: the watched plugin directory and `plugin check`, which build
//!    plugins and CRD types and swap them into a registry.
//! 6. [`endpoints`]: the request context and info, REST handlers, negotiation, discovery, OpenAPI.
//! 7. [`audit`]: the audit log of requests and responses; and, in the same layer, [`tenants`]: the tenants, each a
//!    registry, plugin directory and API behind its own limits, and how one is assembled.
//! 8. [`server`]: listeners, TLS, the handler chain (filters), health.
//! 9. [`options`] (flags to a running server), [`kubeconfig`] and [`scaffold`] (`plugin new`): what the binary's
//!    commands call.

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
pub mod registry;
pub mod rest;
pub mod scaffold;
pub mod server;
pub mod tenants;

#[cfg(test)]
mod layers;
