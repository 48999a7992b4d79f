//! Constructors for the contract's [`Error`] and helpers for [`Validation`].
//!
//! Each error renders as a Kubernetes `Status`: `invalid` → 422 `Invalid`, `forbidden` → 403 `Forbidden`,
//! `bad_request` → 400, `conflict` → 409, `not_found` → 404, `internal` → 500.

use crate::types::FieldError;
pub use crate::types::{Error, Validation};

/// 422 `Invalid`: the object fails validation; `errors` become the `Status` causes.
pub fn invalid(errors: Vec<FieldError>) -> Error {
    Error::Invalid(errors)
}

/// 403 `Forbidden`: the host appends `reason` to `<resource>.<group> "<name>" is forbidden: `.
pub fn forbidden(reason: impl Into<String>) -> Error {
    Error::Forbidden(reason.into())
}

/// 400 `BadRequest`: the request cannot be understood.
pub fn bad_request(message: impl Into<String>) -> Error {
    Error::BadRequest(message.into())
}

/// 409 `Conflict`: the operation conflicts with the current state.
pub fn conflict(message: impl Into<String>) -> Error {
    Error::Conflict(message.into())
}

/// 404 `NotFound`: something the operation needs does not exist.
pub fn not_found(message: impl Into<String>) -> Error {
    Error::NotFound(message.into())
}

/// 500 `InternalError`: the plugin failed.
pub fn internal(message: impl Into<String>) -> Error {
    Error::Internal(message.into())
}

impl Error {
    /// The error's text without its case: the field errors joined as `<field>: <detail>`, or the message.
    pub fn message(&self) -> String {
        match self {
            Error::Invalid(errors) => {
                let errors: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect();
                errors.join(", ")
            }
            Error::Forbidden(m)
            | Error::BadRequest(m)
            | Error::Conflict(m)
            | Error::NotFound(m)
            | Error::Internal(m) => m.clone(),
        }
    }
}

impl Validation {
    /// A validation with these errors and no warnings; valid when `errors` is empty.
    pub fn from_errors(errors: Vec<FieldError>) -> Self {
        Self {
            errors,
            warnings: Vec::new(),
        }
    }

    /// Adds a warning for the client.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Whether there are no errors.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok` with the warnings when there are no errors, else an `invalid` error carrying them.
    pub fn into_result(self) -> Result<Vec<String>, Error> {
        if self.errors.is_empty() {
            Ok(self.warnings)
        } else {
            Err(Error::Invalid(self.errors))
        }
    }
}

impl From<Vec<FieldError>> for Validation {
    fn from(errors: Vec<FieldError>) -> Self {
        Self::from_errors(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{self, FieldPath};

    #[test]
    fn validation_from_errors() {
        let ok = Validation::from(Vec::new()).with_warning("careful");
        assert!(ok.is_valid());
        assert_eq!(ok.into_result().ok(), Some(vec!["careful".to_owned()]));

        let e = field::required(&FieldPath::new("spec"), "");
        let bad = Validation::from(vec![e.clone()]);
        assert!(!bad.is_valid());
        assert!(matches!(bad.into_result(), Err(Error::Invalid(list)) if list == vec![e]));
    }

    #[test]
    fn constructors_pick_the_case() {
        assert!(matches!(forbidden("no"), Error::Forbidden(m) if m == "no"));
        assert!(matches!(bad_request("x"), Error::BadRequest(_)));
        assert!(matches!(conflict("x"), Error::Conflict(_)));
        assert!(matches!(not_found("x"), Error::NotFound(_)));
        assert!(matches!(internal("x"), Error::Internal(_)));
        assert!(matches!(invalid(Vec::new()), Error::Invalid(v) if v.is_empty()));
    }

    #[test]
    fn messages_leave_out_the_case() {
        assert_eq!(not_found("gone").message(), "gone");
        let errors = vec![
            field::required(&FieldPath::new("a"), "x"),
            field::forbidden(&FieldPath::new("b"), "y"),
        ];
        assert_eq!(invalid(errors).message(), "a: x, b: y");
    }
}
