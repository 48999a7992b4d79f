//! A test plugin that serves only part of the verbs: it exports `scheme`, `create-strategy` and `lister`, so the host
//! serves create, get, list and watch for `notes.partial.example.com` and answers 405 MethodNotAllowed for update,
//! patch and delete.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use wasm_apiserver_guest::field::{self, ErrorList, FieldPath};
use wasm_apiserver_guest::{error, Error, Object, Validation};

wasm_apiserver_guest::bindings!(inline: "
    package example:partial;

    world partial {
        include wasm-apiserver:plugin/plugin@0.1.1;
        export wasm-apiserver:plugin/create-strategy@0.1.1;
        export wasm-apiserver:plugin/lister@0.1.1;
    }
");

use exports::wasm_apiserver::plugin::{create_strategy, lister, scheme};

/// The API group.
pub const GROUP: &str = "partial.example.com";
/// The plural name of the only resource.
pub const NOTES: &str = "notes";
/// The longest note text, in characters.
pub const MAX_TEXT_LENGTH: usize = 100;

/// The `spec` of a Note.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoteSpec {
    /// The text of the note: required, at most [`MAX_TEXT_LENGTH`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Fields this type does not know, preserved as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A Note object.
pub type Note = Object<NoteSpec>;

/// Validates a note's spec.
pub fn validate_note(note: &Note) -> ErrorList {
    let path = FieldPath::new("spec").child("text");
    match note.spec.text.as_deref() {
        None | Some("") => vec![field::required(&path, "")],
        Some(text) if text.chars().count() > MAX_TEXT_LENGTH => vec![field::too_long(&path, MAX_TEXT_LENGTH)],
        Some(_) => Vec::new(),
    }
}

/// The plugin.
pub struct Partial;

impl scheme::Guest for Partial {
    fn info() -> scheme::PluginInfo {
        let schema = json!({
            "type": "object",
            "description": "Note is a short text.",
            "properties": {
                "spec": {
                    "type": "object",
                    "description": "The note.",
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string", "maxLength": MAX_TEXT_LENGTH, "description": "The text of the note."}
                    }
                }
            }
        });
        // The `v2` build (plugins/partial-v2) adds a field, so tests can replace one version with another.
        #[cfg(feature = "v2")]
        let schema = {
            let mut schema = schema;
            schema["properties"]["spec"]["properties"]["color"] =
                json!({"type": "string", "description": "The color of the note (added in the v2 build)."});
            schema
        };
        scheme::PluginInfo {
            group: GROUP.to_owned(),
            resources: vec![scheme::Resource {
                kind: "Note".to_owned(),
                plural: NOTES.to_owned(),
                singular: "note".to_owned(),
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

impl create_strategy::Guest for Partial {
    fn prepare_for_create(resource: String, object: String) -> Result<String, Error> {
        check_resource(&resource)?;
        let mut note = Note::from_json(&object)?;
        note.status = None;
        note.to_json()
    }

    fn validate(resource: String, object: String) -> Validation {
        if let Err(e) = check_resource(&resource) {
            return Validation::from(vec![field::internal(&FieldPath::default(), e.message())]);
        }
        match Note::from_json(&object) {
            Ok(note) => validate_note(&note).into(),
            Err(e) => Validation::from(vec![field::internal(&FieldPath::new("spec"), e.message())]),
        }
    }
}

impl lister::Guest for Partial {
    fn selectable_fields(_resource: String) -> Vec<String> {
        Vec::new()
    }

    fn get_attrs(resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        check_resource(&resource)?;
        Ok(Vec::new())
    }
}

fn check_resource(resource: &str) -> Result<(), Error> {
    if resource == NOTES {
        Ok(())
    } else {
        Err(error::not_found(format!("the plugin serves no resource {resource:?}")))
    }
}

// The exported symbols have names only a wasm linker accepts; native builds (unit tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(Partial);

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_apiserver_guest::FieldErrorKind;

    fn note(spec: Value) -> Note {
        let object =
            json!({"apiVersion": "partial.example.com/v1", "kind": "Note", "metadata": {"name": "n"}, "spec": spec});
        Note::from_json(&object.to_string()).expect("decode")
    }

    #[test]
    fn text_is_required() {
        for spec in [json!({}), json!({"text": ""})] {
            let errors = validate_note(&note(spec));
            assert_eq!(errors.len(), 1);
            assert_eq!(
                (errors[0].kind, errors[0].field.as_str()),
                (FieldErrorKind::Required, "spec.text")
            );
        }
    }

    #[test]
    fn text_has_a_maximum_length() {
        let at_limit = "é".repeat(MAX_TEXT_LENGTH);
        assert!(validate_note(&note(json!({ "text": at_limit }))).is_empty());
        let errors = validate_note(&note(json!({ "text": "x".repeat(MAX_TEXT_LENGTH + 1) })));
        assert_eq!(errors.len(), 1);
        assert_eq!(
            (errors[0].kind, errors[0].field.as_str()),
            (FieldErrorKind::TooLong, "spec.text")
        );
    }

    #[test]
    fn prepare_for_create_clears_status_and_keeps_the_rest() {
        let object = json!({"apiVersion": "partial.example.com/v1", "kind": "Note", "metadata": {"name": "n"},
            "spec": {"text": "hi", "color": "red"}, "status": {"read": true}});
        let prepared = <Partial as create_strategy::Guest>::prepare_for_create(NOTES.to_owned(), object.to_string())
            .expect("prepare");
        let prepared: Value = serde_json::from_str(&prepared).expect("json");
        assert_eq!(prepared.get("status"), None);
        assert_eq!(prepared["spec"], json!({"text": "hi", "color": "red"}));
    }

    #[test]
    fn unknown_resources_are_refused() {
        let result = <Partial as create_strategy::Guest>::prepare_for_create("other".to_owned(), "{}".to_owned());
        assert!(matches!(result, Err(Error::NotFound(_))));
    }
}
