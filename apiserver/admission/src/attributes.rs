//! One write as every check of the chain sees it (kube's `admission.Attributes`).

use std::sync::Arc;

use serde_json::Value;

use apimachinery::plugin::AdmissionRequest;
use apimachinery::scheme::ResourceInfo;
use authn::UserInfo;
use rest::plugin::Plugin;

/// One write, as every check of the chain sees it (kube's `admission.Attributes`): the write as a plugin's admission
/// is told it ([`AdmissionRequest`], whose fields read through this), with the kind, the whole user (uid and extra
/// too), the plugin serving the resource and the plugins served with it.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    /// The write: operation, group, version (objects are in it), resource, subresource, namespace, name, the object
    /// to be stored (`None` for a delete), the stored one (updates and deletes), dry run, and the user's name and
    /// groups.
    pub write: AdmissionRequest<'a>,
    /// The kind, for error messages.
    pub kind: &'a str,
    /// Who writes (the impersonated user, when impersonating).
    pub user: &'a UserInfo,
    /// The resource written: its versions, scope and schema.
    pub info: &'a ResourceInfo,
    /// The plugin serving it, which converts its objects between versions.
    pub plugin: &'a Arc<Plugin>,
    /// Every served plugin, in group order, as the write started: the set whose admission applies to it and whose
    /// resources a policy's parameters may be.
    pub served: &'a [Arc<Plugin>],
}

impl<'a> std::ops::Deref for Attributes<'a> {
    type Target = AdmissionRequest<'a>;

    fn deref(&self) -> &AdmissionRequest<'a> {
        &self.write
    }
}

impl<'a> Attributes<'a> {
    /// The write of `user`, of an object of resource `info` served by `plugin`, one of `served`.
    pub fn new(
        write: AdmissionRequest<'a>,
        user: &'a UserInfo,
        info: &'a ResourceInfo,
        plugin: &'a Arc<Plugin>,
        served: &'a [Arc<Plugin>],
    ) -> Attributes<'a> {
        Attributes {
            write,
            kind: &info.kind,
            user,
            info,
            plugin,
            served,
        }
    }

    /// The same write with another object and name (after a mutation).
    pub fn with_object(self, name: &'a str, object: &'a Value) -> Attributes<'a> {
        Attributes {
            write: AdmissionRequest {
                name,
                object: Some(object),
                ..self.write
            },
            ..self
        }
    }

    /// What a plugin's admission is told.
    pub fn plugin_request(&self) -> AdmissionRequest<'a> {
        self.write
    }
}
