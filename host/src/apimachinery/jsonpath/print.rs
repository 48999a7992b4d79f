//! How kube's JSONPath prints a result (`PrintResults`): objects and arrays as Go's `encoding/json` writes them
//! (keys sorted, `<`, `>` and `&` escaped), other values as Go's `fmt.Print` does (floats in `%v`'s shortest form,
//! such as `1.5`, `3` or `1e+06`), and a `null` as `<no value>`.

use serde_json::Value;

/// A value as kube's JSONPath prints it.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => go_float_v(f),
            None => n.to_string(),
        },
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// A value as Go's `json.Marshal` writes an unstructured value: keys sorted, HTML characters escaped.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v);
    out
}

fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => out.push_str(&go_float_json(f)),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The shortest decimal digits of a finite float and the position of its decimal point (`0.d1d2... × 10^point`).
fn shortest_digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse::<i32>().unwrap_or(0) + 1)
}

fn sign(f: f64) -> &'static str {
    if f.is_sign_negative() && f != 0.0 {
        "-"
    } else {
        ""
    }
}

/// `%e` of the shortest digits: `1.5e+06`, `1e-07`.
fn exponent_form(f: f64) -> String {
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    let mut out = String::from(sign(f));
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push_str(&format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()));
    out
}

/// `%f` of the shortest digits: `1500000`, `0.000015`.
fn fixed_form(f: f64) -> String {
    let (digits, point) = shortest_digits(f);
    let mut out = String::from(sign(f));
    if f == 0.0 {
        out.push('0');
    } else if point <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat(point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else if point as usize >= digits.len() {
        out.push_str(&digits);
        out.push_str(&"0".repeat(point as usize - digits.len()));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// A float as Go's `fmt.Print` writes it (`%v`: `%g` with the shortest digits, in exponent form from 1e+06 on and
/// below 1e-04).
fn go_float_v(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let exp = shortest_digits(f).1 - 1;
    if !(-4..6).contains(&exp) {
        exponent_form(f)
    } else {
        fixed_form(f)
    }
}

/// A float as Go's `encoding/json` writes it: fixed below 1e21 and from 1e-6, else `1e+21`, `1e-7`.
fn go_float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = exponent_form(f);
        // Go writes e-07 as e-7.
        match e.split_once("e-0") {
            Some((m, x)) => format!("{m}e-{x}"),
            None => e,
        }
    } else {
        fixed_form(f)
    }
}
