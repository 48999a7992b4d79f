//! Conversion between the served versions through the hub (sample-apiserver's hand-written `v1alpha1/conversion.go`
//! and the generated pure copies of `v1beta1`).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use wasm_apiserver_guest::object::{api_version, split_api_version};
use wasm_apiserver_guest::{decode, encode, error, Error};

use crate::types::{hub, v1alpha1, v1beta1, FISCHER_REFERENCE_TYPE, FLUNDER_REFERENCE_TYPE};
use crate::{FISCHERS, FLUNDERS, GROUP};

/// `v1alpha1` → hub: the reference type picks which reference the `reference` is; a missing or unknown reference type
/// leaves both references empty.
pub fn v1alpha1_to_hub(spec: &v1alpha1::FlunderSpec) -> hub::FlunderSpec {
    let mut out = hub::FlunderSpec::default();
    match spec.reference_type.as_deref() {
        Some(FLUNDER_REFERENCE_TYPE) => {
            out.reference_type = FLUNDER_REFERENCE_TYPE.to_owned();
            out.flunder_reference = spec.reference.clone();
        }
        Some(FISCHER_REFERENCE_TYPE) => {
            out.reference_type = FISCHER_REFERENCE_TYPE.to_owned();
            out.fischer_reference = spec.reference.clone();
        }
        _ => {}
    }
    out.replicas = spec.replicas;
    out
}

/// Hub → `v1alpha1`: the reference named by the reference type becomes `reference`.
pub fn hub_to_v1alpha1(spec: &hub::FlunderSpec) -> v1alpha1::FlunderSpec {
    let (reference, reference_type) = match spec.reference_type.as_str() {
        FLUNDER_REFERENCE_TYPE => (spec.flunder_reference.clone(), Some(FLUNDER_REFERENCE_TYPE)),
        FISCHER_REFERENCE_TYPE => (spec.fischer_reference.clone(), Some(FISCHER_REFERENCE_TYPE)),
        _ => (String::new(), None),
    };
    v1alpha1::FlunderSpec {
        reference,
        reference_type: reference_type.map(str::to_owned),
        replicas: spec.replicas,
        ..Default::default()
    }
}

/// `v1beta1` → hub: a copy.
pub fn v1beta1_to_hub(spec: &v1beta1::FlunderSpec) -> hub::FlunderSpec {
    hub::FlunderSpec {
        flunder_reference: spec.flunder_reference.clone(),
        fischer_reference: spec.fischer_reference.clone(),
        reference_type: spec.reference_type.clone(),
        replicas: spec.replicas,
    }
}

/// Hub → `v1beta1`: a copy.
pub fn hub_to_v1beta1(spec: &hub::FlunderSpec) -> v1beta1::FlunderSpec {
    v1beta1::FlunderSpec {
        flunder_reference: spec.flunder_reference.clone(),
        fischer_reference: spec.fischer_reference.clone(),
        reference_type: spec.reference_type.clone(),
        replicas: spec.replicas,
        ..Default::default()
    }
}

/// Decodes a flunder spec (JSON, absent as `null`) of a served version into the hub; a spec that does not decode is a
/// `bad-request` error, and so is a version that is not served.
pub fn flunder_spec_to_hub(version: &str, spec: Value) -> Result<hub::FlunderSpec, Error> {
    match version {
        v1alpha1::VERSION => Ok(v1alpha1_to_hub(&decode_spec(spec)?)),
        v1beta1::VERSION => Ok(v1beta1_to_hub(&decode_spec(spec)?)),
        other => Err(unknown_version(FLUNDERS, other)),
    }
}

/// Encodes a hub flunder spec in a served version.
pub fn flunder_spec_from_hub(version: &str, spec: &hub::FlunderSpec) -> Result<Value, Error> {
    match version {
        v1alpha1::VERSION => encode_spec(&hub_to_v1alpha1(spec)),
        v1beta1::VERSION => encode_spec(&hub_to_v1beta1(spec)),
        other => Err(unknown_version(FLUNDERS, other)),
    }
}

/// Converts an object (JSON; its `apiVersion` names its version) of a wardle resource to `to_version`, carrying
/// metadata, status and any other top-level field over unchanged and setting `apiVersion`.
pub fn convert(resource: &str, object: &str, to_version: &str) -> Result<String, Error> {
    let mut object: Map<String, Value> = decode(object)?;
    let from_version = version_of(&object)?.to_owned();
    match resource {
        FLUNDERS if from_version != to_version => {
            let spec = object.remove("spec").unwrap_or(Value::Null);
            let hub = flunder_spec_to_hub(&from_version, spec)?;
            object.insert("spec".to_owned(), flunder_spec_from_hub(to_version, &hub)?);
        }
        FLUNDERS | FISCHERS => {
            for version in [from_version.as_str(), to_version] {
                if !is_served(resource, version) {
                    return Err(unknown_version(resource, version));
                }
            }
        }
        other => return Err(crate::unknown_resource(other)),
    }
    object.insert("apiVersion".to_owned(), Value::String(api_version(GROUP, to_version)));
    encode(&object)
}

/// A flunder in the storage version as v1alpha1, which the table and the selectable fields read: itself, unless the
/// `storage-v1beta1` build stores flunders in v1beta1.
pub fn from_storage_version(object: &str) -> Result<std::borrow::Cow<'_, str>, Error> {
    if crate::schema::STORED_IN_V1BETA1 {
        return convert(FLUNDERS, object, v1alpha1::VERSION).map(std::borrow::Cow::Owned);
    }
    Ok(std::borrow::Cow::Borrowed(object))
}

/// Decodes a flunder (JSON in a served version) into its hub spec.
pub fn flunder_to_hub(object: &str) -> Result<hub::FlunderSpec, Error> {
    let mut object: Map<String, Value> = decode(object)?;
    let version = version_of(&object)?.to_owned();
    flunder_spec_to_hub(&version, object.remove("spec").unwrap_or(Value::Null))
}

/// Whether a resource is served in a version.
pub fn is_served(resource: &str, version: &str) -> bool {
    match resource {
        FLUNDERS => version == v1alpha1::VERSION || version == v1beta1::VERSION,
        FISCHERS => version == v1alpha1::VERSION,
        _ => false,
    }
}

/// The version of an object's `apiVersion`, which must be in the wardle group.
fn version_of(object: &Map<String, Value>) -> Result<&str, Error> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    match split_api_version(api_version) {
        (GROUP, version) => Ok(version),
        _ => Err(error::bad_request(format!(
            "apiVersion {api_version:?} is not in the group {GROUP}"
        ))),
    }
}

fn unknown_version(resource: &str, version: &str) -> Error {
    error::bad_request(format!("{resource}.{GROUP} has no version {version:?}"))
}

fn decode_spec<T: DeserializeOwned + Default>(spec: Value) -> Result<T, Error> {
    if spec.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(spec).map_err(|e| error::bad_request(format!("cannot decode spec: {e}")))
}

fn encode_spec<T: Serialize>(spec: &T) -> Result<Value, Error> {
    serde_json::to_value(spec).map_err(|e| error::internal(format!("cannot encode spec: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hub(flunder: &str, fischer: &str, reference_type: &str) -> hub::FlunderSpec {
        hub::FlunderSpec {
            flunder_reference: flunder.to_owned(),
            fischer_reference: fischer.to_owned(),
            reference_type: reference_type.to_owned(),
            replicas: None,
        }
    }

    fn alpha(reference: &str, reference_type: Option<&str>) -> v1alpha1::FlunderSpec {
        v1alpha1::FlunderSpec {
            reference: reference.to_owned(),
            reference_type: reference_type.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn v1alpha1_reference_type_picks_the_reference() {
        assert_eq!(v1alpha1_to_hub(&alpha("f", Some("Flunder"))), hub("f", "", "Flunder"));
        assert_eq!(v1alpha1_to_hub(&alpha("f", Some("Fischer"))), hub("", "f", "Fischer"));
        assert_eq!(v1alpha1_to_hub(&alpha("f", None)), hub("", "", ""));
        assert_eq!(v1alpha1_to_hub(&alpha("f", Some("Other"))), hub("", "", ""));
    }

    #[test]
    fn hub_to_v1alpha1_and_back_round_trips() {
        for spec in [hub("f", "", "Flunder"), hub("", "f", "Fischer"), hub("", "", "")] {
            assert_eq!(v1alpha1_to_hub(&hub_to_v1alpha1(&spec)), spec);
        }
        assert_eq!(hub_to_v1alpha1(&hub("a", "b", "Fischer")), alpha("b", Some("Fischer")));
        assert_eq!(hub_to_v1alpha1(&hub("a", "", "")), alpha("", None));
    }

    #[test]
    fn v1alpha1_to_hub_and_back_round_trips() {
        for spec in [
            alpha("f", Some("Flunder")),
            alpha("f", Some("Fischer")),
            alpha("", None),
        ] {
            assert_eq!(hub_to_v1alpha1(&v1alpha1_to_hub(&spec)), spec);
        }
    }

    #[test]
    fn v1beta1_copies_both_ways() {
        for spec in [hub("a", "b", "Other"), hub("f", "", "Flunder"), hub("", "", "")] {
            assert_eq!(v1beta1_to_hub(&hub_to_v1beta1(&spec)), spec);
        }
        let beta = v1beta1::FlunderSpec {
            flunder_reference: "a".into(),
            fischer_reference: "b".into(),
            reference_type: "Fischer".into(),
            ..Default::default()
        };
        assert_eq!(hub_to_v1beta1(&v1beta1_to_hub(&beta)), beta);
    }

    fn flunder(version: &str, spec: Value) -> String {
        json!({
            "apiVersion": format!("wardle.example.com/{version}"),
            "kind": "Flunder",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "5", "labels": {"x": "y"}},
            "spec": spec,
            "status": {}
        })
        .to_string()
    }

    fn convert_value(resource: &str, object: &str, to_version: &str) -> Value {
        let converted = convert(resource, object, to_version).expect("convert");
        serde_json::from_str(&converted).expect("json")
    }

    #[test]
    fn converts_flunders_between_versions_keeping_metadata_and_status() {
        let alpha = flunder("v1alpha1", json!({"reference": "f", "referenceType": "Fischer"}));
        let beta = convert_value(FLUNDERS, &alpha, "v1beta1");
        let expected_beta = flunder("v1beta1", json!({"fischerReference": "f", "referenceType": "Fischer"}));
        assert_eq!(beta, serde_json::from_str::<Value>(&expected_beta).expect("json"));

        let back = convert_value(FLUNDERS, &beta.to_string(), "v1alpha1");
        assert_eq!(back, serde_json::from_str::<Value>(&alpha).expect("json"));
    }

    #[test]
    fn same_version_only_sets_api_version() {
        let beta = flunder("v1beta1", json!({"flunderReference": "f", "unknown": 1}));
        assert_eq!(
            convert_value(FLUNDERS, &beta, "v1beta1"),
            serde_json::from_str::<Value>(&beta).expect("json")
        );
        let fischer = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer", "metadata": {"name": "x"},
            "disallowedFlunders": ["a", "b"]});
        assert_eq!(convert_value(FISCHERS, &fischer.to_string(), "v1alpha1"), fischer);
    }

    #[test]
    fn missing_spec_converts_to_an_empty_spec() {
        let object = json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "metadata": {}});
        let converted = convert_value(FLUNDERS, &object.to_string(), "v1alpha1");
        assert_eq!(converted["spec"], json!({}));
        assert_eq!(converted["apiVersion"], "wardle.example.com/v1alpha1");
    }

    #[test]
    fn refuses_unknown_versions_groups_resources_and_bad_specs() {
        let alpha = flunder("v1alpha1", json!({}));
        assert!(matches!(convert(FLUNDERS, &alpha, "v2"), Err(Error::BadRequest(_))));
        assert!(matches!(
            convert(FLUNDERS, &flunder("v9", json!({})), "v1alpha1"),
            Err(Error::BadRequest(_))
        ));
        assert!(matches!(
            convert(FISCHERS, &alpha, "v1beta1"),
            Err(Error::BadRequest(_))
        ));
        assert!(matches!(convert("widgets", &alpha, "v1beta1"), Err(Error::NotFound(_))));
        let other_group = json!({"apiVersion": "other.io/v1alpha1", "kind": "Flunder"}).to_string();
        assert!(matches!(
            convert(FLUNDERS, &other_group, "v1beta1"),
            Err(Error::BadRequest(_))
        ));
        let bad_spec = flunder("v1alpha1", json!({"reference": 5}));
        assert!(matches!(
            convert(FLUNDERS, &bad_spec, "v1beta1"),
            Err(Error::BadRequest(_))
        ));
        assert!(matches!(
            convert(FLUNDERS, "not json", "v1beta1"),
            Err(Error::BadRequest(_))
        ));
    }
}
