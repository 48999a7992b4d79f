//! CEL validation rules (`x-kubernetes-validations`) in a plugin's structural schema, evaluated as kube-apiserver
//! 1.37 evaluates a CustomResourceDefinition's (`k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel`,
//! `validation.go`), with the `cel` crate (cel-rust) as the CEL implementation.
//!
//! [`validate`] walks the schema and the object together. At every node with rules, each rule runs with `self`
//! bound to the node's value (see `values.rs` for how values are typed) and, on an update where the node has an old
//! value, `oldSelf` bound to it. The old value of a node is found as kube finds it: by field name in objects and
//! maps, and by the key fields in `x-kubernetes-list-type: map` lists; items of other lists have none. A rule that
//! refers to `oldSelf` (a transition rule) runs only where there is an old value, unless it sets `optionalOldSelf`,
//! in which case it always runs with `oldSelf` an optional value.
//!
//! A rule that evaluates to false gives one field error at the node's path, or at the node's path followed by the
//! rule's `fieldPath`, with the rule's `reason` (`FieldValueInvalid` unless it says `FieldValueForbidden`,
//! `FieldValueRequired` or `FieldValueDuplicate`) and kube's detail: the value of `messageExpression`, else
//! `message`, else `failed rule: <rule>`. As in kube 1.37 the error shows the value of a scalar node and omits that
//! of an object or array: `Invalid value: "abc": must be short`, `Invalid value: failed rule: self.a > 0`. The path
//! of the root is `<nil>`, as kube renders a root-level CRD rule's field.
//!
//! Cost is kube's: every expression may cost at most [`PER_CALL_LIMIT`] and one object's rules together
//! [`RUNTIME_CEL_COST_BUDGET`], measured while the expressions run (see `program.rs`); passing either stops the
//! validation with kube's error. Differences from kube, all documented at their place:
//!
//! * a rule that does not compile cannot be refused here when its CRD is created, as kube does: it is reported, on
//!   every object, as an `InternalError` cause naming the rule (kube's own fallback is a `FieldValueInvalid`
//!   `rule compile error: ...`). Compiling parses and checks identifiers; the `cel` crate has no type checker, so a
//!   type error shows when the rule runs (`no such overload`), as it does in kube for `int-or-string` values;
//! * lists of type `set` and `map` compare and concatenate in order (kube ignores order and merges by key);
//! * ratcheting (kube turns the errors of a rule without `oldSelf` on an unchanged value into warnings) is not
//!   done: this function returns errors only.

mod expression;
mod library;
mod program;
mod quantity;
mod urls;
mod values;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::common::types::CelOptional;
use ::cel::common::value::Val;
use ::cel::{Context, ExecutionError, Value};
use serde_json::Value as Json;

use apimachinery::field_error::{go_json, go_quote, FieldError, FieldErrorReason};

pub use expression::{Bindings, Evaluated, Expression};
use program::{Outcome, Program, COST_LIMIT_EXCEEDED};

/// kube's `PerCallLimit`: the most one expression may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `RuntimeCELCostBudget`: the most the rules of one object may cost together.
pub const RUNTIME_CEL_COST_BUDGET: i64 = 10_000_000;
/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// Evaluates every `x-kubernetes-validations` rule of `schema` (the resource's root schema) against `obj`, with
/// `old` the stored object on an update, and returns one field error per violation, in schema-walk order.
pub fn validate(schema: &Json, obj: &Json, old: Option<&Json>) -> Vec<FieldError> {
    validate_with_budget(schema, obj, old, RUNTIME_CEL_COST_BUDGET)
}

/// kube's message when the rules are skipped because the object already has a blocking error.
const RULES_NOT_CHECKED: &str =
    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// [`validate`] as kube's custom resource strategy runs it after the other checks: when `prior` (the errors found
/// so far: metadata, schema, embedded resources, list types) holds a blocking one (a missing, unsupported, too
/// long, too many or wrongly typed value), the rules are not run and one error says so (`hasBlockingErr`). A
/// schema without rules adds nothing (kube has no CEL validator for it).
pub fn validate_after(schema: &Json, obj: &Json, old: Option<&Json>, prior: &[FieldError]) -> Vec<FieldError> {
    if !has_rules(schema) {
        return Vec::new();
    }
    let blocking = prior.iter().any(|e| {
        matches!(
            e.reason,
            FieldErrorReason::NotSupported
                | FieldErrorReason::Required
                | FieldErrorReason::TooLong
                | FieldErrorReason::TooMany
                | FieldErrorReason::TypeInvalid
        )
    });
    if blocking {
        return vec![FieldError::invalid_json("<nil>", &Json::Null, RULES_NOT_CHECKED)];
    }
    validate(schema, obj, old)
}

/// [`validate`] with another budget than kube's, for tests.
fn validate_with_budget(schema: &Json, obj: &Json, old: Option<&Json>, budget: i64) -> Vec<FieldError> {
    let mut validator = Validator {
        budget,
        errors: Vec::new(),
        stopped: false,
        rules_below: HashMap::new(),
    };
    validator.walk(schema, schema, true, obj, old, &Path::default());
    validator.errors
}

/// A field path as kube's `field.Path` renders it; the root's is `<nil>`.
#[derive(Debug, Clone, Default)]
struct Path(String);

impl Path {
    fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_owned())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }

    fn index(&self, index: usize) -> Path {
        self.key(&index.to_string())
    }

    fn render(&self) -> String {
        if self.0.is_empty() {
            "<nil>".to_owned()
        } else {
            self.0.clone()
        }
    }
}

/// One validation: the budget left, the errors so far, and whether a limit stopped it.
struct Validator {
    budget: i64,
    errors: Vec<FieldError>,
    stopped: bool,
    /// Whether a schema node (by address) has rules at or below it, so that a list's items are not searched for
    /// rules once per item.
    rules_below: HashMap<usize, bool>,
}

/// What kube's error says in place of the value: the schema type (`"object"`), or the value itself.
fn invalid(path: &Path, type_name: &str, detail: &str) -> FieldError {
    FieldError::invalid(path.render(), type_name, detail)
}

fn schema_type(schema: &Json) -> &str {
    schema.get("type").and_then(Json::as_str).unwrap_or_default()
}

/// The schema of an object's `additionalProperties`, when it is one (not `true` or `false`).
fn additional(schema: &Json) -> Option<&Json> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// Whether a schema or one below it has `x-kubernetes-validations`.
fn has_rules(schema: &Json) -> bool {
    let Some(fields) = schema.as_object() else {
        return false;
    };
    fields
        .get("x-kubernetes-validations")
        .and_then(Json::as_array)
        .is_some_and(|r| !r.is_empty())
        || fields.get("items").is_some_and(has_rules)
        || fields.get("additionalProperties").is_some_and(has_rules)
        || fields
            .get("properties")
            .and_then(Json::as_object)
            .is_some_and(|p| p.values().any(has_rules))
        || fields
            .get("allOf")
            .and_then(Json::as_array)
            .is_some_and(|a| a.iter().any(has_rules))
}

impl Validator {
    /// kube's `Validator.validate`: `rules` is the schema the rules come from (the node's, or one of its `allOf`),
    /// `node` the node's own schema, which types the values.
    fn walk(&mut self, rules: &Json, node: &Json, root: bool, obj: &Json, old: Option<&Json>, path: &Path) {
        if self.stopped || obj.is_null() || !self.has_rules(rules) {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.validate_node(rules, node, root, obj, old, path);
        for all_of in rules.get("allOf").and_then(Json::as_array).into_iter().flatten() {
            if self.stopped {
                return;
            }
            self.walk(all_of, node, root, obj, old, path);
        }
        match obj {
            Json::Array(items) => {
                let (Some(rule_items), Some(node_items)) = (rules.get("items"), node.get("items")) else {
                    return;
                };
                let old_items = old.and_then(Json::as_array).map(Vec::as_slice).unwrap_or_default();
                let keys = map_list_keys(node);
                for (i, item) in items.iter().enumerate() {
                    if self.stopped {
                        return;
                    }
                    let old_item = keys.as_ref().and_then(|keys| correlate(keys, item, old_items));
                    self.walk(
                        rule_items,
                        node_items,
                        values::is_embedded(node_items),
                        item,
                        old_item,
                        &path.index(i),
                    );
                }
            }
            Json::Object(fields) => {
                let old_fields = old.and_then(Json::as_object).filter(|_| map_correlates(node));
                if let (Some(rule_values), Some(node_values)) = (additional(rules), additional(node)) {
                    for (key, value) in fields {
                        if self.stopped {
                            return;
                        }
                        let old_value = old_fields.and_then(|o| o.get(key));
                        let embedded = values::is_embedded(node_values);
                        self.walk(rule_values, node_values, embedded, value, old_value, &path.key(key));
                    }
                }
                let (Some(rule_props), Some(node_props)) = (
                    rules.get("properties").and_then(Json::as_object),
                    node.get("properties").and_then(Json::as_object),
                ) else {
                    return;
                };
                for (key, value) in fields {
                    let (Some(rule_prop), Some(node_prop)) = (rule_props.get(key), node_props.get(key)) else {
                        continue;
                    };
                    if self.stopped {
                        return;
                    }
                    let old_value = old_fields.and_then(|o| o.get(key));
                    let embedded = values::is_embedded(node_prop);
                    self.walk(rule_prop, node_prop, embedded, value, old_value, &path.child(key));
                }
            }
            _ => {}
        }
    }

    fn has_rules(&mut self, schema: &Json) -> bool {
        let address = schema as *const Json as usize;
        *self.rules_below.entry(address).or_insert_with(|| has_rules(schema))
    }

    /// kube's `validateExpressions`: runs the rules of one node.
    fn validate_node(&mut self, rules: &Json, node: &Json, root: bool, obj: &Json, old: Option<&Json>, path: &Path) {
        let Some(rule_list) = rules
            .get("x-kubernetes-validations")
            .and_then(Json::as_array)
            .filter(|r| !r.is_empty())
        else {
            return;
        };
        let type_name = schema_type(node);
        if self.budget <= 0 {
            self.stop_with(invalid(path, type_name, BUDGET_EXHAUSTED));
            return;
        }
        let mut activation = Activation::new(node, root, obj, old);
        for rule in rule_list {
            let rule = Rule::of(rule);
            if rule.source.trim().is_empty() {
                continue;
            }
            let program = match program::compile(rule.source) {
                Ok(p) => p,
                Err(e) => {
                    self.errors.push(compile_error(path, &e, rule.source));
                    continue;
                }
            };
            if program.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let outcome = activation.run(&program, rule.optional_old_self, self.limit());
            if outcome.cost as i64 > self.budget {
                self.stop_with(invalid(path, type_name, BUDGET_EXHAUSTED));
                return;
            }
            self.budget -= outcome.cost as i64;
            if outcome.exceeded {
                let detail = format!(
                    "'{COST_LIMIT_EXCEEDED}': no further validation rules will be run due to call cost exceeds limit \
                     for rule: {}",
                    rule.error_string()
                );
                self.stop_with(invalid(path, type_name, &detail));
                return;
            }
            match outcome.result {
                Ok(Value::Bool(true)) => continue,
                Ok(Value::Bool(false)) => {}
                Ok(_) => {
                    self.errors.push(compile_error(
                        path,
                        "cel expression must evaluate to a bool",
                        rule.source,
                    ));
                    continue;
                }
                Err(ExecutionError::UndeclaredReference(name)) => {
                    let e = format!("compilation failed: undeclared reference to '{name}' (in container '')");
                    self.errors.push(compile_error(path, &e, rule.source));
                    continue;
                }
                Err(e) => {
                    self.errors
                        .push(invalid(path, type_name, &evaluation_error(&e, &rule.error_string())));
                    continue;
                }
            }
            let error_path = match rule.field_path.and_then(|p| valid_field_path(p, node)) {
                Some(relative) => path.child(&relative),
                None => path.clone(),
            };
            let detail = match rule.message_expression {
                Some(expr) => match self.message_expression(expr, &mut activation, &error_path, type_name) {
                    MessageOutcome::Message(m) => m,
                    MessageOutcome::Fallback => rule.message_or_default(),
                    MessageOutcome::Stopped => return,
                },
                None => rule.message_or_default(),
            };
            let shown = if matches!(type_name, "object" | "array") {
                None
            } else {
                Some(obj)
            };
            self.errors.push(rule_error(&error_path, shown, &detail, rule.reason));
        }
    }

    /// The limit of the next evaluation: the per-expression limit, or the budget left if that is less (an
    /// evaluation past the budget fails anyway, and is stopped as soon as it passes it).
    fn limit(&self) -> u64 {
        PER_CALL_LIMIT.min(u64::try_from(self.budget).unwrap_or(0))
    }

    fn stop_with(&mut self, error: FieldError) {
        self.errors.push(error);
        self.stopped = true;
    }

    /// kube's `evalMessageExpression`.
    fn message_expression(
        &mut self,
        source: &str,
        activation: &mut Activation<'_>,
        path: &Path,
        type_name: &str,
    ) -> MessageOutcome {
        // kube compiles messageExpression with its rule and, when that fails, falls back to the message.
        let Ok(program) = program::compile(source) else {
            return MessageOutcome::Fallback;
        };
        let outcome: Outcome = activation.run(&program, false, self.limit());
        if outcome.cost as i64 > self.budget {
            self.stop_with(invalid(
                path,
                type_name,
                "messageExpression evaluation failed due to running out of cost budget, no further validation rules \
                 will be run",
            ));
            return MessageOutcome::Stopped;
        }
        if outcome.exceeded {
            let detail = format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                go_quote(source)
            );
            self.stop_with(invalid(path, type_name, &detail));
            return MessageOutcome::Stopped;
        }
        self.budget -= outcome.cost as i64;
        // An error, a value that is not a string, or an empty, multi-line or too long message: kube logs it and
        // uses the rule's message.
        match outcome.result {
            Ok(Value::String(s)) => {
                let message = s.trim();
                if message.is_empty() || message.len() > MAX_MESSAGE_EXPRESSION_BYTES || message.contains('\n') {
                    MessageOutcome::Fallback
                } else {
                    MessageOutcome::Message(message.to_owned())
                }
            }
            _ => MessageOutcome::Fallback,
        }
    }
}

enum MessageOutcome {
    Message(String),
    Fallback,
    Stopped,
}

const BUDGET_EXHAUSTED: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// A compile error: as an `InternalError` naming the rule (see the module docs).
fn compile_error(path: &Path, error: &str, rule: &str) -> FieldError {
    FieldError::internal(
        path.render(),
        &format!("rule compile error: {error} for rule: {}", rule.trim()),
    )
}

/// kube's detail for a rule whose evaluation failed, with cel-go's wording of the common errors.
fn evaluation_error(e: &ExecutionError, rule: &str) -> String {
    let text = match e {
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. } => {
            return format!(
                "'no such overload': call arguments did not match a supported operator, function or macro signature \
                 for rule: {rule}"
            );
        }
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(index) => format!("index out of bounds: {}", cel_text(index)),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    format!("{text} evaluating rule: {rule}")
}

/// A scalar CEL value as text, for error messages.
fn cel_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// kube's `fieldErrorForReason`; `value` is the node's value, `None` for an object or array (kube's `OmitValueType`).
fn rule_error(path: &Path, value: Option<&Json>, detail: &str, reason: FieldErrorReason) -> FieldError {
    let field = path.render();
    match reason {
        FieldErrorReason::Forbidden => FieldError::forbidden(field, detail),
        FieldErrorReason::Required => FieldError::required(field, detail),
        FieldErrorReason::Duplicate => {
            let message = match value {
                Some(v) => format!("{}: {}", reason.description(), go_value(v)),
                None => reason.description().to_owned(),
            };
            FieldError { reason, field, message }
        }
        _ => match value {
            Some(v) => {
                let message = format!("{}: {}: {detail}", FieldErrorReason::Invalid.description(), go_value(v));
                FieldError {
                    reason: FieldErrorReason::Invalid,
                    field,
                    message,
                }
            }
            None => FieldError::with_detail(FieldErrorReason::Invalid, field, detail),
        },
    }
}

/// A value as Go's `field.Error` prints it: strings quoted (`%q`), numbers and booleans with `%v`, anything else
/// (from a node without a type) as JSON.
fn go_value(v: &Json) -> String {
    match v {
        Json::String(s) => go_quote(s),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        Json::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// A float as Go's `%v` prints it: shortest digits, in exponent form below 1e-4 and from 1e6 on (`%g`'s rule for the
/// shortest precision).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return f.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// One entry of `x-kubernetes-validations`.
struct Rule<'a> {
    source: &'a str,
    message: Option<&'a str>,
    message_expression: Option<&'a str>,
    reason: FieldErrorReason,
    field_path: Option<&'a str>,
    optional_old_self: bool,
}

impl<'a> Rule<'a> {
    fn of(rule: &'a Json) -> Rule<'a> {
        let text = |name: &str| rule.get(name).and_then(Json::as_str).filter(|s| !s.is_empty());
        let reason = match text("reason") {
            Some("FieldValueForbidden") => FieldErrorReason::Forbidden,
            Some("FieldValueRequired") => FieldErrorReason::Required,
            Some("FieldValueDuplicate") => FieldErrorReason::Duplicate,
            _ => FieldErrorReason::Invalid,
        };
        Rule {
            source: text("rule").unwrap_or_default(),
            message: text("message"),
            message_expression: text("messageExpression"),
            reason,
            field_path: text("fieldPath"),
            optional_old_self: rule.get("optionalOldSelf").and_then(Json::as_bool) == Some(true),
        }
    }

    /// kube's `ruleErrorString`: the message if there is one, else the rule.
    fn error_string(&self) -> String {
        self.message.unwrap_or(self.source).trim().to_owned()
    }

    /// kube's `ruleMessageOrDefault`.
    fn message_or_default(&self) -> String {
        match self.message {
            Some(m) => m.trim().to_owned(),
            None => format!("failed rule: {}", self.source.trim()),
        }
    }
}

/// The variables of one node's rules, converted once and shared by its rules.
struct Activation<'a> {
    node: &'a Json,
    root: bool,
    obj: &'a Json,
    old: Option<&'a Json>,
    contexts: HashMap<bool, Context<'static, 'static>>,
}

impl<'a> Activation<'a> {
    fn new(node: &'a Json, root: bool, obj: &'a Json, old: Option<&'a Json>) -> Self {
        Activation {
            node,
            root,
            obj,
            old,
            contexts: HashMap::new(),
        }
    }

    /// Runs `program` with `self` and `oldSelf`; with `optional_old_self`, `oldSelf` is an optional value.
    fn run(&mut self, program: &Program, optional_old_self: bool, limit: u64) -> Outcome {
        let (node, root, obj, old) = (self.node, self.root, self.obj, self.old);
        let ctx = self.contexts.entry(optional_old_self).or_insert_with(|| {
            let mut ctx = Context::with_env(Arc::clone(program::env()));
            ctx.add_variable_from_value("self", values::to_cel(obj, node, root));
            let old_value = old.map(|o| values::to_cel(o, node, root));
            if optional_old_self {
                let optional = match old_value.and_then(|v| Box::<dyn Val>::try_from(v).ok()) {
                    Some(v) => CelOptional::of(v),
                    None => CelOptional::none(),
                };
                ctx.add_variable_as_val("oldSelf", Box::new(optional));
            } else if let Some(v) = old_value {
                ctx.add_variable_from_value("oldSelf", v);
            }
            ctx
        });
        program::evaluate(program, ctx, limit)
    }
}

/// The key fields of an `x-kubernetes-list-type: map` list schema.
fn map_list_keys(schema: &Json) -> Option<Vec<String>> {
    if schema.get("x-kubernetes-list-type").and_then(Json::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<String> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Json::as_array)?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// kube's `MapList.Get`: the old item with the same key fields as `item` (all scalars), if any.
fn correlate<'o>(keys: &[String], item: &Json, old_items: &'o [Json]) -> Option<&'o Json> {
    let key_of = |v: &Json| -> Option<Vec<Json>> {
        let fields = v.as_object()?;
        keys.iter()
            .map(|k| {
                fields
                    .get(k)
                    .filter(|f| matches!(f, Json::Bool(_) | Json::Number(_) | Json::String(_)))
                    .cloned()
            })
            .collect()
    };
    let key = key_of(item)?;
    old_items.iter().find(|o| key_of(o).as_ref() == Some(&key))
}

/// kube's `MapIsCorrelatable`: maps correlate by key unless their `x-kubernetes-map-type` is something new.
fn map_correlates(schema: &Json) -> bool {
    matches!(
        schema.get("x-kubernetes-map-type").and_then(Json::as_str),
        None | Some("granular" | "atomic")
    )
}

/// kube's `ValidFieldPath`: the rule's `fieldPath` (`.a.b`, `.m['key']`) checked against the node's schema and
/// rendered as a relative path (`a.b`, `m[key]`), or `None` if it does not name a field of the schema (kube refuses
/// such a rule when the CRD is written and reports at the node when it meets one).
fn valid_field_path(path: &str, schema: &Json) -> Option<String> {
    let mut out = String::new();
    let mut schema = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let (name, tail) = if let Some(after) = rest.strip_prefix("['") {
            let end = quoted_end(after)?;
            let name = unescape_single_quoted(&after[..end])?;
            (name, after[end + 1..].strip_prefix(']')?)
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[', ']']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            (after[..end].to_owned(), &after[end..])
        } else {
            return None;
        };
        if let Some(props) = schema.get("properties").and_then(Json::as_object) {
            schema = props.get(&name)?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if let Some(values) = additional(schema) {
            schema = values;
            out.push_str(&format!("[{name}]"));
        } else {
            return None;
        }
        rest = tail;
    }
    (!out.is_empty()).then_some(out)
}

/// The index of the quote closing a single-quoted string (the text after the opening quote).
fn quoted_end(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '\'' if !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

/// kube's `unescapeSingleQuote`.
fn unescape_single_quoted(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            _ => return None,
        });
    }
    Some(out)
}
