//! Plugins: WebAssembly components that define resource types.
//!
//! [`runtime`] holds the engine shared by all plugins; [`plugin`] loads one component, detects its verbs from its
//! exports and calls it through a pool of sandboxed instances; [`host`] implements the imports a plugin may use;
//! [`native`] is the strategy of a type the host serves itself; [`scaffold`] is the `plugin new` command. The plugin
//! directory and `plugin check` are in [`crate::loader`].
pub mod bindings;
pub mod budget;
pub mod cache;
pub mod contract;
pub mod conversions;
pub mod fair;
pub mod host;
pub mod native;
pub mod plugin;
pub mod runtime;
pub mod scaffold;
pub mod scheme;
pub mod types;
pub mod watch_encodings;

/// A message on one line, its whitespace runs made single spaces (wasmtime's errors span several lines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
