//! `wardle.example.com`: a port of kubernetes/sample-apiserver as a wasm-apiserver plugin.
//!
//! - `flunders` (namespaced, kind Flunder) in `v1beta1` (preferred) and `v1alpha1` (storage), converted through an
//!   internal hub; defaulted in `v1alpha1`; validated in the hub.
//! - `fischers` (cluster-scoped, kind Fischer) in `v1alpha1`, listing flunder names that may not be used.
//! - BanFlunder, a mutating admission plugin refusing flunders whose name a fischer disallows.
//! - Flunders have a `/status` (observed replicas, observed generation, selector) and a `/scale` on `spec.replicas`.
//!
//! The logic lives in plain modules tested natively (`cargo test -p wardle-plugin`); this file only binds it to the
//! contract's `full-plugin` world.

pub mod admission;
pub mod conversion;
pub mod defaults;
pub mod schema;
pub mod status;
pub mod table;
pub mod types;
pub mod validation;

use serde_json::{json, Value};
use wasm_apiserver_guest::field::{self, FieldPath};
use wasm_apiserver_guest::types::{AdmissionRequest, AdmissionRule};
use wasm_apiserver_guest::{error, Error, FieldErrorKind, Object, Validation};

use exports::wasm_apiserver::plugin::{
    converter, create_strategy, defaulter, delete_strategy, lister, mutating_admission, scaler, scheme,
    status_strategy, table_convertor, update_strategy, validating_admission,
};
use types::v1alpha1;

wasm_apiserver_guest::bindings!("full-plugin");

/// The API group.
pub const GROUP: &str = "wardle.example.com";
/// The plural name of flunders.
pub const FLUNDERS: &str = "flunders";
/// The plural name of fischers.
pub const FISCHERS: &str = "fischers";
/// The field selectors may use on flunders, besides `metadata.name` and `metadata.namespace`.
pub const REFERENCE_TYPE_FIELD: &str = "spec.referenceType";

/// The plugin.
pub struct Wardle;

/// The error for a resource the plugin does not serve.
pub fn unknown_resource(resource: &str) -> Error {
    error::not_found(format!("the wardle plugin serves no resource {resource:?}"))
}

/// Validates a new or updated object (JSON in the request's version) in the hub.
pub fn validate(resource: &str, object: &str) -> Validation {
    match resource {
        FLUNDERS => match conversion::flunder_to_hub(object) {
            Ok(spec) => validation::validate_flunder(&spec).into(),
            Err(e) => Validation::from(vec![field::error(
                FieldErrorKind::Invalid,
                &FieldPath::new("spec"),
                e.message(),
            )]),
        },
        FISCHERS => Validation::from(Vec::new()),
        other => Validation::from(vec![field::internal(
            &FieldPath::default(),
            unknown_resource(other).message(),
        )]),
    }
}

/// Prepares an object for storage: a flunder's spec must decode in its version and its status is always empty.
pub fn prepare(resource: &str, object: &str) -> Result<String, Error> {
    match resource {
        FLUNDERS => {
            let mut flunder: Object<Value> = Object::from_json(object)?;
            let version = flunder.version().to_owned();
            conversion::flunder_spec_to_hub(&version, flunder.spec.clone())?;
            if flunder.spec.is_null() {
                flunder.spec = json!({});
            }
            flunder.status = Some(json!({}));
            flunder.to_json()
        }
        FISCHERS => wasm_apiserver_guest::encode(&wasm_apiserver_guest::decode::<v1alpha1::Fischer>(object)?),
        other => Err(unknown_resource(other)),
    }
}

/// The values of the selectable fields of an object in the storage version.
pub fn attrs(resource: &str, object: &str) -> Result<Vec<(String, String)>, Error> {
    match resource {
        FLUNDERS => {
            let object = &conversion::from_storage_version(object)?;
            let flunder: v1alpha1::Flunder = wasm_apiserver_guest::decode(object)?;
            let reference_type = flunder.spec.reference_type.unwrap_or_default();
            Ok(vec![(REFERENCE_TYPE_FIELD.to_owned(), reference_type)])
        }
        FISCHERS => Ok(Vec::new()),
        other => Err(unknown_resource(other)),
    }
}

impl scheme::Guest for Wardle {
    fn info() -> scheme::PluginInfo {
        schema::plugin_info()
    }
}

impl create_strategy::Guest for Wardle {
    fn prepare_for_create(resource: String, object: String) -> Result<String, Error> {
        prepare(&resource, &object)
    }

    fn validate(resource: String, object: String) -> Validation {
        validate(&resource, &object)
    }
}

impl update_strategy::Guest for Wardle {
    fn prepare_for_update(resource: String, object: String, _old_object: String) -> Result<String, Error> {
        prepare(&resource, &object)
    }

    fn validate_update(resource: String, object: String, _old_object: String) -> Validation {
        validate(&resource, &object)
    }

    fn allow_create_on_update(_resource: String) -> bool {
        false
    }

    fn allow_unconditional_update(_resource: String) -> bool {
        false
    }
}

impl delete_strategy::Guest for Wardle {
    fn validate_delete(_resource: String, _object: String) -> Result<(), Error> {
        Ok(())
    }
}

impl lister::Guest for Wardle {
    fn selectable_fields(resource: String) -> Vec<String> {
        if resource == FLUNDERS {
            vec![REFERENCE_TYPE_FIELD.to_owned()]
        } else {
            Vec::new()
        }
    }

    fn get_attrs(resource: String, object: String) -> Result<Vec<(String, String)>, Error> {
        attrs(&resource, &object)
    }
}

impl table_convertor::Guest for Wardle {
    fn columns(resource: String) -> Vec<table_convertor::Column> {
        table::columns(&resource)
    }

    fn row(resource: String, object: String) -> Result<String, Error> {
        table::row(&resource, &object)
    }
}

impl converter::Guest for Wardle {
    fn convert(resource: String, object: String, to_version: String) -> Result<String, Error> {
        conversion::convert(&resource, &object, &to_version)
    }
}

impl defaulter::Guest for Wardle {
    fn default(resource: String, object: String) -> Result<String, Error> {
        defaults::default_object(&resource, object)
    }
}

impl mutating_admission::Guest for Wardle {
    fn rules() -> Vec<AdmissionRule> {
        admission::rules()
    }

    fn admit(request: AdmissionRequest) -> Result<Option<String>, Error> {
        admission::admit(&request)
    }
}

impl validating_admission::Guest for Wardle {
    fn rules() -> Vec<AdmissionRule> {
        Vec::new()
    }

    fn validate(_request: AdmissionRequest) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }
}

impl status_strategy::Guest for Wardle {
    fn resources() -> Vec<String> {
        status::resources()
    }

    fn prepare_for_status_update(resource: String, object: String, _old_object: String) -> Result<String, Error> {
        status::prepare(&resource, object)
    }

    fn validate_status_update(resource: String, object: String, _old_object: String) -> Validation {
        status::validate(&resource, &object)
    }
}

impl scaler::Guest for Wardle {
    fn scale_paths(resource: String) -> Option<scaler::ReplicaPaths> {
        status::scale_paths(&resource)
    }
}

// The exported symbols have names only a wasm linker accepts; native builds (unit tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(Wardle);

#[cfg(test)]
mod tests {
    use super::*;

    fn flunder(version: &str, spec: Value) -> String {
        json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Flunder", "metadata": {"name": "a"}, "spec": spec})
            .to_string()
    }

    #[test]
    fn validation_happens_in_the_hub_for_every_version() {
        let ok_alpha = flunder("v1alpha1", json!({"reference": "b", "referenceType": "Fischer"}));
        assert!(validate(FLUNDERS, &ok_alpha).errors.is_empty());
        let bad_beta = flunder("v1beta1", json!({"flunderReference": "b", "fischerReference": "c"}));
        let errors = validate(FLUNDERS, &bad_beta).errors;
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.fischerReference");
        let bad_type = flunder("v1beta1", json!({"referenceType": "Other"}));
        assert_eq!(validate(FLUNDERS, &bad_type).errors[0].field, "spec.referenceType");
        assert!(validate(FISCHERS, "{}").errors.is_empty());
        assert_eq!(validate("widgets", "{}").errors[0].kind, FieldErrorKind::Internal);
        assert_eq!(
            validate(FLUNDERS, &flunder("v1beta1", json!({"referenceType": 1}))).errors[0].field,
            "spec"
        );
    }

    #[test]
    fn prepare_empties_the_status_and_type_checks_the_spec() {
        let mut object: Value =
            serde_json::from_str(&flunder("v1beta1", json!({"flunderReference": "b"}))).expect("json");
        object["status"] = json!({"anything": 1});
        let prepared: Value =
            serde_json::from_str(&prepare(FLUNDERS, &object.to_string()).expect("prepare")).expect("json");
        assert_eq!(prepared["status"], json!({}));
        assert_eq!(prepared["spec"], object["spec"]);
        let bad = flunder("v1alpha1", json!({"reference": ["x"]}));
        assert!(matches!(prepare(FLUNDERS, &bad), Err(Error::BadRequest(_))));
        assert!(matches!(prepare("widgets", "{}"), Err(Error::NotFound(_))));
        let no_spec = json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder"}).to_string();
        let prepared: Value = serde_json::from_str(&prepare(FLUNDERS, &no_spec).expect("prepare")).expect("json");
        assert_eq!(prepared["spec"], json!({}));
    }

    #[test]
    fn attrs_expose_the_reference_type() {
        let stored = flunder("v1alpha1", json!({"reference": "b", "referenceType": "Flunder"}));
        assert_eq!(
            attrs(FLUNDERS, &stored).expect("attrs"),
            [(REFERENCE_TYPE_FIELD.to_owned(), "Flunder".to_owned())]
        );
        let stored = flunder("v1alpha1", json!({}));
        assert_eq!(
            attrs(FLUNDERS, &stored).expect("attrs"),
            [(REFERENCE_TYPE_FIELD.to_owned(), String::new())]
        );
        assert!(attrs(FISCHERS, "{}").expect("attrs").is_empty());
    }
}
