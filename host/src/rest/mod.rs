//! What the registry serves, as `k8s.io/apiserver/pkg/registry/rest` describes it: a served group of resource types
//! ([`Plugin`]) and the [`Strategy`] of its types, which the built-in types ([`crate::builtin`]) implement directly
//! and a component through [`ComponentStrategy`]. The generic store that uses them is [`crate::registry`].
pub mod conversions;
pub mod plugin;
pub mod strategy;
pub mod watch_encodings;

pub use plugin::Plugin;
pub use strategy::{ComponentStrategy, Strategy};
