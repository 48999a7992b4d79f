//! The `@GROUP@` plugin: a namespaced `@KIND@` (plural `@PLURAL@`) served in `v1` with create, get, list, watch,
//! update, patch and delete, and its own `kubectl get` columns.
//!
//! - The schema (`schema()`) gives `spec.message` (a required string) and `spec.replicas` (an integer of at least 0,
//!   default 1); the server enforces it and applies its defaults before any hook runs.
//! - Create and update: `spec.message` is trimmed, then must not be blank (422 Invalid otherwise).
//! - `kubectl get @PLURAL@` shows Name, Message, Replicas and Age.
//!
//! The world below names the exported interfaces; the server serves a verb exactly when the component exports the
//! interface behind it. See `sdk/README.md` for the SDK.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use wasm_apiserver_guest::field::{self, FieldPath};
use wasm_apiserver_guest::{encode, error, Error, FieldError, Object, Validation};

wasm_apiserver_guest::bindings!(inline: "
    package example:plugin;

    world %@WORLD@ {
        include wasm-apiserver:plugin/crud-plugin@0.1.1;
        export wasm-apiserver:plugin/table-convertor@0.1.1;
    }
");

use exports::wasm_apiserver::plugin::table_convertor::Column;
use exports::wasm_apiserver::plugin::{
    create_strategy, delete_strategy, lister, scheme, table_convertor, update_strategy,
};

/// The API group.
pub const GROUP: &str = "@GROUP@";
/// The kind.
pub const KIND: &str = "@KIND@";
/// The plural resource name, used in URLs.
pub const PLURAL: &str = "@PLURAL@";
/// The singular resource name.
pub const SINGULAR: &str = "@SINGULAR@";
/// The longest message, in characters.
pub const MAX_MESSAGE_LENGTH: usize = 200;

/// The `spec` of a @KIND@.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// What the @KIND@ says: required, not blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How many copies: at least 0, defaulted to 1 by the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Fields this type does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A @KIND@ object.
pub type Resource = Object<Spec>;

/// The OpenAPI v3 schema of a v1 @KIND@ (the server adds `apiVersion`, `kind` and `metadata`). Its `example` is what
/// `wasm-apiserver plugin check` runs every hook on.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "description": "@KIND@ is an object of the @GROUP@ API. Describe what it stands for here.",
        "example": {"spec": {"message": "Hello from a @KIND@", "replicas": 2}},
        "properties": {
            "spec": {
                "type": "object",
                "description": "The desired state of the @KIND@.",
                "required": ["message"],
                "properties": {
                    "message": {
                        "type": "string",
                        "maxLength": MAX_MESSAGE_LENGTH,
                        "description": "What the @KIND@ says. Required and not blank; leading and trailing spaces are removed."
                    },
                    "replicas": {
                        "type": "integer",
                        "format": "int32",
                        "minimum": 0,
                        "default": 1,
                        "description": "How many copies of the @KIND@ there should be. At least 0; defaults to 1."
                    }
                }
            }
        }
    })
}

/// Removes leading and trailing spaces from the message (before validation, on create and update).
pub fn prepare(object: &mut Resource) {
    if let Some(message) = &mut object.spec.message {
        *message = message.trim().to_owned();
    }
}

/// The field errors of a @KIND@: the message must not be blank. (Types, `required`, `maxLength` and `minimum` are
/// the schema's, checked by the server before this runs.)
pub fn validate(object: &Resource) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let message = object.spec.message.as_deref().unwrap_or_default();
    if message.trim().is_empty() {
        let path = FieldPath::new("spec").child("message");
        let detail = format!("a {KIND} needs a message that is not blank");
        errors.push(field::required(&path, detail));
    }
    errors
}

/// The plugin: one type implementing every exported interface.
pub struct Plugin;

impl scheme::Guest for Plugin {
    fn info() -> scheme::PluginInfo {
        scheme::PluginInfo {
            group: GROUP.to_owned(),
            resources: vec![scheme::Resource {
                kind: KIND.to_owned(),
                plural: PLURAL.to_owned(),
                singular: SINGULAR.to_owned(),
                short_names: Vec::new(),
                categories: Vec::new(),
                scope: scheme::Scope::Namespaced,
                versions: vec![scheme::Version {
                    name: "v1".to_owned(),
                    served: true,
                    storage: true,
                    deprecated: false,
                    deprecation_warning: None,
                    schema: schema().to_string(),
                }],
            }],
            reads: Vec::new(),
        }
    }
}

impl create_strategy::Guest for Plugin {
    fn prepare_for_create(resource: String, object: String) -> Result<String, Error> {
        check_resource(&resource)?;
        let mut object = Resource::from_json(&object)?; // malformed input: 400 BadRequest
        prepare(&mut object);
        object.to_json()
    }

    fn validate(resource: String, object: String) -> Validation {
        validation(&resource, &object)
    }
}

impl update_strategy::Guest for Plugin {
    fn prepare_for_update(
        resource: String,
        object: String,
        _old_object: String,
    ) -> Result<String, Error> {
        check_resource(&resource)?;
        let mut object = Resource::from_json(&object)?;
        prepare(&mut object);
        object.to_json()
    }

    fn validate_update(resource: String, object: String, _old_object: String) -> Validation {
        validation(&resource, &object)
    }

    fn allow_create_on_update(_resource: String) -> bool {
        false
    }

    fn allow_unconditional_update(_resource: String) -> bool {
        false
    }
}

impl delete_strategy::Guest for Plugin {
    fn validate_delete(resource: String, _object: String) -> Result<(), Error> {
        check_resource(&resource)
    }
}

impl lister::Guest for Plugin {
    fn selectable_fields(_resource: String) -> Vec<String> {
        Vec::new()
    }

    fn get_attrs(resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        check_resource(&resource)?;
        Ok(Vec::new())
    }
}

impl table_convertor::Guest for Plugin {
    fn columns(_resource: String) -> Vec<Column> {
        vec![
            column("Name", "string", "name", "The name of the object."),
            column("Message", "string", "", "What the object says."),
            column("Replicas", "integer", "", "How many copies."),
            column("Age", "date", "", "The time since the object was created."),
        ]
    }

    fn row(resource: String, object: String) -> Result<String, Error> {
        check_resource(&resource)?;
        let object = Resource::from_json(&object)?;
        encode(&json!([
            object.metadata.name(),
            object.spec.message,
            object.spec.replicas,
            object.metadata.creation_timestamp,
        ]))
    }
}

fn validation(resource: &str, object: &str) -> Validation {
    let path = FieldPath::default();
    if let Err(e) = check_resource(resource) {
        return vec![field::internal(&path, e.message())].into();
    }
    match Resource::from_json(object) {
        Ok(object) => validate(&object).into(),
        Err(e) => vec![field::internal(&path, e.message())].into(),
    }
}

fn column(name: &str, type_: &str, format: &str, description: &str) -> Column {
    Column {
        name: name.to_owned(),
        type_: type_.to_owned(),
        format: format.to_owned(),
        description: description.to_owned(),
        priority: 0,
    }
}

fn check_resource(resource: &str) -> Result<(), Error> {
    if resource == PLURAL {
        Ok(())
    } else {
        let message = format!("the plugin serves no resource {resource:?}");
        Err(error::not_found(message))
    }
}

// The exported symbols have names only a wasm linker accepts; native builds (`cargo test`) leave them out.
#[cfg(target_arch = "wasm32")]
export!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    fn object(spec: Value) -> Resource {
        let api_version = format!("{GROUP}/v1");
        let object = json!({"apiVersion": api_version, "kind": KIND, "spec": spec});
        Resource::from_json(&object.to_string()).unwrap()
    }

    #[test]
    fn the_message_is_trimmed_and_may_not_be_blank() {
        let mut ok = object(json!({"message": "  hello  "}));
        prepare(&mut ok);
        assert_eq!(ok.spec.message.as_deref(), Some("hello"));
        assert!(validate(&ok).is_empty());

        let mut blank = object(json!({"message": "   "}));
        prepare(&mut blank);
        let errors = validate(&blank);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.message");
    }

    #[test]
    fn the_schema_example_is_valid() {
        let example = schema()["example"].clone();
        let mut example = object(example["spec"].clone());
        prepare(&mut example);
        assert!(validate(&example).is_empty());
    }
}
