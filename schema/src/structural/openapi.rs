//! A port of kube-openapi's schema validator (`k8s.io/kube-openapi/pkg/validation/validate`, the version
//! kube-apiserver 1.37 vendors), the validator CRD schemas are enforced with.
//!
//! Its shape is kept so that its results are kube's: for each value, the validators of `SchemaValidator` run in the
//! same order (type, allOf/anyOf/oneOf/not, string, format, number, slice, enum, object), each error carries the
//! kube-openapi error code, name (the dotted path) and value that kube turns into a field error, errors are
//! de-duplicated by message as `Result.AddErrors` does, and every result counts its successful checks
//! (`MatchCount`), which decides which alternative's errors `anyOf` and `oneOf` report.

use serde_json::{Map, Value};

use super::formats;
use super::pattern;
use apimachinery::field_error::go_quote;
use apimachinery::gofmt::{self, Num};

/// The fields the host owns at the root of an object, which the plugin's schema does not describe.
pub(super) const HOST_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// How kube turns a kube-openapi error into a field error (`kubeOpenAPIResultToFieldErrors`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Code {
    /// `RequiredFailCode`: `field.Required`.
    Required,
    /// `EnumFailCode`: `field.NotSupported` with these allowed values.
    Enum(Vec<Value>),
    /// `TooLongFailCode`: `field.TooLong` with this limit.
    TooLong(i64),
    /// `MaxItemsFailCode` and `TooManyPropertiesCode`: `field.TooMany`.
    TooMany {
        /// The number of items or properties.
        actual: i64,
        /// The limit.
        max: i64,
    },
    /// `InvalidTypeCode`: `field.TypeInvalid` with the message as detail.
    InvalidType,
    /// Any other validation code: `field.Invalid` with the message as detail.
    Invalid,
    /// Not a validation error (a composite such as `anyOf`, or a range check): `field.Invalid` on the whole object.
    Composite,
}

/// One error of kube-openapi: an `errors.Validation` (or, for [`Code::Composite`], a plain error).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpenApiError {
    /// How kube reports it.
    pub code: Code,
    /// The dotted path kube-openapi names the value by (`spec.items[0].name`; a root property may start with `.`).
    pub name: String,
    /// The value kube shows (`Validation.Value`); `None` or JSON null for Go's nil.
    pub value: Option<Value>,
    /// kube-openapi's message, which kube uses as the detail (and to de-duplicate).
    pub message: String,
}

/// A validation result (`validate.Result`): the errors, de-duplicated by message, and the count of checks passed.
#[derive(Debug, Default)]
pub(super) struct Res {
    pub errors: Vec<OpenApiError>,
    count: usize,
}

impl Res {
    fn passed(count: usize) -> Res {
        Res {
            errors: Vec::new(),
            count,
        }
    }

    fn failed(error: OpenApiError) -> Res {
        Res {
            errors: vec![error],
            count: 0,
        }
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn add(&mut self, error: OpenApiError) {
        if !self.errors.iter().any(|e| e.message == error.message) {
            self.errors.push(error);
        }
    }

    fn add_opt(&mut self, error: Option<OpenApiError>) {
        if let Some(error) = error {
            self.add(error);
        }
    }

    fn merge(&mut self, other: Res) {
        for error in other.errors {
            self.add(error);
        }
        self.count += other.count;
    }
}

fn error(code: Code, name: &str, value: Option<Value>, message: String) -> OpenApiError {
    OpenApiError {
        code,
        name: name.to_string(),
        value,
        message,
    }
}

fn composite(message: String) -> OpenApiError {
    error(Code::Composite, "", None, message)
}

/// `errors.InvalidType` with a string value: `<name> in body must be of type <type>: "<value>"`.
fn invalid_type(name: &str, type_name: &str, value: &str) -> OpenApiError {
    error(
        Code::InvalidType,
        name,
        Some(Value::String(value.to_string())),
        format!("{name} in body must be of type {type_name}: {}", go_quote(value)),
    )
}

/// The types a schema allows: `type`, or integer and string for `x-kubernetes-int-or-string` (as kube converts it).
pub(super) fn schema_types(s: &Value) -> Vec<&str> {
    if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return vec!["integer", "string"];
    }
    match s.get("type") {
        Some(Value::String(t)) if !t.is_empty() => vec![t.as_str()],
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a schema says `nullable: true`.
pub(super) fn nullable(s: &Value) -> bool {
    s.get("nullable") == Some(&Value::Bool(true))
}

/// An integer keyword (`maxLength`, `minItems`, ...).
fn int_keyword(s: &Value, name: &str) -> Option<i64> {
    let n = s.get(name)?;
    n.as_i64()
        .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(gofmt::f64_to_i64))
}

fn float_keyword(s: &Value, name: &str) -> Option<f64> {
    s.get(name)?.as_f64()
}

fn bool_keyword(s: &Value, name: &str) -> bool {
    s.get(name) == Some(&Value::Bool(true))
}

fn schema_list<'a>(s: &'a Value, name: &str) -> &'a [Value] {
    s.get(name).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `SchemaValidator.Validate`: validates `data` at `path` against schema `s`. `root` marks the object whose host fields
/// are skipped.
pub(super) fn validate(s: &Value, data: &Value, path: &str, root: bool) -> Res {
    validate_ratcheting(s, data, None, path, root)
}

/// [`validate`] on an update, with kube's ratcheting (`ratchetingValueValidator`): `old` is the value correlated
/// with `data` in the stored object (by property name and `additionalProperties` key; list items are not
/// correlated here), and a node whose value equals its old one reports no errors.
pub(super) fn validate_ratcheting(s: &Value, data: &Value, old: Option<&Value>, path: &str, root: bool) -> Res {
    let mut res = validate_node(s, data, old, path, root);
    if !res.is_valid() && old.is_some_and(|old| deep_equal(old, data)) {
        res.errors.clear();
    }
    res
}

fn validate_node(s: &Value, data: &Value, old: Option<&Value>, path: &str, root: bool) -> Res {
    let types = schema_types(s);
    let format = formats::effective_format(s.get("format").and_then(Value::as_str).unwrap_or(""), &types);
    let mut res = Res::default();
    if data.is_null() {
        res.merge(validate_type(&types, nullable(s), format, path, data));
        res.add_opt(validate_enum(s, data, path));
        return res;
    }
    if !types.is_empty() || !format.is_empty() {
        res.merge(validate_type(&types, nullable(s), format, path, data));
        res.count += 1;
    }
    res.merge(validate_schema_props(s, data, path, root));
    res.count += 1;
    if let Value::String(text) = data {
        res.add_opt(validate_string(s, text, path));
        res.count += 1;
        if !format.is_empty() && formats::known(format) {
            if !formats::validates(format, text) {
                res.add(error(
                    Code::InvalidType,
                    path,
                    Some(data.clone()),
                    format!("{path} in body must be of type {format}: {}", go_quote(text)),
                ));
            }
            res.count += 1;
        }
    }
    if let Some(n) = Num::of(data) {
        res.merge(validate_number(s, &types, format, n, path));
        res.count += 1;
    }
    if let Value::Array(items) = data {
        res.merge(validate_slice(s, items, path));
        res.count += 1;
    }
    res.add_opt(validate_enum(s, data, path));
    res.count += 1;
    if let Value::Object(map) = data {
        let old = old.and_then(Value::as_object);
        res.merge(validate_object(s, map, old, path, root));
        res.count += 1;
    }
    res.count += 1;
    res
}

/// The JSON type of a value and the format kube-openapi infers for it (`schemaInfoForType`).
fn type_of(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(_) => match Num::of(data) {
            Some(Num::Int(_)) => ("integer", "int64"),
            _ => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("", ""),
    }
}

/// `typeValidator.Validate`.
fn validate_type(types: &[&str], nullable: bool, format: &str, path: &str, data: &Value) -> Res {
    let joined = types.join(",");
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !nullable {
            return Res::failed(invalid_type(path, &joined, "null"));
        }
        return Res::passed(1);
    }
    let (data_type, data_format) = type_of(data);
    let float_int = matches!(Num::of(data), Some(Num::Float(f)) if gofmt::is_float64_a_json_integer(f))
        && types.contains(&"integer");
    let int_float = data_type == "integer" && types.contains(&"number");
    let string_or_slice = data.is_string() || data.is_array();
    let type_matches = types.contains(&data_type) || float_int || int_float;
    // A value other than a string or list must have one of the types or the format's type.
    if !(string_or_slice || format.is_empty() || type_matches || data_format == format) {
        return Res::failed(invalid_type(path, format, data_format));
    }
    // A string or list with a format passes unless the schema is numeric.
    let numeric = types.contains(&"number") || types.contains(&"integer");
    if string_or_slice && !format.is_empty() && !numeric {
        return Res::passed(1);
    }
    if !type_matches {
        return Res::failed(invalid_type(path, &joined, data_type));
    }
    Res::passed(1)
}

/// `schemaPropsValidator.Validate`: `anyOf`, `oneOf`, `allOf` and `not`.
fn validate_schema_props(s: &Value, data: &Value, path: &str, root: bool) -> Res {
    let mut main = Res::default();
    let any_of = schema_list(s, "anyOf");
    if !any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        for sub in any_of {
            let result = validate(sub, data, path, root);
            if result.is_valid() {
                best = None;
                first_success = Some(result);
                break;
            }
            if best.as_ref().is_none_or(|b| result.count > b.count) {
                best = Some(result);
            }
        }
        if first_success.is_none() {
            main.add(composite(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            )));
        }
        if let Some(result) = best.or(first_success) {
            main.merge(result);
        }
    }
    let one_of = schema_list(s, "oneOf");
    if !one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for sub in one_of {
            let result = validate(sub, data, path, root);
            if result.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(result);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| result.count > b.count) {
                best = Some(result);
            }
        }
        if validated != 1 {
            let detail = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(composite(format!(
                "{} must validate one and only one schema (oneOf). {detail}",
                go_quote(path)
            )));
            if let Some(result) = best {
                main.merge(result);
            }
        } else if let Some(result) = first_success {
            main.merge(result);
        }
    }
    let all_of = schema_list(s, "allOf");
    if !all_of.is_empty() {
        let mut validated = 0;
        for sub in all_of {
            let result = validate(sub, data, path, root);
            if result.is_valid() {
                validated += 1;
            }
            main.merge(result);
        }
        if validated != all_of.len() {
            let detail = if validated == 0 { ". None validated" } else { "" };
            main.add(composite(format!(
                "{} must validate all the schemas (allOf){detail}",
                go_quote(path)
            )));
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        if validate(not, data, path, root).is_valid() {
            main.add(composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
    }
    main.count += 1;
    main
}

/// `stringValidator.Validate`: the first of maxLength, minLength and pattern that fails. Lengths count characters.
fn validate_string(s: &Value, text: &str, path: &str) -> Option<OpenApiError> {
    let length = text.chars().count() as i64;
    let value = || Some(Value::String(text.to_string()));
    if let Some(max) = int_keyword(s, "maxLength").filter(|max| length > *max) {
        return Some(error(
            Code::TooLong(max),
            path,
            value(),
            format!("{path} in body should be at most {max} chars long"),
        ));
    }
    if let Some(min) = int_keyword(s, "minLength").filter(|min| length < *min) {
        return Some(error(
            Code::Invalid,
            path,
            value(),
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    let pattern = s.get("pattern").and_then(Value::as_str).unwrap_or("");
    if pattern.is_empty() {
        return None;
    }
    let failed = |shown: String| {
        error(
            Code::Invalid,
            path,
            value(),
            format!("{path} in body should match '{shown}'"),
        )
    };
    match pattern::compile(pattern) {
        Err(e) => Some(failed(format!("{pattern}, but pattern is invalid: {e}"))),
        Ok(re) if !re.is_match(text) => Some(failed(pattern.to_string())),
        Ok(_) => None,
    }
}

/// `IsValueValidAgainstRange`: whether a value (or a limit) fits the schema's numeric type and format; a plain error.
fn range_error(n: Num, type_name: &str, format: &str, prefix: &str, path: &str) -> Option<OpenApiError> {
    let text = match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => gofmt::float_f(f),
    };
    let out_of_range = match (type_name, format) {
        ("integer", "int32") => text.parse::<i32>().is_err(),
        ("integer", _) => text.parse::<i64>().is_err(),
        (_, "float") => text.parse::<f32>().map_or(true, f32::is_infinite),
        _ => false,
    };
    out_of_range.then(|| {
        composite(if format.is_empty() {
            format!("{prefix} value must be of type {type_name} (default format) in {path}")
        } else {
            format!("{prefix} value must be of type {type_name} with format {format} in {path}")
        })
    })
}

fn not_positive(path: &str, factor: Num) -> OpenApiError {
    error(
        Code::Invalid,
        path,
        Some(factor.to_value()),
        format!(
            "factor MultipleOf declared for {path} must be positive: {}",
            factor.go_v()
        ),
    )
}

fn not_multiple(path: &str, factor: Num, data: Num) -> OpenApiError {
    error(
        Code::Invalid,
        path,
        Some(data.to_value()),
        format!("{path} in body should be a multiple of {}", factor.go_v()),
    )
}

/// `MultipleOf` on floats.
fn multiple_of_float(path: &str, data: f64, factor: f64) -> Option<OpenApiError> {
    if factor <= 0.0 {
        return Some(not_positive(path, Num::Float(factor)));
    }
    let quotient = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    (!gofmt::is_float64_a_json_integer(quotient)).then(|| not_multiple(path, Num::Float(factor), Num::Float(data)))
}

/// `MultipleOfNativeType`: integers are checked against the factor truncated to an integer.
fn multiple_of_native(path: &str, data: Num, factor: f64) -> Option<OpenApiError> {
    match data {
        Num::Int(v) => {
            let f = gofmt::f64_to_i64(factor);
            if f <= 0 {
                return Some(not_positive(path, Num::Int(f)));
            }
            (v % f != 0).then(|| not_multiple(path, Num::Int(f), data))
        }
        Num::Float(v) => multiple_of_float(path, v, factor),
    }
}

/// A failed bound: `should be less than (or equal to)` for a maximum, `greater than` for a minimum.
fn exceeds(path: &str, bound: Num, exclusive: bool, data: Num, maximum: bool) -> OpenApiError {
    let relation = match (maximum, exclusive) {
        (true, false) => "less than or equal to",
        (true, true) => "less than",
        (false, false) => "greater than or equal to",
        (false, true) => "greater than",
    };
    error(
        Code::Invalid,
        path,
        Some(data.to_value()),
        format!("{path} in body should be {relation} {}", bound.go_v()),
    )
}

/// `Maximum`/`Minimum` on floats.
fn bound_float(path: &str, data: f64, bound: f64, exclusive: bool, maximum: bool) -> Option<OpenApiError> {
    let fails = match (maximum, exclusive) {
        (true, false) => data > bound,
        (true, true) => data >= bound,
        (false, false) => data < bound,
        (false, true) => data <= bound,
    };
    fails.then(|| exceeds(path, Num::Float(bound), exclusive, Num::Float(data), maximum))
}

/// `MaximumNativeType`/`MinimumNativeType`: integers are compared with the bound truncated to an integer.
fn bound_native(path: &str, data: Num, bound: f64, exclusive: bool, maximum: bool) -> Option<OpenApiError> {
    match data {
        Num::Int(v) => {
            let b = gofmt::f64_to_i64(bound);
            let fails = match (maximum, exclusive) {
                (true, false) => v > b,
                (true, true) => v >= b,
                (false, false) => v < b,
                (false, true) => v <= b,
            };
            fails.then(|| exceeds(path, Num::Int(b), exclusive, data, maximum))
        }
        Num::Float(v) => bound_float(path, v, bound, exclusive, maximum),
    }
}

/// `numberValidator.Validate`: the value's range for its type and format, then multipleOf, minimum and maximum.
/// A limit that does not fit the type is reported, and the value is then compared as a float.
fn validate_number(s: &Value, types: &[&str], format: &str, n: Num, path: &str) -> Res {
    let (type_name, format) = match types {
        ["integer"] => (
            "integer",
            if matches!(format, "int32" | "int64") {
                format
            } else {
                ""
            },
        ),
        ["number"] => (
            "number",
            if matches!(format, "float" | "double") {
                format
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let mut res = Res::default();
    res.add_opt(range_error(n, type_name, format, "Checked", path));
    let data = n.as_f64();
    let mut multiple = Res::default();
    if let Some(factor) = float_keyword(s, "multipleOf") {
        match range_error(Num::Float(factor), type_name, format, "MultipleOf", path) {
            Some(e) => {
                multiple.add(e);
                multiple.add_opt(multiple_of_float(path, data, factor));
            }
            None => multiple.add_opt(multiple_of_native(path, n, factor)),
        }
    }
    let mut bounds = [Res::default(), Res::default()];
    for (slot, (keyword, exclusive, prefix, maximum)) in bounds.iter_mut().zip([
        ("minimum", "exclusiveMinimum", "Minimum boundary", false),
        ("maximum", "exclusiveMaximum", "Maximum boundary", true),
    ]) {
        let Some(bound) = float_keyword(s, keyword) else {
            continue;
        };
        let exclusive = bool_keyword(s, exclusive);
        match range_error(Num::Float(bound), type_name, format, prefix, path) {
            Some(e) => {
                slot.add(e);
                slot.add_opt(bound_float(path, data, bound, exclusive, maximum));
            }
            None => slot.add_opt(bound_native(path, n, bound, exclusive, maximum)),
        }
    }
    res.merge(multiple);
    for slot in bounds {
        res.merge(slot);
    }
    res.count += 1;
    res
}

/// Go's `reflect.DeepEqual` on decoded JSON (an `int64` never equals a `float64`).
pub(super) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => Num::of(a) == Num::of(b),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// `schemaSliceValidator.Validate`: items, then minItems, maxItems and uniqueItems.
fn validate_slice(s: &Value, items: &[Value], path: &str) -> Res {
    let mut res = Res::default();
    match s.get("items") {
        Some(schema @ Value::Object(_)) => {
            for (i, item) in items.iter().enumerate() {
                res.merge(validate(schema, item, &format!("{path}[{i}]"), false));
            }
        }
        Some(Value::Array(schemas)) => {
            for (i, (schema, item)) in schemas.iter().zip(items).enumerate() {
                res.merge(validate(schema, item, &format!("{path}[{i}]"), false));
            }
        }
        _ => {}
    }
    let size = items.len() as i64;
    if let Some(min) = int_keyword(s, "minItems").filter(|min| size < *min) {
        res.add(error(
            Code::Invalid,
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = int_keyword(s, "maxItems").filter(|max| size > *max) {
        res.add(error(
            Code::TooMany { actual: size, max },
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at most {max} items"),
        ));
    }
    if bool_keyword(s, "uniqueItems")
        && items
            .iter()
            .enumerate()
            .any(|(i, item)| items[..i].iter().any(|seen| deep_equal(item, seen)))
    {
        res.add(error(
            Code::Invalid,
            path,
            None,
            format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    res.count += 1;
    res
}

/// Go's `reflect.Value.Convert` of a decoded JSON value to the type of `target`, when Go allows it: numbers convert
/// to each other (floats truncate), an integer converts to a string (as the character with that code), other types
/// only to themselves.
fn convert(data: &Value, target: &Value) -> Option<Value> {
    let n = Num::of(data);
    match (target, n) {
        (Value::Number(_), Some(n)) => Some(match (Num::of(target)?, n) {
            (Num::Int(_), Num::Float(f)) => Value::from(gofmt::f64_to_i64(f)),
            (Num::Float(_), Num::Int(i)) => Num::Float(i as f64).to_value(),
            _ => data.clone(),
        }),
        (Value::String(_), Some(Num::Int(i))) => {
            let c = u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
            Some(Value::String(c.to_string()))
        }
        (Value::String(_), _) if data.is_string() => Some(data.clone()),
        (Value::Bool(_), _) if data.is_boolean() => Some(data.clone()),
        (Value::Array(_), _) if data.is_array() => Some(data.clone()),
        (Value::Object(_), _) if data.is_object() => Some(data.clone()),
        _ => None,
    }
}

/// `basicCommonValidator.Validate`: `enum`. A value matches an allowed value it converts to and then deeply equals.
fn validate_enum(s: &Value, data: &Value, path: &str) -> Option<OpenApiError> {
    let allowed = schema_list(s, "enum");
    if allowed.is_empty() {
        return None;
    }
    let matches = allowed
        .iter()
        .filter(|a| !a.is_null())
        .any(|a| convert(data, a).is_some_and(|c| deep_equal(&c, a)));
    if matches {
        return None;
    }
    let shown: Vec<String> = allowed.iter().map(gofmt::value_v).collect();
    Some(error(
        Code::Enum(allowed.to_vec()),
        path,
        Some(data.clone()),
        format!("{path} in body should be one of [{}]", shown.join(" ")),
    ))
}

/// `objectValidator.Validate`: minProperties, maxProperties, additionalProperties, properties, then required.
/// At the root the host's fields are left out.
fn validate_object(
    s: &Value,
    map: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    path: &str,
    root: bool,
) -> Res {
    let mut res = Res::default();
    let fields: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !(root && HOST_FIELDS.contains(&k.as_str())))
        .collect();
    let count = fields.len() as i64;
    if let Some(min) = int_keyword(s, "minProperties").filter(|min| count < *min) {
        res.add(error(
            Code::Invalid,
            path,
            Some(Value::from(count)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = int_keyword(s, "maxProperties").filter(|max| count > *max) {
        res.add(error(
            Code::TooMany { actual: count, max },
            path,
            Some(Value::from(count)),
            format!("{path} in body should have at most {max} properties"),
        ));
    }
    let properties = s.get("properties").and_then(Value::as_object);
    let known = |k: &str| properties.is_some_and(|p| p.contains_key(k));
    match s.get("additionalProperties") {
        Some(Value::Bool(false)) => {
            for (key, _) in &fields {
                if !known(key) {
                    res.add(error(
                        Code::Invalid,
                        path,
                        Some(Value::String(key.to_string())),
                        format!("{path}.{key} in body is a forbidden property"),
                    ));
                }
            }
        }
        Some(schema @ Value::Object(_)) => {
            for (key, value) in &fields {
                if !known(key) {
                    let old = old.and_then(|o| o.get(key.as_str()));
                    res.merge(validate_ratcheting(schema, value, old, &format!("{path}.{key}"), false));
                }
            }
        }
        _ => {}
    }
    if let Some(properties) = properties {
        for (name, schema) in properties {
            if root && HOST_FIELDS.contains(&name.as_str()) {
                continue;
            }
            if let Some(value) = map.get(name) {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let old = old.and_then(|o| o.get(name));
                res.merge(validate_ratcheting(schema, value, old, &child, false));
            }
        }
    }
    for required in schema_list(s, "required").iter().filter_map(Value::as_str) {
        if !map.contains_key(required) {
            res.add(error(
                Code::Required,
                &format!("{path}.{required}"),
                None,
                format!("{path}.{required} in body is required"),
            ));
        }
    }
    res
}
