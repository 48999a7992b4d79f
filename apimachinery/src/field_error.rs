//! Field-level validation errors, as `k8s.io/apimachinery/pkg/util/validation/field`.
//!
//! A [`FieldError`] becomes one `StatusCause` of a 422 `Invalid` Status: `reason` is [`FieldErrorReason::as_str`],
//! `field` the path and `message` the text Kubernetes calls the error body (`Invalid value: "x": detail`). Its
//! [`Display`](std::fmt::Display) is Kubernetes' `Error()`, `field: body`, which the Status message lists.

use std::fmt;

use serde_json::Value;

/// Why a field is wrong, as Kubernetes' `field.ErrorType`; [`as_str`](Self::as_str) is the `StatusCause.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorReason {
    /// A value that was looked up does not exist (`FieldValueNotFound`).
    NotFound,
    /// A required value is missing or empty (`FieldValueRequired`).
    Required,
    /// A value repeats one that must be unique (`FieldValueDuplicate`).
    Duplicate,
    /// A value is malformed or out of range (`FieldValueInvalid`).
    Invalid,
    /// A value is not one of the supported values (`FieldValueNotSupported`).
    NotSupported,
    /// A value may not be set or changed here (`FieldValueForbidden`).
    Forbidden,
    /// A value is too long (`FieldValueTooLong`).
    TooLong,
    /// A list has too many items (`FieldValueTooMany`).
    TooMany,
    /// Something went wrong in the validator itself (`InternalError`).
    Internal,
    /// A value has the wrong JSON type (`FieldValueTypeInvalid`).
    TypeInvalid,
}

impl FieldErrorReason {
    /// The `StatusCause.reason` string, such as `FieldValueInvalid`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorReason::NotFound => "FieldValueNotFound",
            FieldErrorReason::Required => "FieldValueRequired",
            FieldErrorReason::Duplicate => "FieldValueDuplicate",
            FieldErrorReason::Invalid => "FieldValueInvalid",
            FieldErrorReason::NotSupported => "FieldValueNotSupported",
            FieldErrorReason::Forbidden => "FieldValueForbidden",
            FieldErrorReason::TooLong => "FieldValueTooLong",
            FieldErrorReason::TooMany => "FieldValueTooMany",
            FieldErrorReason::Internal => "InternalError",
            FieldErrorReason::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words an error body starts with, such as `Invalid value` (Kubernetes' `ErrorType.String()`).
    pub fn description(self) -> &'static str {
        match self {
            FieldErrorReason::NotFound => "Not found",
            FieldErrorReason::Required => "Required value",
            FieldErrorReason::Duplicate => "Duplicate value",
            FieldErrorReason::Invalid | FieldErrorReason::TypeInvalid => "Invalid value",
            FieldErrorReason::NotSupported => "Unsupported value",
            FieldErrorReason::Forbidden => "Forbidden",
            FieldErrorReason::TooLong => "Too long",
            FieldErrorReason::TooMany => "Too many",
            FieldErrorReason::Internal => "Internal error",
        }
    }
}

impl fmt::Display for FieldErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field-level validation error.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// Why the field is wrong.
    pub reason: FieldErrorReason,
    /// The field's path, such as `metadata.name` or `metadata.labels`.
    pub field: String,
    /// The full Kubernetes error body without the field, such as `Required value: name or generateName is
    /// required` or `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of ...`.
    pub message: String,
}

impl FieldError {
    /// An error whose body shows no value: `<description>` or `<description>: <detail>`. This is how Kubernetes
    /// renders required, forbidden, too-long and internal errors, and errors whose value is omitted; it is also the
    /// rendering for errors reported by plugins, which carry a detail but no value.
    pub fn with_detail(reason: FieldErrorReason, field: impl Into<String>, detail: &str) -> Self {
        Self::build(reason, field.into(), None, detail)
    }

    /// An error a strategy reported with a detail and no value (a plugin's, a built-in type's): the body is the
    /// detail alone when it already starts with the reason's description (`Invalid value: "x": ...`), else as
    /// [`Self::with_detail`].
    pub fn reported(reason: FieldErrorReason, field: impl Into<String>, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        if !detail.is_empty() && detail.starts_with(reason.description()) {
            return FieldError {
                reason,
                field: field.into(),
                message: detail,
            };
        }
        Self::with_detail(reason, field, &detail)
    }

    /// `FieldValueRequired`: `Required value[: detail]`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self::with_detail(FieldErrorReason::Required, field, detail)
    }

    /// `FieldValueForbidden`: `Forbidden[: detail]`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::with_detail(FieldErrorReason::Forbidden, field, detail)
    }

    /// `FieldValueTooLong` for a value longer than `max_bytes`: `Too long: may not be more than N bytes`.
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Self {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        Self::with_detail(
            FieldErrorReason::TooLong,
            field,
            &format!("may not be more than {max_bytes} {unit}"),
        )
    }

    /// `FieldValueTooMany` for a list of `actual` items (when known) that may have at most `max` items.
    pub fn too_many(field: impl Into<String>, actual: Option<usize>, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        let detail = format!("must have at most {max} {unit}");
        match actual {
            Some(actual) => Self::build(
                FieldErrorReason::TooMany,
                field.into(),
                Some(actual.to_string()),
                &detail,
            ),
            None => Self::with_detail(FieldErrorReason::TooMany, field, &detail),
        }
    }

    /// `InternalError`: `Internal error: detail`.
    pub fn internal(field: impl Into<String>, detail: &str) -> Self {
        Self::with_detail(FieldErrorReason::Internal, field, detail)
    }

    /// `FieldValueInvalid` for a string value: `Invalid value: "value": detail` (the value quoted as Go's `%q`).
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self::build(FieldErrorReason::Invalid, field.into(), Some(go_quote(value)), detail)
    }

    /// `FieldValueInvalid` for any JSON value, rendered as Kubernetes renders a value that is not a plain Go string:
    /// numbers and booleans as they are, anything else (a UID, a timestamp, a list, an object, null) as JSON.
    pub fn invalid_json(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::build(
            FieldErrorReason::Invalid,
            field.into(),
            Some(render_json_value(value)),
            detail,
        )
    }

    /// `FieldValueInvalid` with a value already rendered the way Kubernetes renders it (for Go structs, whose JSON
    /// field order a `serde_json::Value` does not keep).
    pub fn invalid_rendered(field: impl Into<String>, rendered: String, detail: &str) -> Self {
        Self::build(FieldErrorReason::Invalid, field.into(), Some(rendered), detail)
    }

    /// `FieldValueTypeInvalid`: the value has the wrong JSON type; rendered like [`invalid_json`](Self::invalid_json).
    pub fn type_invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::build(
            FieldErrorReason::TypeInvalid,
            field.into(),
            Some(render_json_value(value)),
            detail,
        )
    }

    /// `FieldValueNotSupported`: `Unsupported value: "value": supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::build(
            FieldErrorReason::NotSupported,
            field.into(),
            Some(go_quote(value)),
            &detail,
        )
    }

    /// `FieldValueDuplicate`: `Duplicate value: "value"`.
    pub fn duplicate(field: impl Into<String>, value: &str) -> Self {
        Self::build(FieldErrorReason::Duplicate, field.into(), Some(go_quote(value)), "")
    }

    /// `FieldValueNotFound`: `Not found: "value"`.
    pub fn not_found(field: impl Into<String>, value: &str) -> Self {
        Self::build(FieldErrorReason::NotFound, field.into(), Some(go_quote(value)), "")
    }

    fn build(reason: FieldErrorReason, field: String, value: Option<String>, detail: &str) -> Self {
        let mut message = reason.description().to_string();
        if let Some(value) = value {
            message.push_str(": ");
            message.push_str(&value);
        }
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError { reason, field, message }
    }
}

impl fmt::Display for FieldError {
    /// Kubernetes' `field.Error.Error()`: `field: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// Quotes a string as Go's `%q` (`strconv.Quote`) does: double quotes, backslash escapes for `"`, `\` and control
/// characters, `\u`/`\U` escapes for other non-printable characters.
///
/// Go decides printability from Unicode tables; without them we treat controls, whitespace other than the space,
/// format characters commonly met in text, and private-use characters as non-printable, which agrees with Go on
/// everything but unassigned code points.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if u32::from(c) < 0x80 => push_escape(&mut out, "\\x", 2, u32::from(c)),
            c if u32::from(c) < 0x10000 => push_escape(&mut out, "\\u", 4, u32::from(c)),
            c => push_escape(&mut out, "\\U", 8, u32::from(c)),
        }
    }
    out.push('"');
    out
}

fn push_escape(out: &mut String, prefix: &str, width: usize, code: u32) {
    use std::fmt::Write as _;
    out.push_str(prefix);
    // Writing to a String cannot fail.
    let _ = write!(out, "{code:0width$x}");
}

/// An approximation of Go's `unicode.IsPrint` (see [`go_quote`]).
pub fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let code = c as u32;
    let format_or_private = matches!(
        code,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE..=0xFFFF
            | 0x110BD
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xE000..=0xF8FF
            | 0xF0000..=0x10FFFF
    );
    !format_or_private
}

/// Renders a value as Kubernetes renders a non-string bad value: numbers and booleans with `%v`, the rest with
/// `json.Marshal` (which escapes `<`, `>`, `&`, U+2028 and U+2029).
pub fn render_json_value(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// JSON text as Go's `encoding/json` writes it.
pub fn go_json(value: &Value) -> String {
    let text = value.to_string();
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    // Outside strings JSON text holds none of these characters, so replacing them everywhere is safe.
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reported_detail_is_not_prefixed_twice() {
        let plain = FieldError::reported(FieldErrorReason::Invalid, "spec.x", "must be positive");
        assert_eq!(plain.message, "Invalid value: must be positive");
        let rendered = FieldError::reported(
            FieldErrorReason::Invalid,
            "spec.x",
            "Invalid value: \"-1\": must be positive",
        );
        assert_eq!(rendered.message, "Invalid value: \"-1\": must be positive");
        assert_eq!(
            FieldError::reported(FieldErrorReason::Required, "spec.x", "").message,
            "Required value"
        );
    }

    #[test]
    fn bodies_match_kubernetes() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(e.reason.as_str(), "FieldValueRequired");
        assert_eq!(e.message, "Required value: name or generateName is required");
        assert_eq!(
            e.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(FieldError::required("metadata.namespace", "").message, "Required value");

        let e = FieldError::invalid("metadata.name", "Bad_Name", "must be lowercase");
        assert_eq!(e.message, r#"Invalid value: "Bad_Name": must be lowercase"#);
        assert_eq!(e.reason, FieldErrorReason::Invalid);

        assert_eq!(
            FieldError::not_supported("spec.referenceType", "Foo", &["Flunder", "Fischer"]).message,
            r#"Unsupported value: "Foo": supported values: "Flunder", "Fischer""#
        );
        assert_eq!(
            FieldError::forbidden("metadata.namespace", "not allowed on this type").message,
            "Forbidden: not allowed on this type"
        );
        assert_eq!(
            FieldError::too_long("metadata.annotations", 262144).message,
            "Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::too_long("x", 1).message,
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::too_many("x", Some(3), 2).message,
            "Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            FieldError::too_many("x", None, 1).message,
            "Too many: must have at most 1 item"
        );
        assert_eq!(FieldError::duplicate("x", "a").message, r#"Duplicate value: "a""#);
        assert_eq!(FieldError::not_found("x", "a").message, r#"Not found: "a""#);
        assert_eq!(FieldError::internal("x", "boom").message, "Internal error: boom");
        assert_eq!(
            FieldError::with_detail(FieldErrorReason::Invalid, "spec", "may not be set").message,
            "Invalid value: may not be set"
        );
    }

    #[test]
    fn json_values_render_like_go() {
        assert_eq!(
            FieldError::invalid_json("g", &json!(-1), "d").message,
            "Invalid value: -1: d"
        );
        assert_eq!(
            FieldError::invalid_json("g", &json!(true), "d").message,
            "Invalid value: true: d"
        );
        assert_eq!(
            FieldError::invalid_json("g", &Value::Null, "d").message,
            "Invalid value: null: d"
        );
        assert_eq!(
            FieldError::invalid_json("g", &json!(["a", "b"]), "d").message,
            r#"Invalid value: ["a","b"]: d"#
        );
        assert_eq!(
            FieldError::invalid_json("g", &json!("<&>"), "d").message,
            r#"Invalid value: "\u003c\u0026\u003e": d"#
        );
        assert_eq!(
            FieldError::type_invalid("g", &json!(5), "d").reason.as_str(),
            "FieldValueTypeInvalid"
        );
    }

    #[test]
    fn quoting_matches_go() {
        assert_eq!(go_quote("plain"), r#""plain""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\r\u{7}\u{8}\u{b}\u{c}"), r#""\n\t\r\a\b\v\f""#);
        assert_eq!(go_quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
        assert_eq!(go_quote("rā 日本"), "\"rā 日本\"");
        assert_eq!(go_quote("\u{a0}\u{200b}\u{feff}"), r#""\u00a0\u200b\ufeff""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
        assert_eq!(go_quote("<&>"), r#""<&>""#);
    }
}
