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

use ::cel::common::ast::{operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use ::cel::common::types::{CelInt, CelString, Kind};
use ::cel::common::value::{CowVal, Val};
use ::cel::{Context, ExecutionError, Value};

use ::cel::common::types::{DYN_TYPE, INT_TYPE};
use ::cel::Env;

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
/// The accumulator of the standard macros' comprehensions.
const MACRO_ACCUMULATOR: &str = "@result";
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

/// Rewrites a parsed expression into its instrumented form.
struct Instrumenter {
    slots: Vec<Slot>,
    next_id: u64,
}

impl Instrumenter {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn call(&mut self, func: &str, slot: usize, inner: IdedExpr) -> IdedExpr {
        let slot_literal = IdedExpr {
            id: self.id(),
            expr: Expr::Literal(LiteralValue::Int(CelInt::from(slot as i64))),
        };
        IdedExpr {
            id: self.id(),
            expr: Expr::Call(CallExpr {
                func_name: func.to_owned(),
                target: None,
                args: vec![slot_literal, inner],
            }),
        }
    }

    fn charge(&mut self, charge: Charge, inner: IdedExpr) -> IdedExpr {
        if matches!(charge, Charge::Fixed(0)) {
            return inner;
        }
        self.slots.push(Slot::Charge(charge));
        self.call(COST_FN, self.slots.len() - 1, inner)
    }

    /// Wraps an (already instrumented) operand in a probe, unless it is a literal, whose measure is known.
    fn measure(&mut self, operand: &mut IdedExpr, kind: ProbeKind) -> Sz {
        if let (Expr::Literal(lit), ProbeKind::Size | ProbeKind::Traversal) = (&operand.expr, kind) {
            let val = lit.to_val();
            return Sz::Const(match kind {
                ProbeKind::Traversal => Measure {
                    size: traversal(val.as_ref()),
                    ..Measure::default()
                },
                _ => Measure::of(val.as_ref()),
            });
        }
        self.slots.push(Slot::Probe(kind));
        let slot = self.slots.len() - 1;
        let inner = std::mem::take(operand);
        *operand = self.call(PROBE_FN, slot, inner);
        Sz::Probe(slot)
    }

    /// Instruments `e`; `scope` holds the comprehension variables in scope.
    fn expr(&mut self, e: IdedExpr, scope: &mut Vec<String>) -> IdedExpr {
        let IdedExpr { id, expr } = e;
        match expr {
            Expr::Literal(_) | Expr::Unspecified => IdedExpr { id, expr },
            Expr::Ident(ref name) => {
                let variable = scope.contains(name) || name == "self" || name == "oldSelf";
                let cost = u64::from(variable);
                self.charge(Charge::Fixed(cost), IdedExpr { id, expr })
            }
            Expr::Select(mut select) => {
                // `a.b.c` on a variable is one attribute: 1 for the variable and 1 per field. `has(a.b)` costs its
                // operand only (kube turns off cel-go's cost of presence tests).
                if let Some(segments) = chain_length(&select.operand) {
                    let cost = segments + u64::from(!select.test);
                    return self.charge(
                        Charge::Fixed(cost),
                        IdedExpr {
                            id,
                            expr: Expr::Select(select),
                        },
                    );
                }
                let operand = std::mem::take(&mut *select.operand);
                *select.operand = self.expr(operand, scope);
                let cost = u64::from(!select.test);
                self.charge(
                    Charge::Fixed(cost),
                    IdedExpr {
                        id,
                        expr: Expr::Select(select),
                    },
                )
            }
            Expr::Call(call) => self.call_expr(id, call, scope),
            Expr::List(mut list) => {
                let constant = list.elements.iter().all(|e| matches!(e.expr, Expr::Literal(_)));
                list.elements = list.elements.into_iter().map(|e| self.expr(e, scope)).collect();
                let cost = if constant { 0 } else { 10 };
                self.charge(
                    Charge::Fixed(cost),
                    IdedExpr {
                        id,
                        expr: Expr::List(list),
                    },
                )
            }
            Expr::Map(mut map) => {
                let mut constant = true;
                for entry in &mut map.entries {
                    if let EntryExpr::MapEntry(m) = &mut entry.expr {
                        constant &= matches!(m.key.expr, Expr::Literal(_)) && matches!(m.value.expr, Expr::Literal(_));
                        m.key = self.expr(std::mem::take(&mut m.key), scope);
                        m.value = self.expr(std::mem::take(&mut m.value), scope);
                    }
                }
                let cost = if constant { 0 } else { 30 };
                self.charge(
                    Charge::Fixed(cost),
                    IdedExpr {
                        id,
                        expr: Expr::Map(map),
                    },
                )
            }
            Expr::Struct(mut s) => {
                for entry in &mut s.entries {
                    if let EntryExpr::StructField(f) = &mut entry.expr {
                        f.value = self.expr(std::mem::take(&mut f.value), scope);
                    }
                }
                self.charge(
                    Charge::Fixed(40),
                    IdedExpr {
                        id,
                        expr: Expr::Struct(s),
                    },
                )
            }
            Expr::Comprehension(c) => self.comprehension(id, *c, scope),
        }
    }

    fn call_expr(&mut self, id: u64, mut call: CallExpr, scope: &mut Vec<String>) -> IdedExpr {
        let name = call.func_name.clone();
        // Logical operators and the conditional cost nothing themselves (cel-go charges their operands only).
        if matches!(
            name.as_str(),
            operators::LOGICAL_AND | operators::LOGICAL_OR | operators::CONDITIONAL
        ) {
            call.args = call.args.into_iter().map(|a| self.expr(a, scope)).collect();
            return IdedExpr {
                id,
                expr: Expr::Call(call),
            };
        }
        let namespaced = call.target.as_deref().is_some_and(is_namespace);
        let full_name = match (&call.target, namespaced) {
            (Some(target), true) => match &target.expr {
                Expr::Ident(ns) => format!("{ns}.{name}"),
                _ => name.clone(),
            },
            _ => name.clone(),
        };
        // The operands, the target first, as cel-go passes a member call's arguments.
        let mut operands: Vec<IdedExpr> = Vec::with_capacity(call.args.len() + 1);
        let has_target = call.target.is_some() && !namespaced;
        if has_target {
            if let Some(target) = call.target.take() {
                operands.push(self.expr(*target, scope));
            }
        }
        operands.extend(call.args.into_iter().map(|a| self.expr(a, scope)));
        let charge = self.charge_for(&full_name, &mut operands);
        if has_target {
            let mut rest = operands.into_iter();
            call.target = rest.next().map(Box::new);
            call.args = rest.collect();
        } else {
            call.args = operands;
        }
        self.charge(
            charge,
            IdedExpr {
                id,
                expr: Expr::Call(call),
            },
        )
    }

    fn charge_for(&mut self, name: &str, ops: &mut [IdedExpr]) -> Charge {
        use ProbeKind::{RangeLength, Size, Traversal};
        match (name, ops.len()) {
            (
                operators::EQUALS
                | operators::NOT_EQUALS
                | operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
                2,
            ) => {
                let (a, b) = (self.measure(&mut ops[0], Size), self.measure(&mut ops[1], Size));
                Charge::Min(a, b)
            }
            (operators::ADD, 2) => {
                let (a, b) = (self.measure(&mut ops[0], Size), self.measure(&mut ops[1], Size));
                Charge::Concat(a, b)
            }
            (operators::IN, 2) => Charge::In(self.measure(&mut ops[1], Size)),
            ("matches" | "find" | "findAll", 2 | 3) => {
                let (a, b) = (self.measure(&mut ops[0], Size), self.measure(&mut ops[1], Size));
                Charge::Regex(a, b)
            }
            ("contains", 2) => {
                let (a, b) = (self.measure(&mut ops[0], Size), self.measure(&mut ops[1], Size));
                Charge::Contains(a, b)
            }
            // cel-go measures the prefix or suffix (see kube's celcoststability_test.go).
            ("startsWith" | "endsWith", 2) => Charge::Scaled(self.measure(&mut ops[1], Size), TRAVERSAL_FACTOR),
            (
                "lowerAscii" | "upperAscii" | "substring" | "trim" | "format" | "strings.quote" | "quantity"
                | "isQuantity",
                1..,
            ) => Charge::Scaled(self.measure(&mut ops[0], Size), TRAVERSAL_FACTOR),
            ("replace" | "split", 1..) => Charge::Scaled(self.measure(&mut ops[0], Size), 2.0 * TRAVERSAL_FACTOR),
            ("join", 1..) => Charge::OfResult(2.0 * TRAVERSAL_FACTOR),
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes", 1..) => {
                Charge::Traversal(self.measure(&mut ops[0], Traversal))
            }
            ("reverse" | "sort" | "distinct" | "flatten" | "slice", 1..) => {
                Charge::Linear(self.measure(&mut ops[0], Size))
            }
            ("sets.contains" | "sets.equivalent" | "sets.intersects", 2) => {
                let (a, b) = (self.measure(&mut ops[0], Size), self.measure(&mut ops[1], Size));
                Charge::Product(a, b)
            }
            ("lists.range", 1) => {
                self.measure(&mut ops[0], RangeLength);
                Charge::Fixed(1)
            }
            _ => Charge::Fixed(1),
        }
    }

    /// A comprehension (a macro: `all`, `exists`, `exists_one`, `map`, `filter`). Its loop step and result keep
    /// their shape, which the interpreter recognises (to fold `all`/`exists` errors as cel-go does, and to build
    /// `map`/`filter` results in place); their cost is charged on the iteration range (the result's) and on the
    /// first user expression of each iteration (the step's).
    fn comprehension(&mut self, id: u64, mut c: ComprehensionExpr, scope: &mut Vec<String>) -> IdedExpr {
        // The standard macros accumulate in `@result`; any other accumulator is a binding (`cel.bind`, as `sortBy`
        // and the optional macros expand), whose initial value and result are user expressions.
        let binding = c.accu_var != MACRO_ACCUMULATOR;
        let range = self.expr(std::mem::take(&mut c.iter_range), scope);
        let result_cost = if binding {
            0
        } else {
            skeleton_cost(&c.result, &c.accu_var)
        };
        c.iter_range = self.charge(Charge::Fixed(result_cost), range);
        c.accu_init = self.expr(std::mem::take(&mut c.accu_init), scope);
        let depth = scope.len();
        scope.push(c.iter_var.clone());
        scope.extend(c.iter_var2.clone());
        // The loop condition is charged where it runs (also when it ends the loop, as in cel-go); a literal one,
        // which `map` and `filter` have and the interpreter relies on, costs nothing and stays as it is.
        let cond_cost = skeleton_cost(&c.loop_cond, &c.accu_var);
        let cond = std::mem::take(&mut c.loop_cond);
        c.loop_cond = self.charge(Charge::Fixed(cond_cost), cond);
        let mut overhead = Some(skeleton_cost(&c.loop_step, &c.accu_var));
        let step = std::mem::take(&mut c.loop_step);
        c.loop_step = self.step(step, &c.accu_var, &mut overhead, scope);
        if binding {
            scope.push(c.accu_var.clone());
            c.result = self.expr(std::mem::take(&mut c.result), scope);
        }
        scope.truncate(depth);
        IdedExpr {
            id,
            expr: Expr::Comprehension(Box::new(c)),
        }
    }

    /// Instruments a loop step: the nodes that combine the accumulator keep their shape, the user expressions in
    /// them are instrumented, the first one (in evaluation order) also charging the iteration's `overhead`.
    fn step(&mut self, e: IdedExpr, accu: &str, overhead: &mut Option<u64>, scope: &mut Vec<String>) -> IdedExpr {
        if !is_skeleton(&e, accu) {
            let user = self.expr(e, scope);
            return match overhead.take() {
                Some(cost) => self.charge(Charge::Fixed(cost), user),
                None => user,
            };
        }
        let IdedExpr { id, expr } = e;
        match expr {
            Expr::Call(mut call) => {
                let concat = call.func_name == operators::ADD;
                let mut args = Vec::with_capacity(call.args.len());
                for arg in std::mem::take(&mut call.args) {
                    args.push(match arg.expr {
                        Expr::List(mut list) if concat => {
                            list.elements = list
                                .elements
                                .into_iter()
                                .map(|x| self.step(x, accu, overhead, scope))
                                .collect();
                            IdedExpr {
                                id: arg.id,
                                expr: Expr::List(list),
                            }
                        }
                        _ => self.step(arg, accu, overhead, scope),
                    });
                }
                call.args = args;
                IdedExpr {
                    id,
                    expr: Expr::Call(call),
                }
            }
            other => IdedExpr { id, expr: other },
        }
    }
}

/// The length of a qualified name on a variable (`self.spec.x` is 3), or `None` if `e` is not one.
fn chain_length(e: &IdedExpr) -> Option<u64> {
    match &e.expr {
        Expr::Ident(name) if !TYPE_NAMES.contains(&name.as_str()) && !NAMESPACES.contains(&name.as_str()) => Some(1),
        Expr::Select(s) if !s.test => chain_length(&s.operand).map(|n| n + 1),
        _ => None,
    }
}

/// Whether `e` is part of a comprehension's own machinery: its accumulator, or an operator combining it.
fn is_skeleton(e: &IdedExpr, accu: &str) -> bool {
    match &e.expr {
        Expr::Ident(name) => name == accu,
        Expr::Call(call)
            if matches!(
                call.func_name.as_str(),
                operators::LOGICAL_AND
                    | operators::LOGICAL_OR
                    | operators::CONDITIONAL
                    | operators::ADD
                    | operators::EQUALS
                    | operators::LOGICAL_NOT
                    | operators::NOT_STRICTLY_FALSE
            ) =>
        {
            call.args.iter().any(|a| is_skeleton(a, accu))
        }
        _ => false,
    }
}

/// cel-go's cost of a comprehension's own machinery: 1 per accumulator reference, call and list it builds (a list
/// costs 10), nothing for logical operators and literals.
fn skeleton_cost(e: &IdedExpr, accu: &str) -> u64 {
    if !is_skeleton(e, accu) {
        return 0;
    }
    match &e.expr {
        Expr::Ident(_) => 1,
        Expr::Call(call) => {
            let own = u64::from(!matches!(
                call.func_name.as_str(),
                operators::LOGICAL_AND | operators::LOGICAL_OR | operators::CONDITIONAL
            ));
            let lists = if call.func_name == operators::ADD {
                10 * call.args.iter().filter(|a| matches!(a.expr, Expr::List(_))).count() as u64
            } else {
                0
            };
            own + lists + call.args.iter().map(|a| skeleton_cost(a, accu)).sum::<u64>()
        }
        _ => 0,
    }
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
