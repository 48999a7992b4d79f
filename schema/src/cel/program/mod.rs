//! Compiling and running one CEL expression with kube's cost accounting.
//!
//! The `cel` crate parses and evaluates but neither type-checks nor measures cost. Compiling therefore adds the
//! check of kube's compiler a parser lacks, that every identifier is declared, and *instruments* the parsed
//! expression so that evaluating it measures cel-go's runtime cost (`interpreter/runtimecost.go`, with kube's
//! `library.CostEstimator` for its functions):
//!
//! * every node with a cost is wrapped in `@cost(slot, node)`, which adds the node's cost to a per-thread meter and
//!   fails the evaluation, as cel-go's `CostLimit` does, once the meter passes its limit: an identifier or field
//!   selection costs 1, a call 1 or, for the functions that traverse strings and lists, a cost computed from the
//!   sizes of its operands, a list literal 10, a map literal 30;
//! * an operand whose size a call's cost depends on is wrapped in `@probe(slot, operand)`, which records its size;
//! * a comprehension's per-iteration overhead (its loop condition and accumulator, which cel-go also charges) is
//!   charged on the first user expression each iteration evaluates.
//!
//! So the cost is the one cel-go computes, up to details of its bookkeeping (constant folding and the exact
//! overhead of each macro); it is measured while the expression runs, so an expensive rule stops at the limit instead
//! of running to its end.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use ::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use ::cel::common::types::{CelInt, CelString, Kind};
use ::cel::common::value::{CowVal, Val};
use ::cel::{Context, ExecutionError, Value};

use ::cel::common::types::{DYN_TYPE, INT_TYPE};
use ::cel::Env;

mod instrument;

use instrument::Instrumenter;

/// The internal function that charges an evaluated node's cost: `@cost(slot, value)` returns `value`. Its name
/// cannot be written in a rule.
pub(super) const COST_FN: &str = "@cost";
/// The internal function that records an operand's size for its call's cost: `@probe(slot, value)` returns `value`.
pub(super) const PROBE_FN: &str = "@probe";

/// The environment rules compile in: the library's functions ([`super::library::build`]) and the two that measure
/// cost. Built once.
pub(super) fn env() -> &'static Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
        let mut env = super::library::build();
        for (name, id, op) in [
            (COST_FN, "cost", cost_fn as ::cel::common::functions::Function),
            (PROBE_FN, "probe", probe_fn),
        ] {
            env.add_overload(name, id, vec![INT_TYPE, DYN_TYPE], op)
                .expect("the cost meter's functions");
        }
        Arc::new(env)
    });
    &ENV
}

/// cel-go's error when an evaluation passes its cost limit.
pub(super) const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// String and list traversals cost a tenth of a unit per element (cel-go's `StringTraversalCostFactor`).
const TRAVERSAL_FACTOR: f64 = 0.1;
/// A regular expression costs a quarter unit per character (cel-go's `RegexStringLengthCostFactor`).
const REGEX_FACTOR: f64 = 0.25;
/// Namespaces of functions called as `ns.f(...)`: their first segment is not a variable.
const NAMESPACES: &[&str] = &["strings", "lists", "sets", "optional"];
/// Identifiers that name types, which cost nothing and need no declaration (`type(x) == int`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];
/// Compiled expressions kept across requests: a schema's rules are few and the same on every request.
const CACHE_SIZE: usize = 1024;

/// A compiled, instrumented expression.
#[derive(Debug)]
pub(super) struct Program {
    expr: IdedExpr,
    slots: Arc<[Slot]>,
    /// Whether the expression refers to `oldSelf`, which makes a rule a transition rule.
    pub(super) uses_old_self: bool,
}

/// A compiled program, or kube's compile error text.
pub(super) type Compiled = Result<Arc<Program>, String>;

/// Compiles `source`, an expression over `self` and `oldSelf`. The error is kube's compile error text, such as
/// `compilation failed: ERROR: <input>:1:6: Syntax error: ...`.
pub(super) fn compile(source: &str) -> Compiled {
    static CACHE: LazyLock<Mutex<HashMap<String, Compiled>>> = LazyLock::new(Default::default);
    if let Some(hit) = CACHE.lock().unwrap_or_else(PoisonError::into_inner).get(source) {
        return hit.clone();
    }
    let compiled = compile_uncached(source, &[]);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CACHE_SIZE {
        cache.clear();
    }
    cache.insert(source.to_owned(), compiled.clone());
    compiled
}

/// Compiles `source`, an expression over the variables `declared` (admission's `object`, `request`...): not cached,
/// as its caller keeps it.
pub(super) fn compile_declared(source: &str, declared: &[&str]) -> Compiled {
    compile_uncached(source, declared)
}

/// Compiles `source` over `declared`, or over `self` and `oldSelf` when `declared` is empty.
fn compile_uncached(source: &str, declared: &[&str]) -> Compiled {
    let parsed = env().compile(source).map_err(|e| format!("compilation failed: {e}"))?;
    let mut refs = References {
        declared: declared.iter().map(|d| d.to_string()).collect(),
        ..References::default()
    };
    refs.walk(parsed.expression(), &mut Vec::new());
    if let Some((id, name)) = refs.undeclared.first() {
        let offset = parsed
            .source_info()
            .offset_for(*id)
            .map_or(0, |(start, _)| start as usize);
        return Err(format!(
            "compilation failed: {}",
            undeclared_error(
                source,
                offset,
                &format!("undeclared reference to '{name}' (in container '')")
            )
        ));
    }
    let mut instrument = Instrumenter {
        slots: Vec::new(),
        next_id: refs.max_id + 1,
    };
    let expr = instrument.expr(parsed.expression().clone(), &mut Vec::new());
    Ok(Arc::new(Program {
        expr,
        slots: instrument.slots.into(),
        uses_old_self: refs.uses_old_self,
    }))
}

/// A compile error at byte `offset` of `source`, in cel-go's format as the `cel` crate writes parse errors:
/// `ERROR: <input>:line:column: message`, then the line and a caret under the column.
fn undeclared_error(source: &str, offset: usize, message: &str) -> String {
    let mut end = offset.min(source.len());
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let before = &source[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    let text = source[line_start..].lines().next().unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{column}: {message}\n| {text}\n| {:.>column$}",
        "^"
    )
}

/// What the static check learns of an expression's identifiers.
#[derive(Default)]
struct References {
    /// The variables declared, or none for a rule's `self` and `oldSelf`.
    declared: Vec<String>,
    undeclared: Vec<(u64, String)>,
    uses_old_self: bool,
    max_id: u64,
}

impl References {
    fn walk(&mut self, e: &IdedExpr, scope: &mut Vec<String>) {
        self.max_id = self.max_id.max(e.id);
        match &e.expr {
            Expr::Ident(name) => {
                if scope.iter().any(|s| s == name) {
                    return;
                }
                if self.declared.iter().any(|d| d == name) {
                    return;
                }
                match name.as_str() {
                    "self" if self.declared.is_empty() => {}
                    "oldSelf" if self.declared.is_empty() => self.uses_old_self = true,
                    n if TYPE_NAMES.contains(&n) => {}
                    _ => self.undeclared.push((e.id, name.clone())),
                }
            }
            Expr::Select(s) => self.walk(&s.operand, scope),
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    if !is_namespace(target) {
                        self.walk(target, scope);
                    }
                }
                for arg in &call.args {
                    self.walk(arg, scope);
                }
            }
            Expr::List(list) => list.elements.iter().for_each(|x| self.walk(x, scope)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.walk(&m.key, scope);
                        self.walk(&m.value, scope);
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, scope);
                    }
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, scope);
                self.walk(&c.accu_init, scope);
                let depth = scope.len();
                scope.push(c.iter_var.clone());
                scope.extend(c.iter_var2.clone());
                scope.push(c.accu_var.clone());
                self.walk(&c.loop_cond, scope);
                self.walk(&c.loop_step, scope);
                self.walk(&c.result, scope);
                scope.truncate(depth);
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

/// Whether `target` is a function namespace such as `sets` in `sets.contains(a, b)`.
fn is_namespace(target: &IdedExpr) -> bool {
    matches!(&target.expr, Expr::Ident(name) if NAMESPACES.contains(&name.as_str()))
}

/// The measure of an operand a call's cost depends on: known from a literal, or recorded by a probe.
#[derive(Debug, Clone, Copy)]
enum Sz {
    Const(Measure),
    Probe(usize),
}

/// What one slot of an instrumented expression does when evaluated.
#[derive(Debug)]
enum Slot {
    /// Record the operand's measure.
    Probe(ProbeKind),
    /// Charge the node's cost.
    Charge(Charge),
}

/// What a probe records of its operand.
#[derive(Debug, Clone, Copy)]
enum ProbeKind {
    /// cel-go's `actualSize`: characters of a string, bytes, elements of a list or map, else 1.
    Size,
    /// kube's `traversalCost`: a tenth per string byte, the sum over a list's or map's contents, else 1.
    Traversal,
    /// The argument of `lists.range(n)`, charged `n` before the list is built.
    RangeLength,
}

/// How a node's cost is computed, after cel-go's `costCall` and kube's `CostEstimator.CallCost`.
#[derive(Debug)]
enum Charge {
    /// A constant cost.
    Fixed(u64),
    /// `ceil(size × factor)`: string traversals such as `startsWith` or `lowerAscii`.
    Scaled(Sz, f64),
    /// `ceil(min(a, b) × 0.1)`: equality and ordering.
    Min(Sz, Sz),
    /// `ceil((a + b) × 0.1)` for two strings or bytes, else 1: `+`.
    Concat(Sz, Sz),
    /// `ceil((1 + a) × 0.1) × ceil(b × 0.25)`: `matches`, `find`, `findAll`.
    Regex(Sz, Sz),
    /// `ceil(a × 0.1) × ceil(b × 0.1)`: `contains` on strings.
    Contains(Sz, Sz),
    /// The list's length for `in` on a list, else 1.
    In(Sz),
    /// A traversal cost recorded by a [`ProbeKind::Traversal`] probe.
    Traversal(Sz),
    /// A string's tenth or a list's length: `reverse`, `sort`, `distinct`, `flatten`, `slice`.
    Linear(Sz),
    /// `a × b`: the `sets` functions.
    Product(Sz, Sz),
    /// `ceil(size of the result × factor)`: `join`.
    OfResult(f64),
}

/// An operand's size, and whether it is a string (or bytes) or a list, which some costs depend on.
#[derive(Debug, Clone, Copy, Default)]
struct Measure {
    size: u64,
    stringy: bool,
    list: bool,
}

impl Measure {
    fn of(v: &dyn Val) -> Measure {
        let kind = v.get_type().kind();
        let size = v
            .as_sizer()
            .map_or(1, |s| u64::try_from(*s.size().inner()).unwrap_or(0));
        Measure {
            size,
            stringy: matches!(kind, Kind::String | Kind::Bytes),
            list: kind == Kind::List,
        }
    }
}

/// kube's `traversalCost`.
fn traversal(v: &dyn Val) -> u64 {
    let kind = v.get_type().kind();
    match kind {
        Kind::String | Kind::Bytes => {
            let bytes = v
                .downcast_ref::<CelString>()
                .map_or_else(|| Measure::of(v).size, |s| s.inner().len() as u64);
            (bytes as f64 * TRAVERSAL_FACTOR) as u64
        }
        Kind::List | Kind::Map => {
            let Some(iterable) = v.as_iterable() else { return 1 };
            let mut items = iterable.iter();
            let mut cost = 0u64;
            while let Some(item) = items.next() {
                cost = cost.saturating_add(traversal(item));
                if kind == Kind::Map {
                    if let Some(value) = v.as_indexer().and_then(|ix| ix.get(item).ok()) {
                        cost = cost.saturating_add(traversal(value.as_ref()));
                    }
                }
            }
            cost
        }
        _ => 1,
    }
}

fn ceil(x: f64) -> u64 {
    x.ceil() as u64
}

/// The meter of the evaluation running on this thread.
struct Meter {
    cost: u64,
    limit: u64,
    exceeded: bool,
    slots: Arc<[Slot]>,
    measures: Vec<Measure>,
}

thread_local! {
    static METER: RefCell<Option<Meter>> = const { RefCell::new(None) };
}

impl Meter {
    fn add(&mut self, amount: u64) -> Result<(), ExecutionError> {
        self.cost = self.cost.saturating_add(amount);
        if self.exceeded || self.cost > self.limit {
            self.exceeded = true;
            return Err(ExecutionError::function_error(COST_FN, COST_LIMIT_EXCEEDED));
        }
        Ok(())
    }

    fn measure(&self, sz: Sz) -> Measure {
        match sz {
            Sz::Const(m) => m,
            Sz::Probe(slot) => self.measures.get(slot).copied().unwrap_or_default(),
        }
    }

    fn charge(&mut self, slot: usize, result: &dyn Val) -> Result<(), ExecutionError> {
        let Some(Slot::Charge(charge)) = self.slots.get(slot) else {
            return Ok(());
        };
        let m = |sz: &Sz| self.measure(*sz);
        let amount = match charge {
            Charge::Fixed(n) => *n,
            Charge::Scaled(s, factor) => ceil(m(s).size as f64 * factor),
            Charge::Min(a, b) => ceil(m(a).size.min(m(b).size) as f64 * TRAVERSAL_FACTOR),
            Charge::Concat(a, b) => {
                let (a, b) = (m(a), m(b));
                if a.stringy && b.stringy {
                    ceil((a.size + b.size) as f64 * TRAVERSAL_FACTOR)
                } else {
                    1
                }
            }
            Charge::Regex(a, b) => {
                ceil((1 + m(a).size) as f64 * TRAVERSAL_FACTOR).saturating_mul(ceil(m(b).size as f64 * REGEX_FACTOR))
            }
            Charge::Contains(a, b) => {
                ceil(m(a).size as f64 * TRAVERSAL_FACTOR).saturating_mul(ceil(m(b).size as f64 * TRAVERSAL_FACTOR))
            }
            Charge::In(s) => {
                let s = m(s);
                if s.list {
                    s.size
                } else {
                    1
                }
            }
            Charge::Traversal(s) => m(s).size,
            Charge::Linear(s) => {
                let s = m(s);
                if s.stringy {
                    ceil(s.size as f64 * TRAVERSAL_FACTOR)
                } else {
                    s.size
                }
            }
            Charge::Product(a, b) => m(a).size.saturating_mul(m(b).size),
            Charge::OfResult(factor) => ceil(Measure::of(result).size as f64 * factor),
        };
        self.add(amount)
    }

    fn probe(&mut self, slot: usize, value: &dyn Val) -> Result<(), ExecutionError> {
        if self.exceeded {
            return Err(ExecutionError::function_error(COST_FN, COST_LIMIT_EXCEEDED));
        }
        let Some(Slot::Probe(kind)) = self.slots.get(slot) else {
            return Ok(());
        };
        let measure = match kind {
            ProbeKind::Size => Measure::of(value),
            ProbeKind::Traversal => Measure {
                size: traversal(value),
                ..Measure::default()
            },
            ProbeKind::RangeLength => {
                let n = value
                    .downcast_ref::<CelInt>()
                    .map_or(0, |n| u64::try_from(*n.inner()).unwrap_or(0));
                self.add(n)?;
                Measure::default()
            }
        };
        if self.measures.len() <= slot {
            self.measures.resize(slot + 1, Measure::default());
        }
        self.measures[slot] = measure;
        Ok(())
    }
}

fn slot_and_value<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<(usize, CowVal<'b, 'v>), ExecutionError> {
    let value = args.pop().ok_or_else(ExecutionError::missing_argument_or_target)?;
    let slot = args
        .first()
        .and_then(|s| s.downcast_ref::<CelInt>())
        .and_then(|s| usize::try_from(*s.inner()).ok())
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    Ok((slot, value))
}

/// `@cost(slot, value)`: charges the node's cost, then returns its value.
pub(super) fn cost_fn<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (slot, value) = slot_and_value(args)?;
    METER.with_borrow_mut(|meter| meter.as_mut().map_or(Ok(()), |m| m.charge(slot, value.as_ref())))?;
    Ok(value)
}

/// `@probe(slot, value)`: records an operand's measure, then returns it.
pub(super) fn probe_fn<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (slot, value) = slot_and_value(args)?;
    METER.with_borrow_mut(|meter| meter.as_mut().map_or(Ok(()), |m| m.probe(slot, value.as_ref())))?;
    Ok(value)
}

/// The result of one evaluation.
pub(super) struct Outcome {
    /// The value, or the evaluation error.
    pub(super) result: Result<Value, ExecutionError>,
    /// The cost measured, as cel-go's `ActualCost`.
    pub(super) cost: u64,
    /// Whether the evaluation passed `limit` and was stopped.
    pub(super) exceeded: bool,
}

/// Takes the meter off the thread however the evaluation ends.
struct MeterGuard;

impl Drop for MeterGuard {
    fn drop(&mut self) {
        METER.with_borrow_mut(|m| *m = None);
    }
}

/// Evaluates `program` in `ctx`, stopping once its cost passes `limit`.
pub(super) fn evaluate(program: &Program, ctx: &Context<'_, '_>, limit: u64) -> Outcome {
    METER.with_borrow_mut(|m| {
        *m = Some(Meter {
            cost: 0,
            limit,
            exceeded: false,
            slots: program.slots.clone(),
            measures: Vec::new(),
        })
    });
    let guard = MeterGuard;
    let result = Value::resolve(&program.expr, ctx);
    let (cost, exceeded) = METER.with_borrow(|m| m.as_ref().map_or((0, false), |m| (m.cost, m.exceeded)));
    drop(guard);
    Outcome { result, cost, exceeded }
}
