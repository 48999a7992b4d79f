//! Plugins: WebAssembly components that define resource types.
pub mod bindings;
pub mod scheme;
