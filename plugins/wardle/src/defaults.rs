//! Defaulting, in `v1alpha1` only (sample-apiserver's `v1alpha1/defaults.go`).

use serde_json::Value;
use wasm_apiserver_guest::{error, Error, Object};

use crate::types::{v1alpha1, FLUNDER_REFERENCE_TYPE};
use crate::FLUNDERS;

/// Sets the defaults of an object (JSON in the version named by its `apiVersion`): flunders in `v1alpha1` get them,
/// other objects come back as they are.
pub fn default_object(resource: &str, object: String) -> Result<String, Error> {
    if resource != FLUNDERS {
        return Ok(object);
    }
    let mut flunder: Object<Value> = Object::from_json(&object)?;
    if flunder.version() != v1alpha1::VERSION {
        return Ok(object);
    }
    let mut spec: v1alpha1::FlunderSpec = if flunder.spec.is_null() {
        v1alpha1::FlunderSpec::default()
    } else {
        serde_json::from_value(flunder.spec).map_err(|e| error::bad_request(format!("cannot decode spec: {e}")))?
    };
    set_defaults_flunder_spec(&mut spec);
    flunder.spec = serde_json::to_value(&spec).map_err(|e| error::internal(format!("cannot encode spec: {e}")))?;
    flunder.to_json()
}

/// A set reference with an empty or missing reference type refers to a Flunder.
pub fn set_defaults_flunder_spec(spec: &mut v1alpha1::FlunderSpec) {
    if spec.reference_type.as_deref().unwrap_or_default().is_empty() && !spec.reference.is_empty() {
        spec.reference_type = Some(FLUNDER_REFERENCE_TYPE.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FISCHER_REFERENCE_TYPE;
    use serde_json::json;

    fn spec(reference: &str, reference_type: Option<&str>) -> v1alpha1::FlunderSpec {
        v1alpha1::FlunderSpec {
            reference: reference.to_owned(),
            reference_type: reference_type.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn objects_are_defaulted_in_v1alpha1_only() {
        let alpha = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "a"},
            "spec": {"reference": "b", "extra": true}});
        let defaulted: Value =
            serde_json::from_str(&default_object(FLUNDERS, alpha.to_string()).expect("default")).expect("json");
        assert_eq!(
            defaulted["spec"],
            json!({"reference": "b", "referenceType": "Flunder", "extra": true})
        );
        assert_eq!(defaulted["metadata"], alpha["metadata"]);

        let beta =
            json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "spec": {"flunderReference": "b"}})
                .to_string();
        assert_eq!(default_object(FLUNDERS, beta.clone()).expect("default"), beta);
        let fischer = "not even JSON".to_owned();
        assert_eq!(
            default_object(crate::FISCHERS, fischer.clone()).expect("default"),
            fischer
        );
        assert!(default_object(FLUNDERS, "[".to_owned()).is_err());
    }

    #[test]
    fn reference_without_type_defaults_to_flunder() {
        for reference_type in [None, Some("")] {
            let mut s = spec("other", reference_type);
            set_defaults_flunder_spec(&mut s);
            assert_eq!(s.reference_type.as_deref(), Some(FLUNDER_REFERENCE_TYPE));
        }
    }

    #[test]
    fn set_type_or_empty_reference_is_left_alone() {
        let mut s = spec("other", Some(FISCHER_REFERENCE_TYPE));
        set_defaults_flunder_spec(&mut s);
        assert_eq!(s.reference_type.as_deref(), Some(FISCHER_REFERENCE_TYPE));

        let mut s = spec("", None);
        set_defaults_flunder_spec(&mut s);
        assert_eq!(s.reference_type, None);

        let mut s = spec("", Some(""));
        set_defaults_flunder_spec(&mut s);
        assert_eq!(s.reference_type.as_deref(), Some(""));
    }
}
