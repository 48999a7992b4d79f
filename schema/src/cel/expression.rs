//! CEL expressions of admission: a webhook's `matchConditions`, a ValidatingAdmissionPolicy's `validations`,
//! `messageExpression`s, `variables` and `matchConditions` (kube's `k8s.io/apiserver/pkg/admission/plugin/cel`).
//! They are compiled over the variables their caller declares (`object`, `oldObject`, `request`, `params`,
//! `namespaceObject`, `variables`) and run with the same library and cost limits as schema rules; objects are
//! typed by their JSON (admission has no schema of them here; kube types them by the resource's OpenAPI schema).

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::objects::{Key, Map};
use ::cel::{Context, Value};
use serde_json::Value as Json;

use super::program::{self, Program};
use super::{evaluation_error, values, PER_CALL_LIMIT};

/// A compiled expression.
#[derive(Debug, Clone)]
pub struct Expression {
    source: String,
    program: Arc<Program>,
}

/// The value an expression evaluated to.
#[derive(Debug, Clone)]
pub struct Evaluated(Value);

impl Evaluated {
    /// The value if it is a bool.
    pub fn as_bool(&self) -> Option<bool> {
        match self.0 {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the value is null.
    pub fn is_null(&self) -> bool {
        matches!(self.0, Value::Null)
    }
}

/// The variables an expression runs with.
pub struct Bindings {
    ctx: Context<'static, 'static>,
}

impl Default for Bindings {
    fn default() -> Self {
        Bindings {
            ctx: Context::with_env(Arc::clone(program::env())),
        }
    }
}

impl Bindings {
    /// Binds `name` to a JSON value (`null` for an absent object, as kube binds `oldObject` on a create).
    pub fn bind(&mut self, name: &str, value: &Json) {
        self.ctx.add_variable_from_value(name, values::untyped(value));
    }

    /// Binds `name` to a map of values evaluated before (a policy's `variables`).
    pub fn bind_evaluated(&mut self, name: &str, entries: &[(String, Evaluated)]) {
        let map: HashMap<Key, Value> = entries
            .iter()
            .map(|(k, v)| (Key::from(k.clone()), v.0.clone()))
            .collect();
        self.ctx
            .add_variable_from_value(name, Value::Map(Map { map: Arc::new(map) }));
    }
}

impl Expression {
    /// Compiles `source` over the variables `declared`; the error is kube's compile error text.
    pub fn compile(source: &str, declared: &[&str]) -> Result<Expression, String> {
        let program = program::compile_declared(source, declared)?;
        Ok(Expression {
            source: source.to_owned(),
            program,
        })
    }

    /// The expression's text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the expression; the error is kube's evaluation error text (`no such key: x evaluating rule: ...`).
    pub fn evaluate(&self, bindings: &Bindings) -> Result<Evaluated, String> {
        let outcome = program::evaluate(&self.program, &bindings.ctx, PER_CALL_LIMIT);
        if outcome.exceeded {
            return Err(format!(
                "operation cancelled: actual cost limit exceeded evaluating rule: {}",
                self.source
            ));
        }
        outcome
            .result
            .map(Evaluated)
            .map_err(|e| evaluation_error(&e, &self.source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_see_the_declared_variables_only() {
        let e = Expression::compile(
            "object.spec.size < 3 && request.operation == 'CREATE'",
            &["object", "request"],
        )
        .unwrap();
        let mut b = Bindings::default();
        b.bind("object", &json!({"spec": {"size": 2}}));
        b.bind("request", &json!({"operation": "CREATE"}));
        assert_eq!(e.evaluate(&b).unwrap().as_bool(), Some(true));
        let err = Expression::compile("self.x", &["object"]).unwrap_err();
        assert!(err.contains("undeclared reference to 'self'"), "{err}");
        let missing = Expression::compile("object.spec.nothing", &["object"]).unwrap();
        let err = missing.evaluate(&b).unwrap_err();
        assert!(err.contains("no such key"), "{err}");
    }

    #[test]
    fn evaluated_variables_are_a_map() {
        let name = Expression::compile("object.metadata.name", &["object"]).unwrap();
        let mut b = Bindings::default();
        b.bind("object", &json!({"metadata": {"name": "a"}}));
        let value = name.evaluate(&b).unwrap();
        assert_eq!(value.as_str(), Some("a"));
        b.bind_evaluated("variables", &[("name".into(), value)]);
        let uses = Expression::compile("variables.name + '!'", &["variables"]).unwrap();
        assert_eq!(uses.evaluate(&b).unwrap().as_str(), Some("a!"));
    }
}
