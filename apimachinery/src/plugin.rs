//! What a resource type's code takes and returns, owned by the host: the results of a strategy's calls
//! ([`Validation`], [`Rejection`], [`PluginError`]), what its own admission is told of a write ([`AdmissionRequest`])
//! and the reads the host lends a plugin ([`HostReads`]). A built-in type's strategy uses them directly; for a
//! plugin, the plugin runtime converts the WIT types (`wit/types.wit`) to and from these at its edge, and they go no
//! further: the registry, the built-in types and the admission chain see only these.

use serde_json::Value;

use crate::status::{ApiError, Cause};
pub use crate::user::UserInfo;
pub use crate::{FieldError, FieldErrorReason};

/// The result of a validation: errors make the request fail with 422 `Invalid`; warnings reach the client as
/// `Warning: 299` headers and the request goes on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    /// Field errors.
    pub errors: Vec<FieldError>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl Validation {
    /// A validation with no errors or warnings.
    pub fn valid() -> Validation {
        Validation::default()
    }

    /// A validation with these errors and no warnings.
    pub fn of_errors(errors: Vec<FieldError>) -> Validation {
        Validation {
            errors,
            warnings: Vec::new(),
        }
    }
}

/// A strategy's or admission's refusal of a request, to be shown to the client as a `Status` with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// 422 `Invalid`: the object fails validation; the causes list every field error.
    Invalid(Vec<FieldError>),
    /// 403 `Forbidden`: the reason, appended to `<resource>.<group> "<name>" is forbidden: `.
    Forbidden(String),
    /// 400 `BadRequest`.
    BadRequest(String),
    /// 409 `Conflict`.
    Conflict(String),
    /// 404 `NotFound`: something the operation needs does not exist.
    NotFound(String),
}

/// What a write does, as admission rules and requests name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A create (or a create-on-update).
    Create,
    /// An update or patch.
    Update,
    /// A delete.
    Delete,
}

/// Which requests an admission plugin wants to see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionRule {
    /// The API group (`*` for any).
    pub group: String,
    /// Plural resources, with subresources as Kubernetes' admission rules write them (`flunders`, `*`,
    /// `flunders/status`, `*/*`).
    pub resources: Vec<String>,
    /// The operations.
    pub operations: Vec<Operation>,
}

/// The admission rules of a plugin: which (group, resource, operation) it wants to see.
#[derive(Clone, Debug, Default)]
pub struct AdmissionRules(pub Vec<AdmissionRule>);

impl AdmissionRules {
    /// Whether a request matches one of the rules. Resources match as in Kubernetes' admission rules: `flunders`
    /// and `*` match the objects only, `flunders/status`, `flunders/*`, `*/status` and `*/*` match subresources.
    pub fn matches(&self, group: &str, resource: &str, subresource: &str, op: Operation) -> bool {
        self.0.iter().any(|r| {
            (r.group == "*" || r.group == group)
                && r.resources.iter().any(|x| resource_matches(x, resource, subresource))
                && r.operations.contains(&op)
        })
    }
}

/// Whether an admission rule's resource (`flunders`, `*`, `flunders/status`, `*/*`...) matches a request's.
fn resource_matches(rule: &str, resource: &str, subresource: &str) -> bool {
    let (rule_resource, rule_sub) = rule.split_once('/').unwrap_or((rule, ""));
    (rule_resource == "*" || rule_resource == resource) && (rule_sub == "*" || rule_sub == subresource)
}

/// What a plugin's admission is told of a write: the objects are in the request's version.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionRequest<'a> {
    /// What the write does.
    pub operation: Operation,
    /// The API group.
    pub group: &'a str,
    /// The version of the request.
    pub version: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The subresource, empty for the object itself.
    pub subresource: &'a str,
    /// The namespace of a namespaced object.
    pub namespace: Option<&'a str>,
    /// The object's name (empty when the server will generate it).
    pub name: &'a str,
    /// The object to be stored (`None` for a delete).
    pub object: Option<&'a Value>,
    /// The stored object, for updates and deletes.
    pub old: Option<&'a Value>,
    /// `dryRun=All`: the plugin must have no side effects.
    pub dry_run: bool,
    /// The requesting user: name, uid, groups and extra.
    pub user: &'a UserInfo,
}

/// Why a plugin call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    /// The strategy or admission refused the request (a plugin's WIT `error`), to be shown to the client.
    #[error("{0:?}")]
    Rejected(Rejection),
    /// The call ran past its deadline.
    #[error("plugin {plugin:?} timed out in {call}")]
    Timeout {
        /// The plugin's name.
        plugin: String,
        /// The function called.
        call: &'static str,
    },
    /// A host read made by the call failed in storage (such as storage being unavailable).
    #[error("plugin {plugin:?} could not read storage in {call}: {}", error.message)]
    Storage {
        /// The plugin's name.
        plugin: String,
        /// The function called.
        call: &'static str,
        /// The storage failure, as the request fails with it (503 when storage is unavailable).
        error: Box<ApiError>,
    },
    /// The tenant's plugin CPU budget is spent: the call was not made.
    #[error("{message}")]
    Throttled {
        /// The plugin's name.
        plugin: String,
        /// What to tell the client.
        message: String,
        /// When to try again, in seconds.
        retry_after: u32,
    },
    /// The plugin trapped, ran out of memory, or returned something unusable.
    #[error("plugin {plugin:?} failed in {call}: {message}")]
    Failed {
        /// The plugin's name.
        plugin: String,
        /// The function called.
        call: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl PluginError {
    /// The failure for an object as the request answers it: `group`, `resource` (plural), `kind` and `name` fill
    /// the message; a rejection's field errors become the `Invalid` status's causes.
    pub fn into_api_error(self, group: &str, resource: &str, kind: &str, name: &str) -> ApiError {
        match self {
            PluginError::Rejected(r) => match r {
                Rejection::Invalid(errs) => {
                    ApiError::invalid(group, kind, name, errs.into_iter().map(Cause::from).collect())
                }
                Rejection::Forbidden(m) => ApiError::forbidden(group, resource, name, &m),
                Rejection::BadRequest(m) => ApiError::bad_request(m),
                Rejection::Conflict(m) => ApiError::conflict(group, resource, name, &m),
                Rejection::NotFound(m) => ApiError::new(404, "NotFound", m),
            },
            PluginError::Timeout { plugin, call } => ApiError::timeout(format!(
                "the plugin {plugin:?} did not answer {call} within its deadline"
            )),
            PluginError::Storage { error, .. } => *error,
            PluginError::Throttled {
                message, retry_after, ..
            } => {
                let mut e = ApiError::new(429, "TooManyRequests", message);
                e.retry_after = Some(retry_after);
                e
            }
            PluginError::Failed { plugin, call, message } => {
                ApiError::internal(format!("plugin {plugin:?} failed in {call}: {message}"))
            }
        }
    }
}

/// Read access to stored objects, as a plugin's host import needs it (the registry gives one to each plugin that
/// declared reads). Called from a blocking context.
pub trait HostReads: Send + Sync {
    /// Reads one object (JSON in its storage version).
    fn get(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError>;
    /// Lists objects (JSON in their storage version) matching a label selector.
    fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<String>, ReadError>;
}

/// Why a host read failed.
#[derive(Debug, Clone)]
pub enum ReadError {
    /// The plugin asked for something malformed (such as a bad label selector).
    Invalid(String),
    /// The storage failed; the call that made the read fails with it (503 when storage is unavailable).
    Storage(Box<ApiError>),
}

/// Which step of a create made in one call failed, and the error it returned.
#[derive(Debug)]
pub struct CreateStepError {
    /// The error, as the separate call would have reported it.
    pub error: PluginError,
    /// Whether the step was the defaulter (errors of which name no object).
    pub in_default: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_lists_causes_and_names_the_kind() {
        let e = PluginError::Rejected(Rejection::Invalid(vec![crate::FieldError::reported(
            crate::FieldErrorReason::Required,
            "spec.text",
            "",
        )]));
        let causes = e.into_api_error("partial.example.com", "notes", "Note", "n").causes;
        let s = ApiError::invalid("partial.example.com", "Note", "n", causes).to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["kind"], "Note");
        assert_eq!(s["details"]["causes"][0]["field"], "spec.text");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(
            s["message"],
            "Note.partial.example.com \"n\" is invalid: spec.text: Required value"
        );
    }

    #[test]
    fn admission_rules_match_subresources_as_kube() {
        let rules = AdmissionRules(vec![AdmissionRule {
            group: "g".into(),
            resources: vec!["flunders".into(), "*/scale".into()],
            operations: vec![Operation::Update],
        }]);
        assert!(rules.matches("g", "flunders", "", Operation::Update));
        assert!(!rules.matches("g", "flunders", "status", Operation::Update));
        assert!(rules.matches("g", "flunders", "scale", Operation::Update));
        assert!(rules.matches("g", "fischers", "scale", Operation::Update));
        assert!(!rules.matches("g", "fischers", "", Operation::Update));
        assert!(!rules.matches("h", "flunders", "", Operation::Update));
        assert!(!rules.matches("g", "flunders", "", Operation::Create));
        assert!(resource_matches("*", "a", ""));
        assert!(!resource_matches("*", "a", "status"));
        assert!(resource_matches("*/*", "a", "status"));
        assert!(resource_matches("a/*", "a", "status"));
        assert!(!resource_matches("a/*", "b", "status"));
    }
}
