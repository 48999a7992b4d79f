//! A test plugin whose validating admission decides by who makes the request: it serves the namespaced resource
//! `vaults.guarded.example.com` (kind `Vault`: create, get, list, watch, update, patch, delete), and only members of
//! the group [`KEEPERS`] may create a vault whose `spec.sealed` is true or change `spec.sealed` of a vault. The
//! refusal names the user, groups, uid and extra the host told the plugin (`host.request-user`), so a test can see
//! that admission received the real requester (as kubectl's `--as`, `--as-group`, `--as-uid` and `--as-user-extra`
//! make it).
//!
//! Its schema's `example` is wrong on purpose (a string where `spec.sealed` takes a boolean): `plugin check` reports
//! it, and a Plugin object of this component is refused for it (a file in a plugin directory is not checked so).

use serde_json::{json, Value};
use wasm_apiserver_guest::types::{AdmissionRequest, AdmissionRule, Operation, User};
use wasm_apiserver_guest::{error, Error, Validation};

wasm_apiserver_guest::bindings!(inline: "
    package example:guarded;

    world guarded {
        include wasm-apiserver:plugin/plugin@0.1.1;
        export wasm-apiserver:plugin/create-strategy@0.1.1;
        export wasm-apiserver:plugin/update-strategy@0.1.1;
        export wasm-apiserver:plugin/delete-strategy@0.1.1;
        export wasm-apiserver:plugin/lister@0.1.1;
        export wasm-apiserver:plugin/validating-admission@0.1.1;
    }
");

use exports::wasm_apiserver::plugin::{
    create_strategy, delete_strategy, lister, scheme, update_strategy, validating_admission,
};

/// The API group.
pub const GROUP: &str = "guarded.example.com";
/// The plural name of the only resource.
pub const VAULTS: &str = "vaults";
/// The group whose members may seal and unseal vaults.
pub const KEEPERS: &str = "vault-keepers";

/// Whether an object's `spec.sealed` is true.
fn sealed(object: Option<&str>) -> Result<bool, Error> {
    let Some(json) = object else {
        return Ok(false);
    };
    let object: Value = wasm_apiserver_guest::decode(json)?;
    Ok(object.pointer("/spec/sealed").and_then(Value::as_bool).unwrap_or(false))
}

/// Refuses a create that seals a vault and an update that seals or unseals one, unless `user` (who makes the
/// request) is a keeper.
pub fn check(request: &AdmissionRequest, user: &User) -> Result<(), Error> {
    if request.group != GROUP || request.resource != VAULTS || !request.subresource.is_empty() {
        return Ok(());
    }
    let touches_seal = match request.operation {
        Operation::Create => sealed(request.object.as_deref())?,
        Operation::Update => sealed(request.object.as_deref())? != sealed(request.old_object.as_deref())?,
        _ => false,
    };
    if !touches_seal || user.groups.iter().any(|g| g == KEEPERS) {
        return Ok(());
    }
    Err(error::forbidden(format!(
        "only members of {KEEPERS} may set spec.sealed; user {:?} is in groups {:?}, uid {:?}, extra {:?}",
        user.name, user.groups, user.uid, user.extra
    )))
}

/// The plugin.
pub struct Guarded;

impl scheme::Guest for Guarded {
    fn info() -> scheme::PluginInfo {
        let schema = json!({
            "type": "object",
            "description": "Vault holds something only keepers may seal.",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "sealed": {"type": "boolean", "description": "Whether the vault is sealed (keepers only)."},
                        "contents": {"type": "string", "description": "What the vault holds."}
                    }
                }
            },
            "example": {"spec": {"sealed": "yes", "contents": "gold"}}
        });
        scheme::PluginInfo {
            group: GROUP.to_owned(),
            resources: vec![scheme::Resource {
                kind: "Vault".to_owned(),
                plural: VAULTS.to_owned(),
                singular: "vault".to_owned(),
                short_names: Vec::new(),
                categories: Vec::new(),
                scope: scheme::Scope::Namespaced,
                versions: vec![scheme::Version {
                    name: "v1".to_owned(),
                    served: true,
                    storage: true,
                    deprecated: false,
                    deprecation_warning: None,
                    schema: schema.to_string(),
                }],
            }],
            reads: Vec::new(),
        }
    }
}

impl create_strategy::Guest for Guarded {
    fn prepare_for_create(_resource: String, object: String) -> Result<String, Error> {
        Ok(object)
    }

    fn validate(_resource: String, _object: String) -> Validation {
        Validation::from_errors(Vec::new())
    }
}

impl update_strategy::Guest for Guarded {
    fn prepare_for_update(_resource: String, object: String, _old_object: String) -> Result<String, Error> {
        Ok(object)
    }

    fn validate_update(_resource: String, _object: String, _old_object: String) -> Validation {
        Validation::from_errors(Vec::new())
    }

    fn allow_create_on_update(_resource: String) -> bool {
        false
    }

    fn allow_unconditional_update(_resource: String) -> bool {
        true
    }
}

impl delete_strategy::Guest for Guarded {
    fn validate_delete(_resource: String, _object: String) -> Result<(), Error> {
        Ok(())
    }
}

impl lister::Guest for Guarded {
    fn selectable_fields(_resource: String) -> Vec<String> {
        Vec::new()
    }

    fn get_attrs(_resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        Ok(Vec::new())
    }
}

impl validating_admission::Guest for Guarded {
    fn rules() -> Vec<AdmissionRule> {
        vec![AdmissionRule {
            group: GROUP.to_owned(),
            resources: vec![VAULTS.to_owned()],
            operations: vec![Operation::Create, Operation::Update],
        }]
    }

    fn validate(request: AdmissionRequest) -> Result<Vec<String>, Error> {
        let Some(user) = wasm_apiserver_guest::request_user() else {
            return Err(error::internal("the host did not say who makes the request"));
        };
        if (user.name.as_str(), &user.groups) != (request.user.name.as_str(), &request.user.groups) {
            return Err(error::internal(format!(
                "host.request-user ({:?} in {:?}) is not the request's user ({:?} in {:?})",
                user.name, user.groups, request.user.name, request.user.groups
            )));
        }
        check(&request, &user).map(|()| Vec::new())
    }
}

// The exported symbols have names only a wasm linker accepts; native builds (unit tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(Guarded);

#[cfg(test)]
mod tests {
    use super::*;

    /// The check of a request and its user (the user is a keeper when `groups` has [`KEEPERS`]).
    fn check((request, user): &(AdmissionRequest, User)) -> Result<(), Error> {
        super::check(request, user)
    }

    fn request(operation: Operation, object: Value, old: Option<Value>, groups: &[&str]) -> (AdmissionRequest, User) {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let request = AdmissionRequest {
            operation,
            group: GROUP.to_owned(),
            version: "v1".to_owned(),
            resource: VAULTS.to_owned(),
            subresource: String::new(),
            namespace: Some("default".to_owned()),
            name: "v".to_owned(),
            object: Some(object.to_string()),
            old_object: old.map(|o| o.to_string()),
            dry_run: false,
            user: wasm_apiserver_guest::UserInfo {
                name: "alice".to_owned(),
                groups: groups.clone(),
            },
        };
        let user = User {
            name: "alice".to_owned(),
            uid: "u-1".to_owned(),
            groups,
            extra: vec![("scopes".to_owned(), vec!["vaults".to_owned()])],
        };
        (request, user)
    }

    #[test]
    fn only_keepers_create_sealed_vaults() {
        let sealed = json!({"spec": {"sealed": true}});
        assert!(check(&request(Operation::Create, sealed.clone(), None, &[KEEPERS])).is_ok());
        match check(&request(Operation::Create, sealed, None, &["devs"])) {
            Err(Error::Forbidden(message)) => {
                assert!(message.contains("\"alice\""), "{message}");
                assert!(message.contains("\"devs\""), "{message}");
                assert!(
                    message.contains(r#"uid "u-1", extra [("scopes", ["vaults"])]"#),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(check(&request(Operation::Create, json!({"spec": {}}), None, &["devs"])).is_ok());
    }

    #[test]
    fn only_keepers_change_the_seal() {
        let open = json!({"spec": {"sealed": false, "contents": "a"}});
        let sealed = json!({"spec": {"sealed": true, "contents": "a"}});
        assert!(check(&request(
            Operation::Update,
            sealed.clone(),
            Some(open.clone()),
            &["devs"]
        ))
        .is_err());
        assert!(check(&request(
            Operation::Update,
            open.clone(),
            Some(sealed.clone()),
            &["devs"]
        ))
        .is_err());
        assert!(check(&request(Operation::Update, sealed.clone(), Some(open), &[KEEPERS])).is_ok());
        let refilled = json!({"spec": {"sealed": true, "contents": "b"}});
        assert!(check(&request(Operation::Update, refilled, Some(sealed), &["devs"])).is_ok());
    }
}
