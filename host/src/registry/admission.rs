//! The host's own admission checks, run on every write after the plugins' admission (kube's compiled-in admission
//! plugins): namespace lifecycle ([`crate::registry::namespaces`]) and RBAC's privilege-escalation prevention
//! ([`crate::authz::escalation`]).

use serde_json::Value;

use crate::authn::UserInfo;
use apimachinery::status::ApiError;
use storage::BoxFuture;

/// What a write does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create (or a create-on-update).
    Create,
    /// An update or patch.
    Update,
}

/// One write, as an admission check sees it.
pub struct Request<'a> {
    /// What the write does.
    pub operation: Operation,
    /// The API group.
    pub group: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The namespace of a namespaced object.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// The object to be stored.
    pub object: &'a Value,
    /// The stored object, for updates.
    pub old: Option<&'a Value>,
    /// Who writes.
    pub user: &'a UserInfo,
}

/// A host admission check.
pub trait HostAdmission: Send + Sync {
    /// Allows the write or refuses it with the error to answer.
    fn admit<'a>(&'a self, request: &'a Request<'a>) -> BoxFuture<'a, Result<(), ApiError>>;
}
