//! Label selectors, as `k8s.io/apimachinery/pkg/labels` (the `labelSelector` query parameter) and
//! `metav1.LabelSelector` (`matchLabels` and `matchExpressions`).
//!
//! The grammar, the error texts, the canonical string form and the matching rules are Kubernetes':
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ <set-based> | <exact-match> | <ordering> ]
//! <set-based>   ::= ("in" | "notin") "(" VALUE ["," VALUE]* ")"
//! <exact-match> ::= ("=" | "==" | "!=") VALUE
//! <ordering>    ::= (">" | "<") INTEGER
//! ```
//!
//! Keys must be qualified names and values label values (see [`validation`](super::validation)); whitespace between
//! tokens is ignored. `k!=v` and `k notin (...)` match objects without the label `k`; `k>n` and `k<n` match only
//! labels whose value is an integer.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::field_error::{go_quote, FieldError};
use super::validation::{is_qualified_name, is_valid_label_value};
use super::SelectorError;
use parser::{lex, Parser};

mod parser;

/// Read access to a set of labels, as Kubernetes' `labels.Labels`.
pub trait Labels {
    /// The value of the label `key`, if the label is set.
    fn get_label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// The `metadata.labels` object of a JSON object; a value that is not a string counts as absent.
impl Labels for Map<String, Value> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// A selector operator, as `k8s.io/apimachinery/pkg/selection.Operator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `!k`: the label is not set.
    DoesNotExist,
    /// `k=v`.
    Equals,
    /// `k==v` (the same as `=`).
    DoubleEquals,
    /// `k in (a,b)`.
    In,
    /// `k!=v`: the label is not set or has another value.
    NotEquals,
    /// `k notin (a,b)`: the label is not set or has none of the values.
    NotIn,
    /// `k`: the label is set.
    Exists,
    /// `k>n`: the label is an integer greater than `n`.
    GreaterThan,
    /// `k<n`: the label is an integer less than `n`.
    LessThan,
}

impl Operator {
    /// Kubernetes' name for the operator (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::DoesNotExist => "!",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::In => "in",
            Operator::NotEquals => "!=",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One condition of a label selector: a key, an operator and values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, checking it as Kubernetes' `NewRequirement` does: the key is a qualified name; `in` and
    /// `notin` have values; `=`, `==`, `!=` have exactly one; exists and does-not-exist have none; `gt` and `lt` have
    /// exactly one integer; every value is a label value.
    pub fn new(key: impl Into<String>, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        build_requirement(key.into(), operator, values).map_err(|errs| SelectorError::new(aggregate(&errs)))
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (sorted and without duplicates when parsed from a string).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a set of labels satisfies this requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.get_label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(|v| self.has_value(v)),
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [limit]) = (value.and_then(parse_int), self.values.as_slice()) else {
                    return false;
                };
                let Some(limit) = parse_int(limit) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > limit
                } else {
                    actual < limit
                }
            }
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }
}

impl fmt::Display for Requirement {
    /// The canonical form: `!k`, `k`, `k=v`, `k==v`, `k!=v`, `k>1`, `k<1`, `k in (a,b)`, `k notin (a,b)`, with
    /// several values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in (",
            Operator::NotIn => " notin (",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        if let [single] = self.values.as_slice() {
            f.write_str(single)?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn parse_int(s: &str) -> Option<i64> {
    s.parse().ok()
}

/// Kubernetes' `NewRequirement` checks; the field paths are relative, as Kubernetes reports them in parse errors.
fn build_requirement(key: String, operator: Operator, values: Vec<String>) -> Result<Requirement, Vec<FieldError>> {
    let mut errs = Vec::new();
    let key_errs = is_qualified_name(&key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid("key", &key, &key_errs.join("; ")));
    }
    // A missing list is a nil slice in Kubernetes, which it shows as null.
    let values_json = || {
        if values.is_empty() {
            Value::Null
        } else {
            Value::from(values.clone())
        }
    };
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(FieldError::invalid_json(
            "values",
            &values_json(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            errs.push(FieldError::invalid_json(
                "values",
                &values_json(),
                "exact-match compatibility requires one single value",
            ))
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(FieldError::invalid_json(
            "values",
            &values_json(),
            "values set must be empty for exists and does not exist",
        )),
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                errs.push(FieldError::invalid_json(
                    "values",
                    &values_json(),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, value) in values.iter().enumerate() {
                if parse_int(value).is_none() {
                    errs.push(FieldError::invalid(
                        format!("values[{i}]"),
                        value,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, value) in values.iter().enumerate() {
        let value_errs = is_valid_label_value(value);
        if !value_errs.is_empty() {
            errs.push(FieldError::invalid(
                format!("values[{i}][{key}]"),
                value,
                &value_errs.join("; "),
            ));
        }
    }
    if errs.is_empty() {
        Ok(Requirement { key, operator, values })
    } else {
        Err(errs)
    }
}

/// The text of Kubernetes' aggregate of field errors: one error alone, several in brackets, duplicates dropped.
fn aggregate(errs: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for err in errs {
        let text = err.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A label selector: requirements that must all hold (or, for a null `metav1.LabelSelector`, nothing matches).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    match_nothing: bool,
}

impl LabelSelector {
    /// The selector that matches everything (an empty selector string).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches nothing (a null `metav1.LabelSelector`).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            match_nothing: true,
        }
    }

    /// A selector from requirements, sorted by key as Kubernetes sorts them.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            match_nothing: false,
        }
    }

    /// Parses a `labelSelector` string such as `env in (prod,staging),tier!=db,!canary`.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let tokens = lex(selector);
        let mut parser = Parser { tokens, position: 0 };
        let requirements = parser.parse().map_err(SelectorError::new)?;
        Ok(Self::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` (`{"matchLabels": {...}, "matchExpressions": [...]}`) as Kubernetes'
    /// `LabelSelectorAsSelector` does: null matches nothing, an empty selector matches everything.
    pub fn from_json(selector: &Value) -> Result<Self, SelectorError> {
        let object = match selector {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(object) => object,
            _ => return Err(SelectorError::new("a label selector must be a JSON object")),
        };
        let mut requirements = Vec::new();
        match object.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, value) in labels {
                    let value = value
                        .as_str()
                        .ok_or_else(|| SelectorError::new(format!("matchLabels[{key}] must be a string")))?;
                    requirements.push(Requirement::new(
                        key.clone(),
                        Operator::Equals,
                        vec![value.to_string()],
                    )?);
                }
            }
            Some(_) => return Err(SelectorError::new("matchLabels must be an object")),
        }
        match object.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(expressions)) => {
                for (i, expression) in expressions.iter().enumerate() {
                    requirements.push(expression_requirement(i, expression)?);
                }
            }
            Some(_) => return Err(SelectorError::new("matchExpressions must be an array")),
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.match_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector places no restriction (it matches everything).
    pub fn is_empty(&self) -> bool {
        !self.match_nothing && self.requirements.is_empty()
    }

    /// Whether the selector matches nothing at all (a null `metav1.LabelSelector`).
    pub fn matches_nothing(&self) -> bool {
        self.match_nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The value the label `key` must have, when the selector pins it to one value (`k=v`, `k==v`, `k in (v)`).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|r| r.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical selector string: requirements sorted by key, joined by commas, without spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::write_terms(f, &self.requirements)
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// One entry of `matchExpressions`.
fn expression_requirement(index: usize, expression: &Value) -> Result<Requirement, SelectorError> {
    let shape_error = |what: &str| SelectorError::new(format!("matchExpressions[{index}]{what}"));
    let object = expression
        .as_object()
        .ok_or_else(|| shape_error(" must be an object"))?;
    let text = |name: &str| match object.get(name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(shape_error(&format!(".{name} must be a string"))),
    };
    let key = text("key")?;
    let operator = text("operator")?;
    let operator = match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{} is not a valid label selector operator",
                go_quote(other)
            )))
        }
    };
    let values = match object.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| shape_error(".values must be an array of strings"))?,
        Some(_) => return Err(shape_error(".values must be an array of strings")),
    };
    Requirement::new(key, operator, values)
}

#[cfg(test)]
mod tests;
