//! Values written the way kube-apiserver's Go code writes them: `%v` of a float (`1e+06`), `strconv.FormatFloat` with
//! `'f'`, `encoding/json` text, and a field error's bad value as `field.Error.ErrorBody` renders it.
//!
//! JSON numbers decode in Kubernetes (`k8s.io/apimachinery/pkg/util/json`) to `int64` when the literal is an integer
//! that fits, to `float64` otherwise; [`Num`] keeps that distinction, which decides both comparisons (`1` and `1.0`
//! differ for `enum` and list sets) and renderings.

use serde_json::Value;

use crate::field_error::go_quote;

/// A JSON number as Kubernetes holds it after decoding: `int64` or `float64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An integer literal that fits `int64`.
    Int(i64),
    /// Any other number (with a fraction or exponent, or beyond `int64`).
    Float(f64),
}

impl Num {
    /// The number a JSON value holds, if it is a number.
    pub fn of(value: &Value) -> Option<Num> {
        let n = value.as_number()?;
        match n.as_i64() {
            Some(i) => Some(Num::Int(i)),
            None => n.as_f64().map(Num::Float),
        }
    }

    /// Go's `float64(v)`.
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// The number as a JSON value of the same Go type.
    pub fn to_value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }

    /// Go's `%v`.
    pub fn go_v(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => float_v(f),
        }
    }
}

/// Go's `int64(f)` for a float64, as amd64 computes it (out of range and NaN give the minimum `int64`).
pub fn f64_to_i64(f: f64) -> i64 {
    let limit = -(i64::MIN as f64);
    if f.is_nan() || !(-limit..limit).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// The shortest decimal digits of a finite, non-zero `|f|` and the position of the decimal point: `|f|` is
/// `0.<digits> × 10^point`.
fn shortest_digits(f: f64) -> (String, i32) {
    let text = format!("{:e}", f.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    (digits, exponent + 1)
}

fn sign(f: f64) -> &'static str {
    if f.is_sign_negative() {
        "-"
    } else {
        ""
    }
}

/// `d.ddde±XX`, Go's `%e` with the shortest digits.
fn exponent_form(f: f64, digits: &str, point: i32) -> String {
    let exp = point - 1;
    let mut out = String::from(sign(f));
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.abs()));
    out
}

/// Plain decimal notation with the shortest digits, Go's `%f` with precision -1.
fn fixed_form(f: f64, digits: &str, point: i32) -> String {
    let mut out = String::from(sign(f));
    let nd = digits.len() as i32;
    if point <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-point) as usize));
        out.push_str(digits);
    } else if point >= nd {
        out.push_str(digits);
        out.push_str(&"0".repeat((point - nd) as usize));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// Go's `fmt.Sprintf("%v", f)` for a float64: the shortest digits, in exponent form when the exponent is below -4
/// or at least 6 (`1e+06`, `1.5`, `1e-05`).
pub fn float_v(f: f64) -> String {
    if f == 0.0 {
        return format!("{}0", sign(f));
    }
    if f.is_infinite() {
        return format!("{}Inf", if f < 0.0 { "-" } else { "+" });
    }
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    if !(-4..6).contains(&exp) {
        exponent_form(f, &digits, point)
    } else {
        fixed_form(f, &digits, point)
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`.
pub fn float_f(f: f64) -> String {
    if f == 0.0 {
        return format!("{}0", sign(f));
    }
    let (digits, point) = shortest_digits(f);
    fixed_form(f, &digits, point)
}

/// A float64 as `encoding/json` writes it: plain below 1e21 and from 1e-6, exponent form (`1e+21`, `1e-7`) outside.
fn json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (digits, point) = shortest_digits(f);
        let text = exponent_form(f, &digits, point);
        // encoding/json shortens e-07 to e-7.
        match text.split_once("e-0") {
            Some((mantissa, exp)) => format!("{mantissa}e-{exp}"),
            None => text,
        }
    } else {
        float_f(f)
    }
}

/// A string as `encoding/json` writes it (with its HTML-safe escapes).
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(_) => match Num::of(value) {
            Some(Num::Int(i)) => out.push_str(&i.to_string()),
            Some(Num::Float(f)) => out.push_str(&json_float(f)),
            None => out.push_str("null"),
        },
        Value::String(s) => json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_into(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // encoding/json sorts map keys.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(key, out);
                out.push(':');
                json_into(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// `json.Marshal` of a decoded JSON value.
pub fn json(value: &Value) -> String {
    let mut out = String::new();
    json_into(value, &mut out);
    out
}

/// A bad value as `field.Error.ErrorBody` renders it: strings with `%q`, numbers and booleans with `%v`, anything
/// else (null, lists, objects) with `json.Marshal`.
pub fn bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => Num::of(value).map_or_else(|| "null".into(), Num::go_v),
        other => json(other),
    }
}

/// Go's `%v` of a decoded JSON value (used in texts that kube never shows, such as the enum list of a message).
pub fn value_v(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(value_v).collect::<Vec<_>>().join(" ")),
        Value::Object(_) => format!("map{}", json(value)),
        other => bad_value(other),
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger`: an integral float64 within ±(2^53-1), allowing a relative error of 1e-9.
pub fn is_float64_a_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    if rounded == 0.0 {
        return false;
    }
    let diff = (f - rounded).abs();
    diff == 0.0 || diff < 1e-9 * rounded.abs()
}
