//! `rbac.authorization.k8s.io/v1`: Role, ClusterRole, RoleBinding, ClusterRoleBinding, with kube's validation
//! (`pkg/apis/rbac/validation`) and table columns. The authorizer that reads them is `authz::rbac`.

use serde_json::{json, Value};

use super::{age_column, column, name_column, resource, str_at, string_schema, strings_schema, strs};
use apimachinery::plugin::PluginError;
use apimachinery::plugin::{FieldError, FieldErrorReason, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use apimachinery::validation::NameRule;
use rest::plugin::Plugin;
use rest::strategy::{creation_timestamp, Strategy};

/// The group.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// Its version.
pub const VERSION: &str = "v1";

fn rule_schema() -> Value {
    json!({
        "type": "object",
        "description": "PolicyRule holds information that describes a policy rule, but does not contain information about who the rule applies to or which namespace the rule applies to.",
        "required": ["verbs"],
        "properties": {
            "apiGroups": strings_schema("APIGroups is the name of the APIGroup that contains the resources. \"\" represents the core API group and \"*\" represents all API groups."),
            "nonResourceURLs": strings_schema("NonResourceURLs is a set of partial urls that a user should have access to. *s are allowed, but only as the full, final step in the path."),
            "resourceNames": strings_schema("ResourceNames is an optional white list of names that the rule applies to.  An empty set means that everything is allowed."),
            "resources": strings_schema("Resources is a list of resources this rule applies to. '*' represents all resources."),
            "verbs": strings_schema("Verbs is a list of Verbs that apply to ALL the ResourceKinds contained in this rule. '*' represents all verbs.")
        }
    })
}

fn role_schema(cluster: bool) -> Value {
    let mut properties = json!({
        "rules": {"type": "array", "items": rule_schema(), "description": "Rules holds all the PolicyRules for this Role"}
    });
    if cluster {
        properties["aggregationRule"] = json!({
            "type": "object",
            "description": "AggregationRule is an optional field that describes how to build the Rules for this ClusterRole.",
            "properties": {
                "clusterRoleSelectors": {
                    "type": "array",
                    "description": "ClusterRoleSelectors holds a list of selectors which will be used to find ClusterRoles and create the rules.",
                    "items": {"type": "object", "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "matchExpressions": {"type": "array", "items": {"type": "object", "properties": {
                            "key": {"type": "string"}, "operator": {"type": "string"}, "values": strings_schema("values")
                        }}}
                    }}
                }
            }
        });
    }
    json!({"type": "object", "properties": properties})
}

fn binding_schema() -> Value {
    json!({
        "type": "object",
        "required": ["roleRef"],
        "properties": {
            "roleRef": {
                "type": "object",
                "description": "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
                "required": ["apiGroup", "kind", "name"],
                "properties": {
                    "apiGroup": string_schema("APIGroup is the group for the resource being referenced"),
                    "kind": string_schema("Kind is the type of resource being referenced"),
                    "name": string_schema("Name is the name of resource being referenced")
                }
            },
            "subjects": {
                "type": "array",
                "description": "Subjects holds references to the objects the role applies to.",
                "items": {
                    "type": "object",
                    "required": ["kind", "name"],
                    "properties": {
                        "apiGroup": string_schema("APIGroup holds the API group of the referenced subject."),
                        "kind": string_schema("Kind of object being referenced. Values defined by this API group are \"User\", \"Group\", and \"ServiceAccount\"."),
                        "name": string_schema("Name of the object being referenced."),
                        "namespace": string_schema("Namespace of the referenced object.")
                    }
                }
            }
        }
    })
}

/// The group as a built-in plugin.
pub fn plugin() -> Plugin {
    let group = GroupInfo {
        group: GROUP.into(),
        resources: apimachinery::scheme::shared(vec![
            resource(
                "ClusterRoleBinding",
                "clusterrolebindings",
                &[],
                false,
                VERSION,
                binding_schema(),
            ),
            resource("ClusterRole", "clusterroles", &[], false, VERSION, role_schema(true)),
            resource("RoleBinding", "rolebindings", &[], true, VERSION, binding_schema()),
            resource("Role", "roles", &[], true, VERSION, role_schema(false)),
        ]),
        reads: Vec::new(),
    };
    let role_columns = vec![
        name_column(),
        column("Created At", "string", "date-time", "When the role was created.", 0),
    ];
    let binding_columns = || {
        vec![
            name_column(),
            column("Role", "string", "", "The role the binding grants.", 0),
            age_column(),
            column("Users", "string", "", "The users bound.", 1),
            column("Groups", "string", "", "The groups bound.", 1),
            column("ServiceAccounts", "string", "", "The service accounts bound.", 1),
        ]
    };
    let exports = Exports {
        table: true,
        ..super::writable()
    };
    Plugin::native(
        "builtin:rbac",
        group,
        exports,
        vec![
            ("clusterrolebindings".into(), binding_columns()),
            ("clusterroles".into(), role_columns.clone()),
            ("rolebindings".into(), binding_columns()),
            ("roles".into(), role_columns),
        ],
        ["clusterrolebindings", "clusterroles", "rolebindings", "roles"]
            .into_iter()
            .map(|r| (r.to_string(), Vec::new()))
            .collect(),
        std::sync::Arc::new(RbacStrategy),
    )
}

struct RbacStrategy;

impl Strategy for RbacStrategy {
    fn name_rule(&self, _resource: &str) -> NameRule {
        // kube's ValidateRBACName: any path segment name (`system:masters`-style names have colons).
        NameRule::PathSegment
    }

    /// kube's rbac/v1 defaults: a binding's `roleRef.apiGroup` and its User and Group subjects' `apiGroup` are
    /// `rbac.authorization.k8s.io` when empty (a ServiceAccount subject's stays empty).
    fn default(&self, resource: &str, mut obj: Value) -> Result<Value, PluginError> {
        if !resource.ends_with("bindings") {
            return Ok(obj);
        }
        let empty = |v: &Value| match v.get("apiGroup") {
            None | Some(Value::Null) => true,
            Some(Value::String(group)) => group.is_empty(),
            Some(_) => false,
        };
        if let Some(role_ref) = obj.get_mut("roleRef").filter(|r| r.is_object()) {
            if empty(role_ref) {
                role_ref["apiGroup"] = json!(GROUP);
            }
        }
        if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
            for subject in subjects.iter_mut().filter(|s| s.is_object()) {
                if empty(subject) && matches!(str_at(subject, "/kind"), "User" | "Group") {
                    subject["apiGroup"] = json!(GROUP);
                }
            }
        }
        Ok(obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        match resource {
            "roles" | "clusterroles" => {
                let cluster = resource == "clusterroles";
                validate_rules(obj.get("rules"), cluster, "rules", &mut errors);
                if cluster {
                    if let Some(agg) = obj.get("aggregationRule").filter(|v| !v.is_null()) {
                        if agg
                            .get("clusterRoleSelectors")
                            .and_then(Value::as_array)
                            .is_none_or(Vec::is_empty)
                        {
                            errors.push(FieldError::reported(
                                FieldErrorReason::Required,
                                "aggregationRule.clusterRoleSelectors",
                                "at least one clusterRoleSelector required if aggregationRule is non-nil",
                            ));
                        }
                    }
                }
            }
            _ => validate_binding(obj, resource == "clusterrolebindings", &mut errors),
        }
        Ok(Validation {
            errors,
            warnings: Vec::new(),
        })
    }

    fn validate_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        let mut validation = self.validate(resource, obj)?;
        if resource.ends_with("bindings") && obj.get("roleRef") != old.get("roleRef") {
            validation.errors.push(FieldError::reported(
                FieldErrorReason::Invalid,
                "roleRef",
                "cannot change roleRef",
            ));
        }
        Ok(validation)
    }

    fn table_cells(&self, resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        match resource {
            "roles" | "clusterroles" => vec![creation_timestamp(obj)],
            _ => {
                let subjects = |kind: &str| {
                    let names: Vec<String> = obj
                        .get("subjects")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|s| str_at(s, "/kind") == kind)
                        .map(|s| match (kind, str_at(s, "/namespace")) {
                            ("ServiceAccount", ns) => format!("{ns}/{}", str_at(s, "/name")),
                            _ => str_at(s, "/name").to_string(),
                        })
                        .collect();
                    json!(names.join(", "))
                };
                vec![
                    json!(format!(
                        "{}/{}",
                        str_at(obj, "/roleRef/kind"),
                        str_at(obj, "/roleRef/name")
                    )),
                    creation_timestamp(obj),
                    subjects("User"),
                    subjects("Group"),
                    subjects("ServiceAccount"),
                ]
            }
        }
    }
}

/// kube's `ValidatePolicyRule`, for each rule.
fn validate_rules(rules: Option<&Value>, cluster: bool, path: &str, errors: &mut Vec<FieldError>) {
    let Some(rules) = rules.filter(|v| !v.is_null()) else {
        return;
    };
    let Some(rules) = rules.as_array() else {
        errors.push(FieldError::reported(
            FieldErrorReason::Invalid,
            path,
            "must be a list of rules",
        ));
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if strs(rule.get("verbs")).is_empty() {
            errors.push(FieldError::reported(
                FieldErrorReason::Required,
                format!("{at}.verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = strs(rule.get("nonResourceURLs"));
        if !urls.is_empty() {
            if !cluster {
                errors.push(FieldError::reported(
                    FieldErrorReason::Invalid,
                    format!("{at}.nonResourceURLs"),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !strs(rule.get("apiGroups")).is_empty() || !strs(rule.get("resources")).is_empty() {
                errors.push(FieldError::reported(
                    FieldErrorReason::Invalid,
                    format!("{at}.nonResourceURLs"),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if strs(rule.get("apiGroups")).is_empty() {
            errors.push(FieldError::reported(
                FieldErrorReason::Required,
                format!("{at}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if strs(rule.get("resources")).is_empty() {
            errors.push(FieldError::reported(
                FieldErrorReason::Required,
                format!("{at}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// kube's `ValidateRoleBinding` / `ValidateClusterRoleBinding`.
fn validate_binding(obj: &Value, cluster: bool, errors: &mut Vec<FieldError>) {
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    if str_at(role_ref, "/apiGroup") != GROUP {
        errors.push(FieldError::reported(
            FieldErrorReason::NotSupported,
            "roleRef.apiGroup",
            format!("supported values: \"{GROUP}\""),
        ));
    }
    match str_at(role_ref, "/kind") {
        "ClusterRole" => {}
        "Role" if !cluster => {}
        _ => errors.push(FieldError::reported(
            FieldErrorReason::NotSupported,
            "roleRef.kind",
            if cluster {
                "supported values: \"ClusterRole\""
            } else {
                "supported values: \"Role\", \"ClusterRole\""
            },
        )),
    }
    let name = str_at(role_ref, "/name");
    if name.is_empty() {
        errors.push(FieldError::reported(FieldErrorReason::Required, "roleRef.name", ""));
    } else if let Some(problem) = NameRule::PathSegment.validate(name, false).into_iter().next() {
        errors.push(FieldError::reported(FieldErrorReason::Invalid, "roleRef.name", problem));
    }
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, s) in subjects.iter().enumerate() {
        let at = format!("subjects[{i}]");
        let kind = str_at(s, "/kind");
        let name = str_at(s, "/name");
        if name.is_empty() {
            errors.push(FieldError::reported(
                FieldErrorReason::Required,
                format!("{at}.name"),
                "",
            ));
        }
        match kind {
            "ServiceAccount" => {
                if !str_at(s, "/apiGroup").is_empty() {
                    errors.push(FieldError::reported(
                        FieldErrorReason::NotSupported,
                        format!("{at}.apiGroup"),
                        "supported values: \"\"",
                    ));
                }
                if cluster && str_at(s, "/namespace").is_empty() {
                    errors.push(FieldError::reported(
                        FieldErrorReason::Required,
                        format!("{at}.namespace"),
                        "",
                    ));
                }
            }
            "User" | "Group" => {
                if str_at(s, "/apiGroup") != GROUP {
                    errors.push(FieldError::reported(
                        FieldErrorReason::NotSupported,
                        format!("{at}.apiGroup"),
                        format!("supported values: \"{GROUP}\""),
                    ));
                }
            }
            _ => errors.push(FieldError::reported(
                FieldErrorReason::NotSupported,
                format!("{at}.kind"),
                "supported values: \"ServiceAccount\", \"User\", \"Group\"",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_get_kube_defaults() {
        let s = RbacStrategy;
        let obj = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "bob"}, {"kind": "Group", "apiGroup": "", "name": "devs"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "a"}]});
        let defaulted = s.default("rolebindings", obj).unwrap();
        assert_eq!(defaulted["roleRef"]["apiGroup"], GROUP);
        assert_eq!(defaulted["subjects"][0]["apiGroup"], GROUP);
        assert_eq!(defaulted["subjects"][1]["apiGroup"], GROUP);
        assert!(defaulted["subjects"][2].get("apiGroup").is_none());
        assert!(s.validate("rolebindings", &defaulted).unwrap().errors.is_empty());
        // What is set is kept (and validated), and roles are left alone.
        let other = json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": "r"}});
        assert_eq!(s.default("clusterrolebindings", other.clone()).unwrap(), other);
        let role = json!({"rules": []});
        assert_eq!(s.default("roles", role.clone()).unwrap(), role);
    }

    #[test]
    fn bindings_are_validated_as_kube_does() {
        let s = RbacStrategy;
        let ok = json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "bob"}]});
        assert!(s.validate("rolebindings", &ok).unwrap().errors.is_empty());
        let bad = json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": ""},
            "subjects": [{"kind": "Robot", "name": "r"}, {"kind": "ServiceAccount", "name": "sa"}]});
        let fields: Vec<String> = s
            .validate("clusterrolebindings", &bad)
            .unwrap()
            .errors
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "roleRef.apiGroup",
                "roleRef.kind",
                "roleRef.name",
                "subjects[0].kind",
                "subjects[1].namespace"
            ]
        );
        let changed = json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "edit"}});
        let errors = s.validate_update("rolebindings", &changed, &ok).unwrap().errors;
        assert_eq!(errors[0].message, "Invalid value: cannot change roleRef");
    }

    #[test]
    fn rules_need_verbs_and_targets() {
        let s = RbacStrategy;
        let role = json!({"rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["namespaces"]},
            {"verbs": [], "nonResourceURLs": ["/healthz"]},
            {"verbs": ["get"], "apiGroups": ["g"]}
        ]});
        let errors = s.validate("roles", &role).unwrap().errors;
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["rules[1].verbs", "rules[1].nonResourceURLs", "rules[2].resources"]
        );
        assert!(s
            .validate(
                "clusterroles",
                &json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]})
            )
            .unwrap()
            .errors
            .is_empty());
    }
}
