//! What the checks read of the tenant's stored objects: the namespace of a write, the admission configuration,
//! a policy's parameters. The registry lends it ([`Reader`]), as kube's admission plugins are given informers and
//! clients by their initializers.

use std::sync::Arc;

use apimachinery::status::ApiError;
use storage::{BoxFuture, KeyValue};

/// How fresh a read must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// From the resource's watch cache, which may be a little behind, when it has one (and, for one object, has
    /// it); else from storage.
    Cached,
    /// From storage.
    Latest,
}

/// Reads of the tenant's stored objects (in their storage version).
pub trait Reader: Send + Sync {
    /// Whether the resource's reads are served from a watch cache (cheap to repeat on every write).
    fn cached(&self, group: &str, resource: &str) -> bool;

    /// The objects of a resource, in one namespace or all.
    fn list<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
        freshness: Freshness,
    ) -> BoxFuture<'a, Result<Vec<Arc<KeyValue>>, ApiError>>;

    /// One object.
    fn get<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
        name: &'a str,
        freshness: Freshness,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ApiError>>;
}
