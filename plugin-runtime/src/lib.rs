//! The plugin runtime: WebAssembly components that define resource types, run in a sandbox.
//!
//! [`runtime`] holds the engine shared by all plugins and its compile cache ([`cache`]); [`component`] loads one
//! component, links it with the host's imports ([`host`]: logging and declared reads; everything else traps) and
//! detects its verbs from its exports; its instances wait in a [`pool`]; a [`call`] runs in one within the tenant's
//! [`budget`], on the async worker or a lane of the [`fair`] share; [`calls`] are its typed calls, at the edge where
//! the WIT types ([`bindings`], [`contract`]) become the host's ([`types`], [`scheme`]).
//!
//! Nothing here knows the registry: the apiserver makes a component the strategy of its types through its own
//! adapter (`rest::ComponentStrategy` in the `wasm-apiserver` crate).
pub mod bindings;
pub mod budget;
pub mod cache;
pub mod call;
pub mod calls;
pub mod component;
pub mod contract;
pub mod fair;
pub mod file;
pub mod host;
pub mod pool;
pub mod runtime;
pub mod scheme;
#[cfg(test)]
mod testing;
pub mod types;

/// A message on one line, its whitespace runs made single spaces (wasmtime's errors span several lines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
