//! The evaluation of a parsed JSONPath on a JSON value, as kube's `JSONPath.FindResults` evaluates it on an
//! unstructured object with missing keys allowed (how the CRD table convertor runs it): a missing key gives no result,
//! a `null` is skipped where kube skips nil, an index out of range or an index into a non-array is an error, objects
//! are walked in key order, and filters compare like Go's templates (an integer never equals a number literal).

use std::borrow::Cow;

use serde_json::Value;

use super::parse::{Node, Param};

/// A value found: part of the input, or made by the path (a literal).
pub(super) type Found<'a> = Cow<'a, Value>;

/// The results of each top-level node of a template, as `FindResults`.
pub(super) fn find_results<'a>(nodes: &[Node], data: &'a Value) -> Result<Vec<Vec<Found<'a>>>, String> {
    let cur = vec![Cow::Borrowed(data)];
    nodes.iter().map(|node| walk(&cur, node)).collect()
}

fn walk<'a>(input: &[Found<'a>], node: &Node) -> Result<Vec<Found<'a>>, String> {
    match node {
        Node::List(nodes) => eval_list(input, nodes),
        Node::Text(text) => Ok(vec![Cow::Owned(Value::String(text.clone()))]),
        Node::Field(name) => Ok(input.iter().filter_map(|v| field(v, name)).collect()),
        Node::Array(params) => eval_array(input, params),
        Node::Filter { left, right, op } => eval_filter(input, left, right, op),
        // Literals stand for each input; Go's int literals compare as float64.
        Node::Int(i) => Ok(literal(input, Value::from(*i as f64))),
        Node::Float(f) => Ok(literal(input, Value::from(*f))),
        Node::Bool(b) => Ok(literal(input, Value::Bool(*b))),
        Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
        Node::Recursive => Ok(recursive(input)),
        Node::Union(lists) => {
            let mut out = Vec::new();
            for list in lists {
                out.extend(eval_list(input, list)?);
            }
            Ok(out)
        }
        Node::Identifier(name) => Err(format!("unrecognized identifier {name}")),
    }
}

fn literal<'a>(input: &[Found<'a>], value: Value) -> Vec<Found<'a>> {
    input.iter().map(|_| Cow::Owned(value.clone())).collect()
}

fn eval_list<'a>(input: &[Found<'a>], nodes: &[Node]) -> Result<Vec<Found<'a>>, String> {
    let mut cur = input.to_vec();
    for node in nodes {
        cur = walk(&cur, node)?;
    }
    Ok(cur)
}

/// As [`eval_list`], but a failing node leaves what it was given (kube's functions return their input with an error,
/// and a filter with missing keys allowed goes on with it).
fn eval_list_lenient<'a>(input: &[Found<'a>], nodes: &[Node]) -> Vec<Found<'a>> {
    let mut cur = input.to_vec();
    for node in nodes {
        match walk(&cur, node) {
            Ok(next) => cur = next,
            Err(_) => return cur,
        }
    }
    cur
}

/// A key of an object (none for a missing key, a `null` or a non-object).
fn field<'a>(v: &Found<'a>, name: &str) -> Option<Found<'a>> {
    match v {
        Cow::Borrowed(b) => {
            let b: &'a Value = b;
            b.as_object()?.get(name).map(Cow::Borrowed)
        }
        Cow::Owned(o) => o.as_object()?.get(name).cloned().map(Cow::Owned),
    }
}

/// The elements of an array, or the values of an object in key order; none for anything else.
fn children<'a>(v: &Found<'a>) -> Vec<Found<'a>> {
    fn sorted(m: &serde_json::Map<String, Value>) -> Vec<&Value> {
        let mut entries: Vec<(&String, &Value)> = m.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries.into_iter().map(|(_, v)| v).collect()
    }
    match v {
        Cow::Borrowed(b) => {
            let b: &'a Value = b;
            match b {
                Value::Array(a) => a.iter().map(Cow::Borrowed).collect(),
                Value::Object(m) => sorted(m).into_iter().map(Cow::Borrowed).collect(),
                _ => Vec::new(),
            }
        }
        Cow::Owned(Value::Array(a)) => a.iter().cloned().map(Cow::Owned).collect(),
        Cow::Owned(Value::Object(m)) => sorted(m).into_iter().cloned().map(Cow::Owned).collect(),
        Cow::Owned(_) => Vec::new(),
    }
}

/// `..`: each array or object that has children, followed by everything found under it.
fn recursive<'a>(input: &[Found<'a>]) -> Vec<Found<'a>> {
    let mut out = Vec::new();
    for v in input {
        let kids = children(v);
        if !kids.is_empty() {
            out.push(v.clone());
            out.extend(recursive(&kids));
        }
    }
    out
}

fn eval_array<'a>(input: &[Found<'a>], params: &[Param; 3]) -> Result<Vec<Found<'a>>, String> {
    let mut out = Vec::new();
    for v in input {
        if v.is_null() {
            continue;
        }
        let Some(items) = v.as_array() else {
            return Err(format!("{} is not array or slice", type_name(v)));
        };
        let len = items.len() as i64;
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value += len;
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value += len;
        }
        let (start, end) = (p[0].value, p[1].value);
        if start == end {
            // kube returns at once, whatever the other inputs hold.
            return Ok(out);
        }
        if start >= len || start < 0 {
            return Err(format!("array index out of bounds: index {start}, length {len}"));
        }
        if end > len || end < 0 {
            return Err(format!("array index out of bounds: index {}, length {len}", end - 1));
        }
        if start > end {
            return Err(format!("starting index {start} is greater than ending index {end}"));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err("step must be > 0".into());
            }
            p[2].value as usize
        } else {
            1
        };
        let slice = (start as usize..end as usize).step_by(step);
        for i in slice {
            out.push(match v {
                Cow::Borrowed(b) => {
                    let b: &'a Value = b;
                    Cow::Borrowed(&b[i])
                }
                Cow::Owned(_) => Cow::Owned(items[i].clone()),
            });
        }
    }
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn eval_filter<'a>(input: &[Found<'a>], left: &[Node], right: &[Node], op: &str) -> Result<Vec<Found<'a>>, String> {
    let mut out = Vec::new();
    for v in input {
        let items = match &**v {
            Value::Array(_) | Value::Object(_) => children(v),
            _ => vec![v.clone()],
        };
        for item in items {
            let one = std::slice::from_ref(&item);
            let lefts = eval_list_lenient(one, left);
            let rights = eval_list(one, right)?;
            match lefts.len() {
                0 => continue,
                1 => {}
                _ => return Err("can only compare one element at a time".into()),
            }
            if op == "exists" {
                out.push(item);
                continue;
            }
            match rights.len() {
                0 => continue,
                1 => {}
                _ => return Err("can only compare one element at a time".into()),
            }
            if compare(op, &lefts[0], &rights[0])? {
                out.push(item);
            }
        }
    }
    Ok(out)
}

/// Go's basic kinds, as its template comparison functions see an unstructured value.
#[derive(PartialEq)]
enum Kind<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    String(&'v str),
}

fn kind(v: &Value) -> Option<Kind<'_>> {
    match v {
        Value::Bool(b) => Some(Kind::Bool(*b)),
        Value::Number(n) if n.is_f64() => n.as_f64().map(Kind::Float),
        Value::Number(n) => n.as_i64().map(Kind::Int).or_else(|| n.as_u64().map(Kind::Uint)),
        Value::String(s) => Some(Kind::String(s)),
        _ => None,
    }
}

/// Why two values do not compare; kube's filters take either as "no match" (and `!=` as a match).
struct Incomparable;

fn equal(l: &Value, r: &Value) -> Result<bool, Incomparable> {
    let (Some(a), Some(b)) = (kind(l), kind(r)) else {
        return Err(Incomparable);
    };
    match (a, b) {
        (Kind::Bool(a), Kind::Bool(b)) => Ok(a == b),
        (Kind::Int(a), Kind::Int(b)) => Ok(a == b),
        (Kind::Uint(a), Kind::Uint(b)) => Ok(a == b),
        (Kind::Int(a), Kind::Uint(b)) | (Kind::Uint(b), Kind::Int(a)) => Ok(u64::try_from(a) == Ok(b)),
        (Kind::Float(a), Kind::Float(b)) => Ok(a == b),
        (Kind::String(a), Kind::String(b)) => Ok(a == b),
        _ => Err(Incomparable),
    }
}

fn less(l: &Value, r: &Value) -> Result<bool, Incomparable> {
    let (Some(a), Some(b)) = (kind(l), kind(r)) else {
        return Err(Incomparable);
    };
    match (a, b) {
        (Kind::Int(a), Kind::Int(b)) => Ok(a < b),
        (Kind::Uint(a), Kind::Uint(b)) => Ok(a < b),
        (Kind::Float(a), Kind::Float(b)) => Ok(a < b),
        (Kind::String(a), Kind::String(b)) => Ok(a < b),
        _ => Err(Incomparable),
    }
}

/// A filter's comparison, as kube's `evalOperator` with Go's template functions: values of different kinds (an
/// integer and a number literal, a string and a number) neither equal nor order, so only `!=` passes for them.
fn compare(op: &str, l: &Value, r: &Value) -> Result<bool, String> {
    let pass = match op {
        "==" => equal(l, r).unwrap_or(false),
        "!=" => equal(l, r).map(|e| !e).unwrap_or(true),
        "<" => less(l, r).unwrap_or(false),
        "<=" => match less(l, r) {
            Ok(true) => true,
            Ok(false) => equal(l, r).unwrap_or(false),
            Err(_) => false,
        },
        ">" => match less(l, r) {
            Ok(true) => false,
            Ok(false) => equal(l, r).map(|e| !e).unwrap_or(false),
            Err(_) => false,
        },
        ">=" => less(l, r).map(|lt| !lt).unwrap_or(false),
        other => return Err(format!("unrecognized filter operator {other}")),
    };
    Ok(pass)
}
