//! Field selectors, as `k8s.io/apimachinery/pkg/fields` (the `fieldSelector` query parameter).
//!
//! A selector is a comma-separated list of `field=value`, `field==value` or `field!=value` terms, all of which must
//! hold. In values, `\`, `,` and `=` are escaped with a backslash (`a\,b` is the value `a,b`); any other escape, a
//! trailing backslash, or an unescaped `=` in a value is an error. Fields are not checked here: the API server
//! checks them against the fields a resource supports (see [`FieldSelector::transform`] and
//! [`default_field_label_conversion`]). A field an object does not have compares as the empty string.

use std::fmt;
use std::str::FromStr;

use super::labels::Operator;
use super::SelectorError;

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field, such as `metadata.name`.
    pub field: String,
    /// [`Operator::Equals`] (for `=` and `==`) or [`Operator::NotEquals`].
    pub operator: Operator,
    /// The value, unescaped.
    pub value: String,
}

impl FieldRequirement {
    fn matches(&self, actual: &str) -> bool {
        match self.operator {
            Operator::NotEquals => actual != self.value,
            _ => actual == self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    /// `field=value` or `field!=value`, with the value escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.operator == Operator::NotEquals {
            "!="
        } else {
            "="
        };
        write!(f, "{}{}{}", self.field, op, escape_value(&self.value))
    }
}

/// A parsed field selector: terms that must all hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything (an empty selector string).
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses a `fieldSelector` string such as `metadata.name=foo,status.phase!=Running`.
    ///
    /// Terms are kept in the order Kubernetes keeps them: sorted by their text. A term with neither field nor value
    /// (`=`) is dropped.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let (field, operator, raw_value) = split_term(term).ok_or_else(|| {
                SelectorError::new(format!("invalid selector: '{selector}'; can't understand '{term}'"))
            })?;
            let value = unescape_value(raw_value)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The selector matching exactly one field value (Kubernetes' `OneTermEqualSelector`).
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        let requirement = FieldRequirement {
            field: field.into(),
            operator: Operator::Equals,
            value: value.into(),
        };
        FieldSelector {
            requirements: vec![requirement],
        }
    }

    /// The terms, so the caller can check that each field is one the resource supports.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector places no restriction.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's fields satisfy every term. `get` returns a field's value, or `None` when the object does
    /// not have the field, which then compares as the empty string.
    pub fn matches<F, S>(&self, get: F) -> bool
    where
        F: Fn(&str) -> Option<S>,
        S: AsRef<str>,
    {
        self.requirements.iter().all(|r| match get(&r.field) {
            Some(actual) => r.matches(actual.as_ref()),
            None => r.matches(""),
        })
    }

    /// The value `field` must have, when a `=` or `==` term pins it.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator != Operator::NotEquals)
            .map(|r| r.value.as_str())
    }

    /// Rewrites every term's field and value, as Kubernetes' `Transform` does when it converts field labels for a
    /// resource: `f` returns the new field and value, or an error (for a field the resource does not support). A
    /// term whose new field and value are both empty is dropped.
    pub fn transform<F, E>(&self, mut f: F) -> Result<Self, E>
    where
        F: FnMut(&str, &str) -> Result<(String, String), E>,
    {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let (field, value) = f(&r.field, &r.value)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field,
                operator: r.operator,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }
}

impl fmt::Display for FieldSelector {
    /// The terms joined by commas, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::write_terms(f, &self.requirements)
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The field label conversion Kubernetes applies to resources that declare no selectable fields of their own: only
/// `metadata.name` and `metadata.namespace` are accepted. Use it with [`FieldSelector::transform`]; an API server
/// answers the error with 400 `BadRequest`.
pub fn default_field_label_conversion(field: &str, value: &str) -> Result<(String, String), String> {
    match field {
        "metadata.name" | "metadata.namespace" => Ok((field.to_string(), value.to_string())),
        _ => Err(format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            super::field_error::go_quote(field)
        )),
    }
}

/// Escapes a value for use in a field selector: `\` becomes `\\`, `,` becomes `\,` and `=` becomes `\=`.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`], rejecting unknown escapes, a trailing backslash and unescaped `,` or `=`.
pub fn unescape_value(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut in_slash = false;
    for c in value.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::new(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Kubernetes prints the rune with %v, that is as its code point in decimal.
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                )))
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::new(
            "invalid field selector: invalid escape sequence: \\",
        ));
    }
    Ok(out)
}

/// Splits a selector at the commas that are not escaped; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, `==` or `=`, tried in that order at each position); the field part
/// cannot contain escapes.
fn split_term(term: &str) -> Option<(&str, Operator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, operator) in [
            ("!=", Operator::NotEquals),
            ("==", Operator::Equals),
            ("=", Operator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn parse(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
        let map = fields(pairs);
        parse(selector).matches(|f| map.get(f).map(String::as_str))
    }

    #[test]
    fn good_selectors_restring() {
        for (input, canonical) in [
            ("", ""),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a!=b", "a!=b"),
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("z=c,x=a,y!=b", "x=a,y!=b,z=c"),
            ("x=", "x="),
            ("x=,z= ", "x=,z= "),
            ("x=a\\,b", "x=a\\,b"),
            ("x=a\\=b\\\\", "x=a\\=b\\\\"),
            ("=", ""),
            (",,a=b,", "a=b"),
            ("metadata.name=foo", "metadata.name=foo"),
        ] {
            assert_eq!(parse(input).to_string(), canonical, "{input:?}");
        }
    }

    #[test]
    fn terms_split_and_unescape() {
        let s = parse("spec.x=a\\,b\\=c\\\\,metadata.name!=n");
        let reqs = s.requirements();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            (reqs[0].field.as_str(), reqs[0].operator, reqs[0].value.as_str()),
            ("metadata.name", Operator::NotEquals, "n")
        );
        assert_eq!(
            (reqs[1].field.as_str(), reqs[1].operator, reqs[1].value.as_str()),
            ("spec.x", Operator::Equals, "a,b=c\\")
        );
        let s = parse("a!=\\=b");
        assert_eq!(
            (s.requirements()[0].operator, s.requirements()[0].value.as_str()),
            (Operator::NotEquals, "=b")
        );
    }

    #[test]
    fn errors_have_kubernetes_text() {
        let err = |s: &str| FieldSelector::parse(s).unwrap_err().to_string();
        assert_eq!(err("a"), "invalid selector: 'a'; can't understand 'a'");
        assert_eq!(err("b=c,a"), "invalid selector: 'b=c,a'; can't understand 'a'");
        assert_eq!(err("a=b=c"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(err("a===b"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(err("a=b\\"), "invalid field selector: invalid escape sequence: \\");
        assert_eq!(err("a=b\\!"), "invalid field selector: invalid escape sequence: \\!");
        assert_eq!(err("a=\\x"), "invalid field selector: invalid escape sequence: \\x");
        assert_eq!(escape_value("a\\b,c=d!"), "a\\\\b\\,c\\=d!");
        assert_eq!(unescape_value("a\\\\b\\,c\\=d!").expect("valid"), "a\\b,c=d!");
    }

    #[test]
    fn matching_treats_missing_fields_as_empty() {
        assert!(matches("", &[("x", "y")]));
        assert!(matches("x=y", &[("x", "y")]));
        assert!(matches("x=y,z=w", &[("x", "y"), ("z", "w")]));
        assert!(matches("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
        assert!(!matches("x=y", &[("x", "z")]));
        assert!(!matches("x=y,z=w", &[("x", "w"), ("z", "w")]));
        assert!(!matches("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
        assert!(matches("x=", &[]), "a missing field equals the empty string");
        assert!(!matches("x!=", &[]));
        assert!(matches("x!=a", &[]));
        assert!(!matches("x=a", &[]));
        assert!(matches("x=a\\,b", &[("x", "a,b")]));
        let owned = |f: &str| (f == "metadata.name").then(|| "foo".to_string());
        assert!(parse("metadata.name=foo").matches(owned));
    }

    #[test]
    fn exact_match_and_transform() {
        let s = parse("metadata.name=foo,metadata.namespace!=bar");
        assert_eq!(s.requires_exact_match("metadata.name"), Some("foo"));
        assert_eq!(s.requires_exact_match("metadata.namespace"), None);
        assert!(!s.is_empty() && FieldSelector::everything().is_empty());
        assert_eq!(s.transform(default_field_label_conversion).expect("known"), s);
        assert_eq!(
            parse("spec.x=1").transform(default_field_label_conversion).unwrap_err(),
            "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let dropped = s.transform(|f, v| -> Result<_, ()> {
            Ok(if f == "metadata.name" {
                (String::new(), String::new())
            } else {
                (f.to_string(), v.to_string())
            })
        });
        assert_eq!(dropped.expect("ok").to_string(), "metadata.namespace!=bar");
        assert_eq!(
            FieldSelector::one_term_equal("metadata.name", "a,b").to_string(),
            "metadata.name=a\\,b"
        );
        assert_eq!("a=b".parse::<FieldSelector>().expect("parses").requirements().len(), 1);
    }
}
