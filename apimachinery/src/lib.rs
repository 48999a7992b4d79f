//! Kubernetes API machinery without I/O: label and field selectors, name and metadata validation, field errors and
//! name generation, reproducing `k8s.io/apimachinery` behaviour and messages.
//!
//! - [`labels`]: `labelSelector` query strings and `metav1.LabelSelector` objects (`pkg/labels`).
//! - [`fields`]: `fieldSelector` query strings (`pkg/fields`).
//! - [`jsonpath`]: kube's JSONPath (`k8s.io/client-go/util/jsonpath`), for CRD printer columns.
//! - [`validation`]: format checks such as DNS-1123 names, qualified names and label values
//!   (`pkg/util/validation`, `pkg/api/validation/path`).
//! - [`object`]: reading and setting an object's metadata in its JSON (`pkg/api/meta`'s accessors).
//! - [`objectmeta`]: `metadata` checks on create and update (`pkg/api/validation/objectmeta.go`).
//! - [`field_error`]: the field errors that become the causes of a 422 `Invalid` Status
//!   (`pkg/util/validation/field`).
//! - [`status`]: the one error type of the request path, answered as a `Status` (`pkg/api/errors`).
//! - [`user`]: who makes a request, as an authenticator found them (`k8s.io/apiserver/pkg/authentication/user`).
//! - [`scheme`]: a served group of types, its resources, versions and verbs (`APIGroupInfo`, `metav1.APIResource`).
//! - [`plugin`]: what a type's strategy and admission take and return, whether a plugin or the host implements them.
//!
//! No I/O and no server types: the crate depends only on the standard library, `serde_json`, `regex`, `thiserror`,
//! `uuid` and `chrono`, so that the server, the tests and the plugin SDK can share it. Without its default feature
//! `rules`, only [`object`] is built, with `serde_json` alone: the Rust plugin SDK shares the host's object
//! metadata rules that way.

// `ApiError` carries a whole Kubernetes `Status`: results that may fail with one are large, and clippy says so at
// each function returning one. Errors are the rare path; boxing would add an allocation to every error.
#![allow(clippy::result_large_err)]

#[cfg(feature = "rules")]
pub mod duration;
#[cfg(feature = "rules")]
pub mod field_error;
#[cfg(feature = "rules")]
pub mod fields;
#[cfg(feature = "rules")]
pub mod gofmt;
#[cfg(feature = "rules")]
pub mod jsonpath;
#[cfg(feature = "rules")]
pub mod labels;
pub mod object;
#[cfg(feature = "rules")]
pub mod objectmeta;
#[cfg(feature = "rules")]
pub mod plugin;
#[cfg(feature = "rules")]
pub mod quantity;
#[cfg(feature = "rules")]
pub mod scheme;
#[cfg(feature = "rules")]
pub mod status;
#[cfg(feature = "rules")]
pub mod strategic;
#[cfg(feature = "rules")]
pub mod user;
#[cfg(feature = "rules")]
pub mod validation;
#[cfg(feature = "rules")]
pub mod version_priority;

#[cfg(feature = "rules")]
pub use field_error::{FieldError, FieldErrorReason};
#[cfg(feature = "rules")]
pub use fields::{FieldRequirement, FieldSelector};
#[cfg(feature = "rules")]
pub use labels::{LabelSelector, Labels, Operator, Requirement};
#[cfg(feature = "rules")]
pub use objectmeta::{validate_object_meta, validate_object_meta_update};
#[cfg(feature = "rules")]
pub use validation::NameRule;

#[cfg(feature = "rules")]
/// A boolean as Go's `strconv.ParseBool` reads it (how kube reads `watch`, `allowWatchBookmarks`, `pretty`...);
/// `None` for anything else.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(feature = "rules")]
/// A selector's terms as its string form writes them: joined by commas, without spaces (labels' and fields' alike).
fn write_terms(f: &mut std::fmt::Formatter<'_>, terms: &[impl std::fmt::Display]) -> std::fmt::Result {
    for (i, term) in terms.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{term}")?;
    }
    Ok(())
}

#[cfg(feature = "rules")]
/// A label or field selector that cannot be parsed or built. The message is Kubernetes' own text (for example
/// `unable to parse requirement: found '', expected: identifier`); an API server returns it as a 400 `BadRequest`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

#[cfg(feature = "rules")]
impl SelectorError {
    pub fn new(message: impl Into<String>) -> Self {
        SelectorError {
            message: message.into(),
        }
    }

    /// The error text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

#[cfg(feature = "rules")]
/// The characters of generated name suffixes: Kubernetes' `rand.String` alphabet, without vowels so that no words
/// are formed.
const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

#[cfg(feature = "rules")]
/// The length of the random suffix `generateName` adds.
pub const GENERATED_NAME_SUFFIX_LENGTH: usize = 5;

#[cfg(feature = "rules")]
/// The longest generateName prefix kept: Kubernetes truncates the prefix so the generated name fits in 63
/// characters.
pub const MAX_GENERATE_NAME_PREFIX_LENGTH: usize = 63 - GENERATED_NAME_SUFFIX_LENGTH;

#[cfg(feature = "rules")]
/// Five random characters from Kubernetes' alphabet (`bcdfghjklmnpqrstvwxz2456789`), the suffix `generateName` gets.
///
/// The randomness comes from version 4 UUIDs (the operating system's generator): each fully random byte gives one
/// 5-bit candidate, kept when it indexes the 27-letter alphabet, so every character is uniformly distributed.
pub fn generate_name_suffix() -> String {
    let mut out = String::with_capacity(GENERATED_NAME_SUFFIX_LENGTH);
    while out.len() < GENERATED_NAME_SUFFIX_LENGTH {
        let bytes = *uuid::Uuid::new_v4().as_bytes();
        // Bytes 6 and 8 carry the UUID version and variant bits; the other 14 are random.
        for (i, byte) in bytes.into_iter().enumerate() {
            if i == 6 || i == 8 || out.len() == GENERATED_NAME_SUFFIX_LENGTH {
                continue;
            }
            if let Some(&c) = NAME_SUFFIX_ALPHABET.get(usize::from(byte & 0x1f)) {
                out.push(char::from(c));
            }
        }
    }
    out
}

#[cfg(feature = "rules")]
/// The name Kubernetes' `SimpleNameGenerator` makes from a generateName prefix: the prefix cut to
/// [`MAX_GENERATE_NAME_PREFIX_LENGTH`] bytes, then [`generate_name_suffix`]. (Kubernetes cuts at a byte; we cut at
/// the character boundary before it, which differs only for prefixes that are invalid names anyway.)
pub fn generate_name(prefix: &str) -> String {
    let end = prefix.floor_char_boundary(MAX_GENERATE_NAME_PREFIX_LENGTH);
    format!("{}{}", &prefix[..end], generate_name_suffix())
}

#[cfg(all(test, feature = "rules"))]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn suffixes_use_the_kubernetes_alphabet() {
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let suffix = generate_name_suffix();
            assert_eq!(suffix.len(), GENERATED_NAME_SUFFIX_LENGTH);
            assert!(suffix.bytes().all(|b| NAME_SUFFIX_ALPHABET.contains(&b)), "{suffix}");
            seen.insert(suffix);
        }
        // 27^5 possible suffixes: 200 draws colliding more than a handful of times would mean broken randomness.
        assert!(seen.len() > 190, "only {} distinct suffixes", seen.len());
    }

    #[test]
    fn generated_names_keep_a_truncated_prefix() {
        let name = generate_name("flunder-");
        assert!(
            name.starts_with("flunder-") && name.len() == "flunder-".len() + 5,
            "{name}"
        );
        let long = "a".repeat(100);
        let name = generate_name(&long);
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"a".repeat(58)));
        let name = generate_name(&format!("{}é", "a".repeat(57)));
        assert_eq!(&name[..57], "a".repeat(57), "a split character is dropped whole");
        assert_eq!(name.len(), 62);
    }

    #[test]
    fn selector_errors_show_their_message() {
        let err = SelectorError::new("boom");
        assert_eq!(err.to_string(), "boom");
        assert_eq!(err.message(), "boom");
    }
}
