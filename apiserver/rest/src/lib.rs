//! What the registry serves, as `k8s.io/apiserver/pkg/registry/rest` describes it: a served group of resource types
//! ([`Plugin`]) and the [`Strategy`] of its types, which the built-in types (`builtin`) implement directly
//! and a component through a [`Component`] (the loader's adapter of the plugin runtime's components). The generic store that uses them is `registry`.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]
pub mod conversions;
pub mod plugin;
pub mod strategy;
pub mod watch_encodings;

pub use plugin::{Component, Declared, Plugin};
pub use strategy::Strategy;
