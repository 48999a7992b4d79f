//! The contract as the host checks it: the exported interface names, which verbs a set of exports serves, the
//! conversion of a plugin's `scheme.info()` into the host's [`GroupInfo`], and of the WIT types to and from the host's
//! ([`apimachinery::plugin`]).

use anyhow::{bail, Context as _};

use super::bindings::exports::wasm_apiserver::plugin as ex;
use super::bindings::wasm_apiserver::plugin::types as wit;
use apimachinery::plugin::{
    AdmissionRequest, AdmissionRule, FieldError, FieldErrorReason, Operation, PluginError, Rejection, UserInfo,
    Validation,
};
use apimachinery::scheme::{Exports, GroupInfo, ResourceInfo, VersionInfo};

/// The exported interface names, as found in a component's exports.
pub mod iface {
    /// The package prefix.
    pub const PACKAGE: &str = "wasm-apiserver:plugin";
    /// The contract's version.
    pub const VERSION: &str = "0.1.1";
    /// `scheme` (required).
    pub const SCHEME: &str = "scheme";
    /// `create-strategy`.
    pub const CREATE: &str = "create-strategy";
    /// `update-strategy`.
    pub const UPDATE: &str = "update-strategy";
    /// `delete-strategy`.
    pub const DELETE: &str = "delete-strategy";
    /// `lister`.
    pub const LISTER: &str = "lister";
    /// `table-convertor`.
    pub const TABLE: &str = "table-convertor";
    /// `converter`.
    pub const CONVERTER: &str = "converter";
    /// `defaulter`.
    pub const DEFAULTER: &str = "defaulter";
    /// `mutating-admission`.
    pub const MUTATING: &str = "mutating-admission";
    /// `validating-admission`.
    pub const VALIDATING: &str = "validating-admission";
    /// `status-strategy`.
    pub const STATUS: &str = "status-strategy";
    /// `scaler`.
    pub const SCALER: &str = "scaler";
    /// `create-pipeline`.
    pub const CREATE_PIPELINE: &str = "create-pipeline";

    /// The full export name of an interface, such as `wasm-apiserver:plugin/lister@0.1.1`.
    pub fn name(iface: &str) -> String {
        format!("{PACKAGE}/{iface}@{VERSION}")
    }
}

/// A plugin's `scheme.info()` as the host's [`GroupInfo`], checked: a group, resources with a kind, a plural and
/// exactly one storage version, schemas that are JSON objects of `type: object`.
pub fn scheme_from_wit(info: ex::scheme::PluginInfo, exports: &Exports) -> anyhow::Result<GroupInfo> {
    if info.group.is_empty() {
        bail!("scheme.info: the group is empty");
    }
    if info.resources.is_empty() {
        bail!("scheme.info: the plugin serves no resources");
    }
    let mut resources = Vec::new();
    for r in info.resources {
        if r.plural.is_empty() || r.kind.is_empty() {
            bail!("scheme.info: a resource has an empty kind or plural");
        }
        if r.versions.is_empty() {
            bail!("scheme.info: resource {} has no versions", r.plural);
        }
        let storage = r.versions.iter().filter(|v| v.storage).count();
        if storage != 1 {
            bail!(
                "scheme.info: resource {} must have exactly one storage version, has {storage}",
                r.plural
            );
        }
        if r.versions.len() > 1 && !exports.converter {
            bail!(
                "scheme.info: resource {} has several versions but the plugin does not export converter",
                r.plural
            );
        }
        let mut versions = Vec::new();
        for v in r.versions {
            let schema: serde_json::Value = serde_json::from_str(&v.schema)
                .with_context(|| format!("scheme.info: the schema of {} {} is not JSON", r.plural, v.name))?;
            if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                bail!(
                    "scheme.info: the schema of {} {} must be of type object",
                    r.plural,
                    v.name
                );
            }
            let unknown = super::keywords::unknown_keywords(&schema);
            if !unknown.is_empty() {
                bail!(
                    "scheme.info: the schema of {} {} has {} unknown keyword(s), which a CustomResourceDefinition's \
                     schema may not have either: {}",
                    r.plural,
                    v.name,
                    unknown.len(),
                    unknown.join("; ")
                );
            }
            versions.push(VersionInfo {
                name: v.name,
                served: v.served,
                storage: v.storage,
                deprecated: v.deprecated,
                deprecation_warning: v.deprecation_warning,
                schema: schema.into(),
                subresources: Default::default(),
                columns: None,
            });
        }
        resources.push(std::sync::Arc::new(ResourceInfo {
            kind: r.kind,
            singular: if r.singular.is_empty() {
                r.plural.clone()
            } else {
                r.singular
            },
            plural: r.plural,
            short_names: r.short_names,
            categories: r.categories,
            namespaced: matches!(r.scope, ex::scheme::Scope::Namespaced),
            versions,
            verbs: exports.verbs(),
            defaults: Default::default(),
        }));
    }
    let reads = info.reads.into_iter().map(|gr| (gr.group, gr.resource)).collect();
    Ok(GroupInfo {
        group: info.group,
        resources,
        reads,
    })
}

/// A field error of a plugin as the host's.
pub fn field_error_from_wit(e: wit::FieldError) -> FieldError {
    let reason = match e.kind {
        wit::FieldErrorKind::Required => FieldErrorReason::Required,
        wit::FieldErrorKind::Invalid => FieldErrorReason::Invalid,
        wit::FieldErrorKind::NotSupported => FieldErrorReason::NotSupported,
        wit::FieldErrorKind::Duplicate => FieldErrorReason::Duplicate,
        wit::FieldErrorKind::Forbidden => FieldErrorReason::Forbidden,
        wit::FieldErrorKind::TooLong => FieldErrorReason::TooLong,
        wit::FieldErrorKind::TooMany => FieldErrorReason::TooMany,
        wit::FieldErrorKind::Internal => FieldErrorReason::Internal,
    };
    FieldError::reported(reason, e.field, e.detail)
}

/// A guest's error returned by `call` of `plugin` as the host's: a refusal to show the client, or, for an `internal`
/// error (an exception or bug the guest's SDK caught), a failure naming the plugin and the call, as a trap is, and
/// logged (its details, a traceback, are in the plugin's own log lines just before).
pub fn error_from_wit(plugin: &str, call: &'static str, e: wit::Error) -> PluginError {
    let rejected = match e {
        wit::Error::Internal(message) => {
            tracing::warn!(plugin = %plugin, call, error = %message, "plugin call failed with an internal error");
            return PluginError::Failed {
                plugin: plugin.to_string(),
                call,
                message,
            };
        }
        wit::Error::Invalid(errors) => Rejection::Invalid(errors.into_iter().map(field_error_from_wit).collect()),
        wit::Error::Forbidden(m) => Rejection::Forbidden(m),
        wit::Error::BadRequest(m) => Rejection::BadRequest(m),
        wit::Error::Conflict(m) => Rejection::Conflict(m),
        wit::Error::NotFound(m) => Rejection::NotFound(m),
    };
    PluginError::Rejected(rejected)
}

/// A plugin's validation as the host's.
pub fn validation_from_wit(v: wit::Validation) -> Validation {
    Validation {
        errors: v.errors.into_iter().map(field_error_from_wit).collect(),
        warnings: v.warnings,
    }
}

/// An operation as the contract names it.
pub fn operation_to_wit(op: Operation) -> wit::Operation {
    match op {
        Operation::Create => wit::Operation::Create,
        Operation::Update => wit::Operation::Update,
        Operation::Delete => wit::Operation::Delete,
    }
}

/// A plugin's admission rule as the host's.
pub fn admission_rule_from_wit(r: wit::AdmissionRule) -> AdmissionRule {
    AdmissionRule {
        group: r.group,
        resources: r.resources,
        operations: r
            .operations
            .into_iter()
            .map(|op| match op {
                wit::Operation::Create => Operation::Create,
                wit::Operation::Update => Operation::Update,
                wit::Operation::Delete => Operation::Delete,
            })
            .collect(),
    }
}

/// An admission request as a plugin is told it: the objects as JSON text.
pub fn admission_request_to_wit(r: &AdmissionRequest<'_>) -> wit::AdmissionRequest {
    wit::AdmissionRequest {
        operation: operation_to_wit(r.operation),
        group: r.group.to_owned(),
        version: r.version.to_owned(),
        resource: r.resource.to_owned(),
        subresource: r.subresource.to_owned(),
        namespace: r.namespace.map(str::to_owned),
        name: r.name.to_owned(),
        object: r.object.map(serde_json::Value::to_string),
        old_object: r.old.map(serde_json::Value::to_string),
        dry_run: r.dry_run,
        user: wit::UserInfo {
            name: r.user.name.clone(),
            groups: r.user.groups.clone(),
        },
    }
}

/// The requesting user in full, as `host.request-user` answers it during an admission call.
pub fn user_to_wit(user: &UserInfo) -> wit::User {
    wit::User {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_field_error_keeps_a_detail_that_already_names_its_kind() {
        let e = field_error_from_wit(wit::FieldError {
            kind: wit::FieldErrorKind::Required,
            field: "spec.text".into(),
            detail: String::new(),
        });
        assert_eq!(
            (e.reason, e.field.as_str(), e.message.as_str()),
            (FieldErrorReason::Required, "spec.text", "Required value")
        );
        let e = field_error_from_wit(wit::FieldError {
            kind: wit::FieldErrorKind::Invalid,
            field: "spec.n".into(),
            detail: "Invalid value: 3: too big".into(),
        });
        assert_eq!(e.message, "Invalid value: 3: too big");
    }

    #[test]
    fn an_admission_request_carries_the_user_and_the_objects_as_text() {
        let obj = serde_json::json!({"metadata": {"name": "a"}});
        let mut user = UserInfo::new("alice", ["vault-keepers"]);
        user.uid = "u-1".into();
        user.extra.insert("scopes".into(), vec!["read".into(), "write".into()]);
        let r = admission_request_to_wit(&AdmissionRequest {
            operation: Operation::Update,
            group: "g",
            version: "v1",
            resource: "vaults",
            subresource: "",
            namespace: Some("ns"),
            name: "a",
            object: Some(&obj),
            old: None,
            dry_run: true,
            user: &user,
        });
        assert_eq!(r.operation, wit::Operation::Update);
        assert_eq!(r.user.name, "alice");
        assert_eq!(r.user.groups, ["vault-keepers"]);
        assert_eq!(r.object.as_deref(), Some(r#"{"metadata":{"name":"a"}}"#));
        assert_eq!(r.old_object, None);
        assert!(r.dry_run);
        let full = user_to_wit(&user);
        assert_eq!((full.name.as_str(), full.uid.as_str()), ("alice", "u-1"));
        assert_eq!(full.groups, ["vault-keepers"]);
        assert_eq!(
            full.extra,
            [("scopes".to_string(), vec!["read".to_string(), "write".to_string()])]
        );
    }
}
