//! Admission, as `k8s.io/apiserver/pkg/admission`: what every write passes between decoding and storage. One write
//! is described once by [`Attributes`] (kube's `admission.Attributes`); each check is a [`Check`] (kube's admission
//! plugin: validating, and optionally mutating); the [`Chain`] runs them in the order they were registered, every
//! mutating check first, then every validating one, as kube's `chainAdmissionHandler`. The registry calls the chain
//! and knows nothing of what is in it; the server registers the checks in one place (`tenants::factory`), in kube's
//! order:
//!
//! 1. **NamespaceLifecycle** ([`namespace`]): no new content in a terminating or missing namespace; the first
//!    mutating check too (it validates before any mutation applies);
//! 2. the server's other built-in checks: **DirectoryTenants** (`tenants::admission`: the default tenant and the
//!    tenant directories' tenants are the host's) and **RBAC escalation** (`authz::escalation`: no granting of
//!    permissions one does not hold);
//! 3. **PluginAdmission** ([`plugins`]): the served plugins' own mutating and validating admission, whose rules
//!    match the write, in group order;
//! 4. **ClusterAdmission** ([`cluster`]): the tenant's (and the cluster's) mutating admission webhooks, then its
//!    ValidatingAdmissionPolicies and validating admission webhooks;
//! 5. **ResourceQuota** ([`resource_quota`]): a create counted against the namespace's object count quotas, last
//!    (kube's order: its usage is raised only for a write every other check let through).
//!
//! So the mutating phase runs the mutating built-ins, the plugins' mutating admission, then the mutating webhooks;
//! the validating phase the validating built-ins, the plugins' validating admission, then the policies and
//! validating webhooks. Between the two phases the store makes its own steps (managed fields, generated names, the
//! strategy's preparation and validation); after them it reserves the tenant's storage quota as it writes.
//! Deletes run the validating phase only, as kube runs no mutating admission on a DELETE's object. The checks read
//! the tenant's objects through the [`Reader`] the registry lends them.

#![allow(clippy::result_large_err)]

mod attributes;
mod chain;
pub mod cluster;
pub mod config;
pub mod namespace;
mod objects;
pub mod plugins;
pub mod policy;
pub mod remote;
mod request;
pub mod resource_quota;
pub mod webhook;

pub use attributes::Attributes;
pub use chain::{Chain, Check, Mutated, Mutates};
pub use cluster::ClusterAdmission;
pub use objects::{Freshness, Reader};
