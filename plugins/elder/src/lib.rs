//! A test plugin built against the contract as released in version 0.1.0 (a frozen copy in `wit/deps/plugin`), to
//! show that a host serving a later, semver-compatible 0.1.x serves it unchanged: it links its `host@0.1.0` import,
//! finds its `@0.1.0` exports and calls them with the 0.1.0 types.
//!
//! It serves the namespaced resource `relics.elder.example.com` (kind `Relic`: create, get, list, watch). Its
//! validating admission lets a user create only relics whose `spec.keeper` is their own name (the 0.1.0 admission
//! request carries the user's name and groups), and logs each decision through the host import, so that a create
//! succeeds only if that import is linked (an import the host did not link would trap).

use serde_json::Value;

/// The generated bindings. The glue wit-bindgen generates is `unsafe` (the SDK's `bindings!` hides this from plugins);
/// the workspace denies `unsafe_code`, so it is allowed here, for the generated code only.
#[allow(unsafe_code)]
mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "elder",
        generate_all,
    });

    // The exported symbols have names only a wasm linker accepts; native builds leave them out.
    #[cfg(target_arch = "wasm32")]
    use super::Elder;
    #[cfg(target_arch = "wasm32")]
    export!(Elder);
}

use bindings::exports::wasm_apiserver::plugin::{create_strategy, lister, scheme, validating_admission};
use bindings::wasm_apiserver::plugin::types::{AdmissionRequest, AdmissionRule, Error, Operation, Validation};

/// The API group.
pub const GROUP: &str = "elder.example.com";
/// The plural name of the only resource.
pub const RELICS: &str = "relics";

/// Why a create is refused, if it is: `spec.keeper` must be the requesting user's name.
pub fn refusal(request: &AdmissionRequest) -> Option<String> {
    let object: Value = serde_json::from_str(request.object.as_deref()?).ok()?;
    let keeper = object.pointer("/spec/keeper").and_then(Value::as_str).unwrap_or("");
    (keeper != request.user.name).then(|| {
        format!(
            "spec.keeper must be the requesting user: {keeper:?} is not {:?} (in groups {:?})",
            request.user.name, request.user.groups
        )
    })
}

/// The plugin.
pub struct Elder;

impl scheme::Guest for Elder {
    fn info() -> scheme::PluginInfo {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"keeper": {"type": "string", "description": "Who keeps the relic."}}
                }
            }
        });
        scheme::PluginInfo {
            group: GROUP.to_owned(),
            resources: vec![scheme::Resource {
                kind: "Relic".to_owned(),
                plural: RELICS.to_owned(),
                singular: "relic".to_owned(),
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

impl create_strategy::Guest for Elder {
    fn prepare_for_create(_resource: String, object: String) -> Result<String, Error> {
        Ok(object)
    }

    fn validate(_resource: String, _object: String) -> Validation {
        Validation {
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

impl lister::Guest for Elder {
    fn selectable_fields(_resource: String) -> Vec<String> {
        Vec::new()
    }

    fn get_attrs(_resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        Ok(Vec::new())
    }
}

impl validating_admission::Guest for Elder {
    fn rules() -> Vec<AdmissionRule> {
        vec![AdmissionRule {
            group: GROUP.to_owned(),
            resources: vec![RELICS.to_owned()],
            operations: vec![Operation::Create],
        }]
    }

    fn validate(request: AdmissionRequest) -> Result<Vec<String>, Error> {
        use bindings::wasm_apiserver::plugin::host::{log, LogLevel};
        let refused = refusal(&request);
        log(
            LogLevel::Info,
            &format!(
                "admission of relic {:?} by {:?}: refused {}",
                request.name,
                request.user.name,
                refused.is_some()
            ),
        );
        match refused {
            Some(reason) => Err(Error::Forbidden(reason)),
            None => Ok(Vec::new()),
        }
    }
}
