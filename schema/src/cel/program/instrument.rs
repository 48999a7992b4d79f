//! The instrumenting of a parsed expression: each node with a cost wrapped in `@cost(slot, node)`, each operand
//! whose size a call's cost depends on in `@probe(slot, operand)`, and a comprehension's per-iteration overhead
//! charged on its first user expression (the module documentation of [`super`] says why).

use ::cel::common::ast::{operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use ::cel::common::types::CelInt;

use super::{
    is_namespace, traversal, Charge, Measure, ProbeKind, Slot, Sz, COST_FN, NAMESPACES, PROBE_FN, TRAVERSAL_FACTOR,
    TYPE_NAMES,
};

/// The accumulator of the standard macros' comprehensions.
const MACRO_ACCUMULATOR: &str = "@result";

/// Rewrites a parsed expression into its instrumented form.
pub(super) struct Instrumenter {
    pub(super) slots: Vec<Slot>,
    pub(super) next_id: u64,
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
    pub(super) fn expr(&mut self, e: IdedExpr, scope: &mut Vec<String>) -> IdedExpr {
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
