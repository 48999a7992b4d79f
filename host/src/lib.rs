//! wasm-apiserver: a Kubernetes-style API server whose resource types are WebAssembly components.
//!
//! A request flows through [`server`] (the handler chain) to [`endpoints`] (request info, negotiation, REST
//! handlers, discovery, OpenAPI), into the [`registry`] (the generic store calling the plugin's strategy) and
//! [`storage`]. [`plugins`] loads components and calls them in a sandbox; [`apimachinery`] holds the pure Kubernetes
//! logic (selectors, name validation).
pub mod apimachinery;
pub mod endpoints;
pub mod options;
pub mod plugins;
pub mod registry;
pub mod server;
pub mod storage;
