//! Plugins: WebAssembly components that define resource types.
//!
//! [`runtime`] holds the engine shared by all plugins; [`component`] loads one component, detects its verbs from its
//! exports and calls it through a pool of sandboxed instances; [`calls`] are its typed calls, at the edge where the
//! WIT types ([`contract`]) become the host's ([`types`]); [`host`] implements the imports a plugin may use;
//! [`scaffold`] is the `plugin new` command. A component becomes a strategy of the registry through
//! [`crate::rest::strategy::ComponentStrategy`]; the plugin directory and `plugin check` are in [`crate::loader`].
pub mod bindings;
pub mod budget;
pub mod cache;
pub mod call;
pub mod calls;
pub mod component;
pub mod contract;
pub mod conversions;
pub mod fair;
pub mod host;
pub mod pool;
pub mod runtime;
pub mod scaffold;
pub mod scheme;
#[cfg(test)]
mod testing;
pub mod types;
pub mod watch_encodings;

/// A message on one line, its whitespace runs made single spaces (wasmtime's errors span several lines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
