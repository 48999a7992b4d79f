//! Validation of the hub types (sample-apiserver's `pkg/apis/wardle/validation`).

use wasm_apiserver_guest::field::{self, ErrorList, FieldPath};

use crate::types::{hub, FISCHER_REFERENCE_TYPE, FLUNDER_REFERENCE_TYPE};

/// Validates a flunder's spec.
pub fn validate_flunder(spec: &hub::FlunderSpec) -> ErrorList {
    validate_flunder_spec(spec, &FieldPath::new("spec"))
}

/// Validates a flunder spec found at `path`: the references are mutually exclusive, each needs its matching reference
/// type, a reference type needs its reference, and the reference type is `Flunder` or `Fischer`.
pub fn validate_flunder_spec(spec: &hub::FlunderSpec, path: &FieldPath) -> ErrorList {
    let mut errors = ErrorList::new();
    let flunder_ref = spec.flunder_reference.as_str();
    let fischer_ref = spec.fischer_reference.as_str();
    let reference_type = spec.reference_type.as_str();

    if !flunder_ref.is_empty() && !fischer_ref.is_empty() {
        errors.push(field::invalid(
            &path.child("fischerReference"),
            fischer_ref,
            "cannot be set with flunderReference at the same time",
        ));
    } else if !flunder_ref.is_empty() && reference_type != FLUNDER_REFERENCE_TYPE {
        errors.push(field::invalid(
            &path.child("flunderReference"),
            flunder_ref,
            "cannot be set if referenceType is not Flunder",
        ));
    } else if !fischer_ref.is_empty() && reference_type != FISCHER_REFERENCE_TYPE {
        errors.push(field::invalid(
            &path.child("fischerReference"),
            fischer_ref,
            "cannot be set if referenceType is not Fischer",
        ));
    } else if fischer_ref.is_empty() && reference_type == FISCHER_REFERENCE_TYPE {
        errors.push(field::invalid(
            &path.child("fischerReference"),
            fischer_ref,
            "cannot be empty if referenceType is Fischer",
        ));
    } else if flunder_ref.is_empty() && reference_type == FLUNDER_REFERENCE_TYPE {
        errors.push(field::invalid(
            &path.child("flunderReference"),
            flunder_ref,
            "cannot be empty if referenceType is Flunder",
        ));
    }

    if !reference_type.is_empty()
        && reference_type != FISCHER_REFERENCE_TYPE
        && reference_type != FLUNDER_REFERENCE_TYPE
    {
        errors.push(field::invalid(
            &path.child("referenceType"),
            reference_type,
            "must be Flunder or Fischer",
        ));
    }
    if let Some(replicas) = spec.replicas.filter(|r| *r < 0) {
        errors.push(field::invalid(
            &path.child("replicas"),
            replicas,
            "must be greater than or equal to 0",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_apiserver_guest::FieldErrorKind;

    fn spec(flunder: &str, fischer: &str, reference_type: &str) -> hub::FlunderSpec {
        hub::FlunderSpec {
            flunder_reference: flunder.to_owned(),
            fischer_reference: fischer.to_owned(),
            reference_type: reference_type.to_owned(),
            replicas: None,
        }
    }

    /// The (field, detail) pairs of the errors, all of which must be `Invalid`.
    fn errors(spec: &hub::FlunderSpec) -> Vec<(String, String)> {
        let errors = validate_flunder(spec);
        assert!(errors.iter().all(|e| e.kind == FieldErrorKind::Invalid), "{errors:?}");
        errors.into_iter().map(|e| (e.field, e.detail)).collect()
    }

    fn one(field: &str, detail: &str) -> Vec<(String, String)> {
        vec![(field.to_owned(), detail.to_owned())]
    }

    #[test]
    fn valid_specs_pass() {
        assert!(errors(&spec("", "", "")).is_empty());
        assert!(errors(&spec("f", "", "Flunder")).is_empty());
        assert!(errors(&spec("", "f", "Fischer")).is_empty());
    }

    #[test]
    fn references_are_mutually_exclusive() {
        assert_eq!(
            errors(&spec("a", "b", "Flunder")),
            one(
                "spec.fischerReference",
                r#""b": cannot be set with flunderReference at the same time"#
            )
        );
    }

    #[test]
    fn each_reference_needs_its_reference_type() {
        assert_eq!(
            errors(&spec("a", "", "Fischer")),
            one(
                "spec.flunderReference",
                r#""a": cannot be set if referenceType is not Flunder"#
            )
        );
        assert_eq!(
            errors(&spec("a", "", "")),
            one(
                "spec.flunderReference",
                r#""a": cannot be set if referenceType is not Flunder"#
            )
        );
        assert_eq!(
            errors(&spec("", "b", "Flunder")),
            one(
                "spec.fischerReference",
                r#""b": cannot be set if referenceType is not Fischer"#
            )
        );
    }

    #[test]
    fn each_reference_type_needs_its_reference() {
        assert_eq!(
            errors(&spec("", "", "Fischer")),
            one(
                "spec.fischerReference",
                r#""": cannot be empty if referenceType is Fischer"#
            )
        );
        assert_eq!(
            errors(&spec("", "", "Flunder")),
            one(
                "spec.flunderReference",
                r#""": cannot be empty if referenceType is Flunder"#
            )
        );
    }

    #[test]
    fn reference_type_must_be_known() {
        assert_eq!(
            errors(&spec("", "", "Other")),
            one("spec.referenceType", r#""Other": must be Flunder or Fischer"#)
        );
        assert_eq!(
            errors(&spec("", "b", "Other")),
            vec![
                (
                    "spec.fischerReference".to_owned(),
                    r#""b": cannot be set if referenceType is not Fischer"#.to_owned()
                ),
                (
                    "spec.referenceType".to_owned(),
                    r#""Other": must be Flunder or Fischer"#.to_owned()
                ),
            ]
        );
    }
}
