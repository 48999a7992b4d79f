//! The served plugins' own admission (`mutating-admission` and `validating-admission` of the WIT contract): each
//! plugin whose rules match a write is called, in group order, as kube calls the admission plugins compiled into it.

use std::sync::Arc;

use serde_json::Value;

use crate::attributes::Attributes;
use crate::chain::{Chain, Check, Mutated, Mutates};
use apimachinery::plugin::PluginError;
use apimachinery::status::ApiError;
use rest::plugin::Plugin;
use storage::BoxFuture;

/// The plugins' mutating and validating admission. Of the metadata a plugin's mutation returns, only labels and
/// annotations are kept.
pub struct PluginAdmission;

/// The served plugins whose `mutating` (or else validating) rules match the write.
fn matching<'a>(a: &'a Attributes<'a>, mutating: bool) -> impl Iterator<Item = &'a Arc<Plugin>> + 'a {
    a.served.iter().filter(move |p| {
        let (exported, rules) = if mutating {
            (p.exports.mutating, &p.mutating_rules)
        } else {
            (p.exports.validating, &p.validating_rules)
        };
        exported && rules.matches(a.group, a.resource, a.subresource, a.operation)
    })
}

/// A plugin's failure in admission of the write, as the error to answer.
fn failure(a: &Attributes<'_>, e: PluginError, name: &str) -> ApiError {
    e.into_api_error(a.group, a.resource, a.kind, name)
}

impl Check for PluginAdmission {
    fn name(&self) -> &'static str {
        "PluginAdmission"
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move {
            let mut warnings = Vec::new();
            let request = a.plugin_request();
            for p in matching(a, false) {
                warnings.extend(
                    p.strategy
                        .validate_admission(&request)
                        .map_err(|e| failure(a, e, a.name))?,
                );
            }
            Ok(warnings)
        })
    }

    fn mutates<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Mutates> {
        Box::pin(async move {
            let mut most = Mutates::No;
            for p in matching(a, true) {
                if !Arc::ptr_eq(p, a.plugin) {
                    return Mutates::Yes;
                }
                most = Mutates::ByServingPlugin;
            }
            most
        })
    }

    fn mutate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Option<Mutated>, ApiError>> {
        Box::pin(async move {
            let Some(first) = a.object else {
                return Ok(None);
            };
            let mut object: Option<Value> = None;
            for p in matching(a, true) {
                let current = object.as_ref().unwrap_or(first);
                let name = apimachinery::object::name(current).to_owned();
                let request = a.with_object(&name, current).plugin_request();
                if let Some(mutated) = p.strategy.admit(&request).map_err(|e| failure(a, e, &name))? {
                    object = Some(apimachinery::object::keep_host_metadata(current, mutated));
                }
            }
            Ok(object.map(|object| Mutated {
                object,
                warnings: Vec::new(),
            }))
        })
    }
}

impl Default for Chain {
    /// The plugins' admission alone: the chain of a registry no server assembled (kube's chain without its
    /// compiled-in plugins).
    fn default() -> Chain {
        Chain::new(vec![Arc::new(PluginAdmission)])
    }
}
