//! What every part of the server shares and none owns, as Kubernetes' `k8s.io/component-base`: the process-wide
//! [`metrics`] registry that every layer records into, and the [`memory`] helpers that make threads which wait for
//! work give their allocator pages back; and the [`trace`] target and hooks of distributed tracing.

pub mod audit;
pub mod memory;
pub mod metrics;
pub mod trace;
