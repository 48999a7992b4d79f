//! Unit tests. Expected texts are kube's (`validation.go` and `validation_test.go` of
//! k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel, 1.37), costs those of its `celcoststability_test.go`.

use serde_json::{json, Value as Json};

use super::*;

/// A resource schema with the given `spec` schema.
fn resource(spec: Json) -> Json {
    json!({"type": "object", "properties": {"spec": spec}})
}

/// A resource object with the given `spec`.
fn object(spec: Json) -> Json {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": spec})
}

/// A schema with rules.
fn with_rules(mut schema: Json, rules: Json) -> Json {
    schema["x-kubernetes-validations"] = rules;
    schema
}

/// The errors as kube's `Error()` renders them: `field: message`.
fn rendered(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// The errors of `spec` under a spec schema, on create.
fn create(spec_schema: Json, spec: Json) -> Vec<String> {
    rendered(&validate(&resource(spec_schema), &object(spec), None))
}

/// The errors of an update from `old` to `new`.
fn update(spec_schema: Json, new: Json, old: Json) -> Vec<String> {
    rendered(&validate(&resource(spec_schema), &object(new), Some(&object(old))))
}

/// The measured cost of `rule` with `self` bound to `value` under `schema`.
fn cost_of(schema: &Json, value: &Json, rule: &str) -> u64 {
    let program = program::compile(rule).expect("rule compiles");
    let outcome = Activation::new(schema, false, value, None).run(&program, false, PER_CALL_LIMIT);
    assert_eq!(outcome.result, Ok(Value::Bool(true)), "{rule}");
    outcome.cost
}

#[test]
fn scalar_rules_show_the_value() {
    let spec = json!({"type": "object", "properties": {
        "replicas": with_rules(json!({"type": "integer"}), json!([{"rule": "self >= 0"}])),
        "name": with_rules(json!({"type": "string"}), json!([{"rule": "self.startsWith('w-')"}])),
        "ratio": with_rules(json!({"type": "number"}), json!([{"rule": "self < 1.0"}])),
        "enabled": with_rules(json!({"type": "boolean"}), json!([{"rule": "!self"}])),
    }});
    let errors = create(
        spec.clone(),
        json!({"replicas": -1, "name": "x", "ratio": 1.5, "enabled": true}),
    );
    assert_eq!(
        errors,
        [
            "spec.enabled: Invalid value: true: failed rule: !self",
            r#"spec.name: Invalid value: "x": failed rule: self.startsWith('w-')"#,
            "spec.ratio: Invalid value: 1.5: failed rule: self < 1.0",
            "spec.replicas: Invalid value: -1: failed rule: self >= 0",
        ]
    );
    assert!(create(
        spec,
        json!({"replicas": 3, "name": "w-1", "ratio": 0.5, "enabled": false})
    )
    .is_empty());
}

#[test]
fn object_and_array_rules_omit_the_value() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "ports": with_rules(
                json!({"type": "array", "items": {"type": "integer"}}),
                json!([{"rule": "size(self) <= 2"}]),
            ),
        }}),
        json!([{"rule": "self.min <= self.max"}]),
    );
    let errors = create(spec.clone(), json!({"min": 5, "max": 1, "ports": [1, 2, 3]}));
    assert_eq!(
        errors,
        [
            "spec: Invalid value: failed rule: self.min <= self.max",
            "spec.ports: Invalid value: failed rule: size(self) <= 2"
        ]
    );
    let errors = validate(&resource(spec), &object(json!({"min": 5, "max": 1, "ports": []})), None);
    assert_eq!(errors[0].reason, FieldErrorReason::Invalid);
    assert_eq!(errors[0].field, "spec");
    assert_eq!(errors[0].message, "Invalid value: failed rule: self.min <= self.max");
}

#[test]
fn root_rules_see_type_and_object_meta_at_a_nil_path() {
    let schema = with_rules(
        resource(json!({"type": "object", "properties": {"prefix": {"type": "string"}}})),
        json!([
            {"rule": "self.metadata.name.startsWith(self.spec.prefix)", "message": "name must start with the prefix"},
            {"rule": "self.kind == 'Widget' && self.apiVersion == 'example.com/v1'"},
            {"rule": "!has(self.metadata.namespace)"},
        ]),
    );
    let obj = object(json!({"prefix": "x"}));
    assert_eq!(
        rendered(&validate(&schema, &obj, None)),
        ["<nil>: Invalid value: name must start with the prefix"]
    );
    let obj = object(json!({"prefix": "w"}));
    assert!(validate(&schema, &obj, None).is_empty());
}

#[test]
fn list_rules_run_on_the_list_and_on_each_item() {
    let spec = json!({"type": "object", "properties": {
        "items": with_rules(
            json!({"type": "array", "items": with_rules(
                json!({"type": "object", "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}}}),
                json!([{"rule": "self.weight > 0", "message": "weight must be positive"}]),
            )}),
            json!([
                {"rule": "self.all(i, i.name.lowerAscii() == i.name)", "message": "names must be lowercase"},
                {"rule": "self.exists_one(i, i.name == 'main')", "message": "exactly one item is main"},
                {"rule": "self.map(i, i.weight).sum() <= 10", "message": "weights add up to at most 10"},
                {"rule": "self.filter(i, i.weight > 5).size() <= 1"},
            ]),
        ),
    }});
    let good = json!({"items": [{"name": "main", "weight": 5}, {"name": "b", "weight": 5}]});
    assert!(create(spec.clone(), good).is_empty());
    let bad = json!({"items": [{"name": "Main", "weight": 6}, {"name": "b", "weight": 6}, {"name": "c", "weight": 0}]});
    assert_eq!(
        create(spec, bad),
        [
            "spec.items: Invalid value: names must be lowercase",
            "spec.items: Invalid value: exactly one item is main",
            "spec.items: Invalid value: weights add up to at most 10",
            "spec.items: Invalid value: failed rule: self.filter(i, i.weight > 5).size() <= 1",
            "spec.items[2]: Invalid value: weight must be positive",
        ]
    );
}

#[test]
fn map_rules_run_on_the_map_and_on_each_value() {
    let spec = json!({"type": "object", "properties": {
        "limits": with_rules(
            json!({"type": "object", "additionalProperties": with_rules(
                json!({"type": "integer"}),
                json!([{"rule": "self <= 100"}]),
            )}),
            json!([
                {"rule": "self.all(k, k.matches('^[a-z]+$'))", "message": "keys are lowercase words"},
                {"rule": "'cpu' in self && self['cpu'] > 0"},
                {"rule": "size(self) <= 3"},
            ]),
        ),
    }});
    assert!(create(spec.clone(), json!({"limits": {"cpu": 1, "memory": 100}})).is_empty());
    assert_eq!(
        create(spec, json!({"limits": {"CPU": 1, "disk": 101, "a": 1, "b": 2}})),
        [
            "spec.limits: Invalid value: keys are lowercase words",
            "spec.limits: Invalid value: failed rule: 'cpu' in self && self['cpu'] > 0",
            "spec.limits: Invalid value: failed rule: size(self) <= 3",
            "spec.limits[disk]: Invalid value: 101: failed rule: self <= 100",
        ]
    );
}

#[test]
fn message_and_message_expression() {
    let spec = |rule: Json| {
        json!({"type": "object", "properties": {
            "size": with_rules(json!({"type": "integer"}), json!([rule])),
        }})
    };
    let run = |rule: Json| create(spec(rule), json!({"size": 7}));
    assert_eq!(
        run(json!({"rule": "self < 5", "message": "  too big  "})),
        ["spec.size: Invalid value: 7: too big"]
    );
    assert_eq!(
        run(
            json!({"rule": "self < 5", "message": "invisible", "messageExpression": "'size ' + string(self) + ' is over 5'"})
        ),
        ["spec.size: Invalid value: 7: size 7 is over 5"]
    );
    // A messageExpression that fails, is not a string, is empty or has a line break gives way to the message.
    for expression in ["string(self.x)", "self", "'   '", "'a\\nb'", "['a'][3]"] {
        assert_eq!(
            run(json!({"rule": "self < 5", "message": "fallback", "messageExpression": expression})),
            ["spec.size: Invalid value: 7: fallback"],
            "{expression}"
        );
    }
    assert_eq!(
        run(json!({"rule": "self < 5", "messageExpression": "1 +"})),
        ["spec.size: Invalid value: 7: failed rule: self < 5"]
    );
}

#[test]
fn reasons_set_the_cause_type() {
    let spec = json!({"type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.a != 'x'", "reason": "FieldValueForbidden", "message": "a may not be x"},
            {"rule": "self.b != 'x'", "reason": "FieldValueRequired", "message": "b is required"},
            {"rule": "self.c != 'x'", "reason": "FieldValueDuplicate", "message": "ignored"},
            {"rule": "self.d != 'x'", "reason": "FieldValueInvalid"},
            {"rule": "self.d != 'x'", "reason": "SomethingElse"},
        ],
    });
    let errors = validate(
        &resource(spec),
        &object(json!({"a": "x", "b": "x", "c": "x", "d": "x"})),
        None,
    );
    let causes: Vec<(&str, String)> = errors.iter().map(|e| (e.reason.as_str(), e.to_string())).collect();
    assert_eq!(
        causes,
        [
            ("FieldValueForbidden", "spec: Forbidden: a may not be x".to_owned()),
            ("FieldValueRequired", "spec: Required value: b is required".to_owned()),
            ("FieldValueDuplicate", "spec: Duplicate value".to_owned()),
            (
                "FieldValueInvalid",
                "spec: Invalid value: failed rule: self.d != 'x'".to_owned()
            ),
            (
                "FieldValueInvalid",
                "spec: Invalid value: failed rule: self.d != 'x'".to_owned()
            ),
        ]
    );
    // On a scalar, a duplicate shows the value.
    let spec = json!({"type": "object", "properties": {"name": with_rules(
        json!({"type": "string"}),
        json!([{"rule": "self != 'dup'", "reason": "FieldValueDuplicate"}]),
    )}});
    assert_eq!(
        create(spec, json!({"name": "dup"})),
        [r#"spec.name: Duplicate value: "dup""#]
    );
}

#[test]
fn field_path_moves_the_error() {
    let spec = json!({"type": "object",
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "a.b": {"type": "string"},
        },
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "fieldPath": ".max", "message": "max below min"},
            {"rule": "!('x' in self.labels)", "fieldPath": ".labels['x']", "reason": "FieldValueForbidden"},
            {"rule": "self.a__dot__b == 'ok'", "fieldPath": "['a.b']"},
            {"rule": "false", "fieldPath": ".nope", "message": "unknown field path stays at the node"},
        ],
    });
    assert_eq!(
        create(spec, json!({"min": 2, "max": 1, "labels": {"x": "y"}, "a.b": "no"})),
        [
            "spec.max: Invalid value: max below min",
            "spec.labels[x]: Forbidden: failed rule: !('x' in self.labels)",
            "spec.a.b: Invalid value: failed rule: self.a__dot__b == 'ok'",
            "spec: Invalid value: unknown field path stays at the node",
        ]
    );
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"foo's": {"type": "string"}, "test\u{7}": {"type": "string"}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }});
    assert_eq!(valid_field_path(".a['foo\\'s']", &schema).as_deref(), Some("a.foo's"));
    assert_eq!(
        valid_field_path(".a['test\\a']", &schema).as_deref(),
        Some("a.test\u{7}")
    );
    assert_eq!(valid_field_path(".m.k1.x", &schema).as_deref(), Some("m[k1].x"));
    assert_eq!(valid_field_path(".m['k.2']", &schema).as_deref(), Some("m[k.2]"));
    assert_eq!(valid_field_path(".a.foo's", &schema).as_deref(), Some("a.foo's"));
    for bad in [".", ". a", ".a.nope", ".a['foo\\'s'", ".m[0]", "a"] {
        assert_eq!(valid_field_path(bad, &schema), None, "{bad}");
    }
}

#[test]
fn transition_rules_run_only_on_update() {
    let spec = json!({"type": "object", "properties": {
        "mode": with_rules(
            json!({"type": "string"}),
            json!([{"rule": "self == oldSelf", "message": "mode is immutable"}]),
        ),
        "count": with_rules(
            json!({"type": "integer"}),
            json!([{"rule": "self >= oldSelf", "message": "count may not decrease"}, {"rule": "self < 100"}]),
        ),
    }});
    // On create the transition rules are skipped; the others run.
    assert_eq!(
        create(spec.clone(), json!({"mode": "a", "count": 100})),
        ["spec.count: Invalid value: 100: failed rule: self < 100"]
    );
    assert!(update(
        spec.clone(),
        json!({"mode": "a", "count": 2}),
        json!({"mode": "a", "count": 1})
    )
    .is_empty());
    assert_eq!(
        update(
            spec.clone(),
            json!({"mode": "b", "count": 1}),
            json!({"mode": "a", "count": 2})
        ),
        [
            "spec.count: Invalid value: 1: count may not decrease",
            r#"spec.mode: Invalid value: "b": mode is immutable"#
        ]
    );
    // A field new in this update has no old value: its transition rules are skipped.
    assert!(update(spec, json!({"mode": "b", "count": 1}), json!({})).is_empty());
}

#[test]
fn old_values_correlate_by_map_list_keys_only() {
    let item = json!({"type": "object",
        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}],
    });
    let map_list = json!({"type": "object", "properties": {"ports": {
        "type": "array", "items": item.clone(),
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
    }}});
    let old = json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]});
    // Reordered and one changed: matched by name, not by position.
    let new =
        json!({"ports": [{"name": "https", "port": 443}, {"name": "http", "port": 8080}, {"name": "new", "port": 1}]});
    assert_eq!(
        update(map_list, new.clone(), old.clone()),
        ["spec.ports[1]: Invalid value: port is immutable"]
    );
    // Items of an atomic list have no old value: the transition rule never runs.
    let atomic = json!({"type": "object", "properties": {"ports": {"type": "array", "items": item}}});
    assert!(update(atomic, new, old).is_empty());
}

#[test]
fn optional_old_self_runs_on_create_too() {
    let spec = json!({"type": "object", "properties": {"version": with_rules(
        json!({"type": "integer"}),
        json!([{
            "rule": "oldSelf.hasValue() ? self >= oldSelf.value() : self == 1",
            "optionalOldSelf": true,
            "message": "versions start at 1 and never go back",
        }]),
    )}});
    assert_eq!(
        create(spec.clone(), json!({"version": 2})),
        ["spec.version: Invalid value: 2: versions start at 1 and never go back"]
    );
    assert!(create(spec.clone(), json!({"version": 1})).is_empty());
    assert!(update(spec.clone(), json!({"version": 3}), json!({"version": 2})).is_empty());
    assert_eq!(
        update(spec, json!({"version": 1}), json!({"version": 2})),
        ["spec.version: Invalid value: 1: versions start at 1 and never go back"]
    );
}

#[test]
fn an_expensive_rule_is_stopped_at_the_per_call_limit() {
    let list = with_rules(
        json!({"type": "array", "items": {"type": "integer"}}),
        json!([
            {"rule": "self.all(x, self.all(y, x + y >= 0))"},
            {"rule": "false", "message": "not reached"},
        ]),
    );
    let spec = json!({"type": "object", "properties": {"values": list, "votes": with_rules(
        json!({"type": "string"}),
        json!([{"rule": "false", "message": "not reached either"}]),
    )}});
    let values: Vec<i64> = (0..1000).collect();
    let started = std::time::Instant::now();
    let errors = validate(&resource(spec), &object(json!({"values": values, "votes": "x"})), None);
    assert_eq!(
        rendered(&errors),
        [
            "spec.values: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further \
             validation rules will be run due to call cost exceeds limit for rule: \
             self.all(x, self.all(y, x + y >= 0))"
        ]
    );
    // Stopped near the limit (1M units, a few million steps), not after the whole 1000×1000 loop.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn the_request_budget_stops_validation() {
    // Each group's rule costs about 200k, under the per-call limit; together they cost more than the budget. (The
    // test runs with a tenth of kube's budget, to stay quick; the accounting is the same.)
    let rule = "self.all(x, self.all(y, x >= 0))";
    let item = with_rules(
        json!({"type": "array", "items": {"type": "integer"}}),
        json!([{"rule": rule}]),
    );
    let spec = json!({"type": "object", "properties": {"groups": {"type": "array", "items": item.clone()}}});
    let group: Vec<i64> = (0..200).collect();
    let one = cost_of(&item, &json!(group), rule);
    assert!((100_000..PER_CALL_LIMIT).contains(&one), "{one}");
    let budget = RUNTIME_CEL_COST_BUDGET / 10;
    let groups = vec![group; 10];
    let errors = validate_with_budget(&resource(spec), &object(json!({"groups": groups})), None, budget);
    let last = (budget as u64 / one) as usize;
    assert_eq!(
        rendered(&errors),
        [format!(
            "spec.groups[{last}]: Invalid value: \"array\": validation failed due to running out of cost budget, no \
             further validation rules will be run"
        )]
    );
}

#[test]
fn work_inside_bindings_is_metered() {
    // `sortBy` expands to a binding around a `map`; the work in it counts like any other.
    let list = with_rules(
        json!({"type": "array", "items": {"type": "integer"}}),
        json!([{"rule": "self.sortBy(x, self.filter(y, y < x).size()) == self"}]),
    );
    let spec = json!({"type": "object", "properties": {"values": list}});
    let values: Vec<i64> = (0..1000).collect();
    let errors = create(spec.clone(), json!({"values": values}));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("call cost exceeds limit"), "{errors:?}");
    assert!(create(spec, json!({"values": [1, 2, 3]})).is_empty());
}

#[test]
fn message_expressions_share_the_budget() {
    let spec = json!({"type": "object", "properties": {"s": with_rules(
        json!({"type": "string"}),
        json!([{"rule": "false", "messageExpression": "'str1 ' + self"}, {"rule": "false"}]),
    )}});
    let obj = object(json!({"s": "a string"}));
    assert_eq!(
        rendered(&validate_with_budget(&resource(spec.clone()), &obj, None, 100)),
        [
            r#"spec.s: Invalid value: "a string": str1 a string"#,
            r#"spec.s: Invalid value: "a string": failed rule: false"#
        ]
    );
    assert_eq!(
        rendered(&validate_with_budget(&resource(spec), &obj, None, 2)),
        [
            "spec.s: Invalid value: \"string\": messageExpression evaluation failed due to running out of cost budget, \
             no further validation rules will be run"
        ]
    );
}

#[test]
fn a_rule_that_does_not_compile_is_an_internal_error_naming_it() {
    let spec = with_rules(
        json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        json!([{"rule": "self.x >"}, {"rule": "foo == 1"}, {"rule": "self.x + 1"}, {"rule": "self.x < 0"}]),
    );
    let errors = validate(&resource(spec), &object(json!({"x": 1})), None);
    let causes: Vec<(&str, &str)> = errors.iter().map(|e| (e.reason.as_str(), e.message.as_str())).collect();
    assert_eq!(
        causes,
        [
            (
                "InternalError",
                "Internal error: rule compile error: compilation failed: ERROR: <input>:1:9: Syntax error: \
                 mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', \
                 NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n| self.x >\n| ........^ for rule: self.x >"
            ),
            (
                "InternalError",
                "Internal error: rule compile error: compilation failed: ERROR: <input>:1:1: undeclared reference to \
                 'foo' (in container '')\n| foo == 1\n| ^ for rule: foo == 1"
            ),
            (
                "InternalError",
                "Internal error: rule compile error: cel expression must evaluate to a bool for rule: self.x + 1"
            ),
            ("FieldValueInvalid", "Invalid value: failed rule: self.x < 0"),
        ]
    );
}

#[test]
fn evaluation_errors_use_kube_wording() {
    let spec = json!({"type": "object", "properties": {
        "opt": with_rules(
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!([{"rule": "self.a == 'x'"}, {"rule": "has(self.a) && self.a == 'x'"}]),
        ),
        "port": with_rules(
            json!({"x-kubernetes-int-or-string": true}),
            json!([{"rule": "self > 0", "message": "port must be positive"}, {"rule": "[1, 2][self] == 1"}]),
        ),
        "n": with_rules(json!({"type": "integer"}), json!([{"rule": "10 / self == 1"}])),
    }});
    assert_eq!(
        create(spec, json!({"opt": {}, "port": "http", "n": 0})),
        [
            "spec.n: Invalid value: \"integer\": division by zero evaluating rule: 10 / self == 1",
            "spec.opt: Invalid value: \"object\": no such key: a evaluating rule: self.a == 'x'",
            "spec.opt: Invalid value: failed rule: has(self.a) && self.a == 'x'",
            "spec.port: Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, \
             function or macro signature for rule: port must be positive",
            "spec.port: Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, \
             function or macro signature for rule: [1, 2][self] == 1",
        ]
    );
}

#[test]
fn kube_library_functions() {
    let spec = json!({"type": "object", "properties": {
        "nums": {"type": "array", "items": {"type": "integer"}},
        "words": {"type": "array", "items": {"type": "string"}},
        "text": {"type": "string"},
        "empty": {"type": "array", "items": {"type": "integer"}},
    }});
    let rules = [
        "self.nums.isSorted() && !self.words.isSorted()",
        "self.nums.sum() == 10 && self.empty.sum() == 0",
        "self.nums.min() == 1 && self.nums.max() == 4 && self.words.max() == 'c'",
        "self.nums.indexOf(3) == 2 && self.nums.lastIndexOf(9) == -1 && [1, 2, 1].lastIndexOf(1) == 2",
        "self.nums.includes(2) && 'a'.includes('a')",
        "self.text.find('[0-9]+') == '42' && self.text.findAll('[a-z]+') == ['abc', 'def'] && \
         self.text.findAll('[a-z]+', 1) == ['abc']",
        "sets.contains(self.nums, [1, 2]) && sets.equivalent([1, 2, 2], [2, 1]) && !sets.intersects([1], [2])",
        "self.text.startsWith('abc') && self.text.endsWith('def') && self.text.contains('42')",
        "self.text.matches('^[a-z]+[0-9]+[a-z]+$') && !self.text.matches('^[0-9]')",
        "self.text.upperAscii() == 'ABC42DEF' && 'ABC'.lowerAscii() == 'abc'",
        "self.text.split('42') == ['abc', 'def'] && ['a', 'b'].join('-') == 'a-b'",
        "self.text.indexOf('4') == 3 && self.text.substring(3, 5) == '42' && ' x '.trim() == 'x'",
        "self.text.replace('42', '-') == 'abc-def' && self.text.charAt(0) == 'a'",
        "size(self.words) == 3 && size(self.text) == 8 && self.words.size() == 3",
        "self.nums.exists(n, n > 3) && self.nums.all(n, n > 0) && self.nums.exists_one(n, n == 4)",
        "self.nums.map(n, n * 2) == [2, 4, 6, 8] && self.nums.filter(n, n % 2 == 0) == [2, 4]",
        "self.nums.map(n, n > 2, n) == [3, 4]",
        "has(self.text) && !has(self.missing)",
        "self.?missing.orValue('none') == 'none' && self.?text.hasValue()",
        "[3, 1, 2].sort() == [1, 2, 3] && [1, 1, 2].distinct() == [1, 2] && [[1], [2]].flatten() == [1, 2]",
        "self.nums.slice(1, 3) == [2, 3] && lists.range(3) == [0, 1, 2] && [1, 2].reverse() == [2, 1]",
        "self.nums.sortBy(n, -n) == [4, 3, 2, 1] && self.words.sortBy(w, w) == ['a', 'b', 'c']",
        "'%s-%d'.format(['a', 1]) == 'a-1' && strings.quote('a') == '\"a\"'",
        "1 < 1.5 && 2.0 == 2 && int('3') == 3 && string(4) == '4' && double(1) == 1.0",
        "type(self.text) == string && type(self.nums) == list",
        "duration('1h') > duration('30m') && timestamp('2024-01-01T00:00:00Z') < timestamp('2025-01-01T00:00:00Z')",
    ];
    let rule_list: Vec<Json> = rules.iter().map(|r| json!({"rule": r})).collect();
    let spec = with_rules(spec, json!(rule_list));
    let errors = create(
        spec,
        json!({"nums": [1, 2, 3, 4], "words": ["b", "a", "c"], "text": "abc42def", "empty": []}),
    );
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn empty_list_min_is_an_error() {
    let spec = with_rules(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}),
        json!([{"rule": "self.l.min() > 0"}]),
    );
    assert_eq!(
        create(spec, json!({"l": []})),
        ["spec: Invalid value: \"object\": min called on empty list evaluating rule: self.l.min() > 0"]
    );
}

#[test]
fn property_names_are_escaped_as_in_kube() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "foo-bar": {"type": "string"},
            "namespace": {"type": "string"},
            "a.b/c": {"type": "string"},
            "x__y": {"type": "string"},
            "1st": {"type": "string"},
        }}),
        json!([{"rule": "self.foo__dash__bar == 'a' && self.__namespace__ == 'b' && self.a__dot__b__slash__c == 'c' \
                          && self.x__underscores__y == 'd' && size(self) == 4"}]),
    );
    assert!(create(
        spec,
        json!({"foo-bar": "a", "namespace": "b", "a.b/c": "c", "x__y": "d", "1st": "e"})
    )
    .is_empty());
    assert_eq!(values::escape("foo"), Some("foo".to_owned()));
    assert_eq!(values::escape("in"), Some("__in__".to_owned()));
    assert_eq!(values::escape("a b"), None);
    assert_eq!(values::escape("9a"), None);
}

#[test]
fn string_formats_become_cel_types() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "timeout": {"type": "string", "format": "duration"},
            "data": {"type": "string", "format": "byte"},
        }}),
        json!([
            {"rule": "self.start < self.end && self.end - self.start == duration('1h')"},
            {"rule": "self.day.getFullYear() == 2024"},
            {"rule": "self.timeout < duration('1h') && self.timeout > duration('1m')"},
            {"rule": "size(self.data) == 3 && type(self.data) == bytes"},
        ]),
    );
    let value = json!({
        "start": "2024-05-01T10:00:00Z", "end": "2024-05-01T11:00:00Z", "day": "2024-02-03",
        "timeout": "5m30s", "data": "YWJj",
    });
    assert!(create(spec, value).is_empty());
}

#[test]
fn embedded_resources_and_all_of() {
    let spec = json!({"type": "object",
        "properties": {
            "template": with_rules(
                json!({"type": "object", "x-kubernetes-embedded-resource": true,
                       "properties": {"replicas": {"type": "integer"}}}),
                json!([{"rule": "self.kind == 'Pod' && self.metadata.name == 'p'", "message": "must be pod p"}]),
            ),
            "n": {"type": "integer"},
        },
        "allOf": [{"x-kubernetes-validations": [{"rule": "self.n > 1", "message": "from allOf"}]}],
    });
    let spec_value = json!({"template": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}}, "n": 1});
    assert_eq!(
        create(spec, spec_value),
        [
            "spec: Invalid value: from allOf",
            "spec.template: Invalid value: must be pod p"
        ]
    );
}

#[test]
fn nulls_are_not_validated() {
    let spec = json!({"type": "object", "properties": {
        "a": with_rules(json!({"type": "string", "nullable": true}), json!([{"rule": "false"}])),
    }});
    assert!(create(spec, json!({"a": null})).is_empty());
}

#[test]
fn costs_match_kube() {
    // From kube's celcoststability_test.go.
    let vals = json!({"type": "object", "properties": {
        "val1": {"type": "string"}, "val6": {"type": "string"},
        "array": {"type": "array", "items": {"type": "integer"}},
        "i1": {"type": "integer"}, "i2": {"type": "integer"},
    }});
    let value =
        json!({"val1": "Rook takes 👑", "val6": "Rook takes 👑", "array": [1, 1, 2, 2, 3, 3, 4, 5], "i1": 1, "i2": 1});
    let expected = [
        ("self.i1 == self.i2", 5),
        ("type(self.i1) == int", 4),
        ("self.val1.startsWith('Rook')", 3),
        ("!self.val1.startsWith('knight')", 4),
        ("self.val1.matches('^[^0-9]*$')", 8),
        ("!self.val1.matches('^[0-9]*$')", 7),
        ("size(self.val1) == 12", 4),
        ("self.val1.charAt(3) == 'k'", 4),
        ("self.val1.indexOf('o') == 1", 4),
        ("self.val1.replace(' ', 'x') == 'Rookxtakesx👑'", 7),
        ("self.val1.split(' ') == ['Rook', 'takes', '👑']", 6),
        ("self.val1.substring(4, 10).trim() == 'takes'", 6),
        ("self.val1.upperAscii() == 'ROOK TAKES 👑'", 6),
        ("self.val1.lowerAscii() == self.val1.lowerAscii()", 10),
        ("2 in self.array", 10),
        ("self.array.all(e, e > 0)", 43),
        ("self.array.exists(e, e > 2)", 36),
        ("size(self.array) == 8", 4),
    ];
    for (rule, cost) in expected {
        assert_eq!(cost_of(&vals, &value, rule), cost, "{rule}");
    }
}

#[test]
fn go_number_rendering() {
    let cases = [
        (1.5, "1.5"),
        (100000.0, "100000"),
        (1000000.0, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (2.5e-7, "2.5e-07"),
        (-3.0, "-3"),
        (1e21, "1e+21"),
    ];
    for (f, text) in cases {
        assert_eq!(go_float(f), text);
    }
    assert_eq!(go_value(&json!("a\"b")), r#""a\"b""#);
    assert_eq!(go_value(&json!(7)), "7");
    assert_eq!(go_value(&json!({"a": "<"})), r#"{"a":"\u003c"}"#);
}

#[test]
fn rules_are_skipped_after_a_blocking_error_as_kube_does() {
    let schema = resource(with_rules(
        json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        json!([{"rule": "self.a > 0"}]),
    ));
    let obj = object(json!({"a": 0}));
    // A plain invalid value does not block: the rule runs.
    let invalid = [FieldError::invalid("spec.b", "x", "bad")];
    let ran = rendered(&validate_after(&schema, &obj, None, &invalid));
    assert!(ran.len() == 1 && ran[0].ends_with("failed rule: self.a > 0"), "{ran:?}");
    // A wrong type (or a missing, unsupported, too long or too many value) does.
    let blocking = [FieldError::type_invalid("spec.b", &json!(1), "must be a string")];
    assert_eq!(
        rendered(&validate_after(&schema, &obj, None, &blocking)),
        [
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; \
          correct the existing errors to complete validation"
        ]
    );
    // Without rules there is nothing to skip.
    let plain = resource(json!({"type": "object"}));
    assert!(validate_after(&plain, &obj, None, &blocking).is_empty());
}

#[test]
fn kube_quantity_library() {
    let spec = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let rules = [
        "isQuantity(self.q) && !isQuantity('lots') && !isQuantity('1.5.5') && !isQuantity('1Gb')",
        "quantity(self.q).isLessThan(quantity('1Gi')) && quantity('1Gi').isGreaterThan(quantity('1G'))",
        "quantity('1Gi').compareTo(quantity('1024Mi')) == 0 && quantity('1').compareTo(quantity('2')) == -1",
        "quantity('1000m') == quantity('1') && quantity('1') != quantity('2')",
        "quantity('1Ki').isInteger() && quantity('1Ki').asInteger() == 1024 && !quantity('1.5').isInteger()",
        "quantity('1.5').asApproximateFloat() == 1.5 && quantity('1k').asApproximateFloat() == 1000.0",
        "sign(quantity('-1')) == -1 && sign(quantity('0')) == 0 && sign(quantity('5n')) == 1",
        "quantity('1').add(quantity('500m')) == quantity('1.5') && quantity('1k').add(24) == quantity('1024')",
        "quantity('1Gi').sub(quantity('1Gi')) == quantity('0') && quantity('10').sub(3).asInteger() == 7",
        "type(quantity('1')) == type(quantity('2'))",
    ];
    let rule_list: Vec<Json> = rules.iter().map(|r| json!({"rule": r})).collect();
    let errors = create(with_rules(spec, json!(rule_list)), json!({"q": "512Mi"}));
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn quantity_errors_are_kubes() {
    let spec = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let spec = with_rules(
        spec,
        json!([{"rule": "quantity(self.q).isLessThan(quantity('1'))"}, {"rule": "quantity('1.5').asInteger() == 1"}]),
    );
    assert_eq!(
        create(spec, json!({"q": "lots"})),
        [
            "spec: Invalid value: \"object\": quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: quantity(self.q).isLessThan(quantity('1'))",
            "spec: Invalid value: \"object\": cannot convert value to integer evaluating rule: \
             quantity('1.5').asInteger() == 1",
        ]
    );
    // `sign` is a function in kube's library, not a method: the rule does not compile.
    let member = with_rules(
        json!({"type": "string"}),
        json!([{"rule": "quantity(self).sign() == 1"}]),
    );
    let errors = create(member, json!("1"));
    assert!(
        errors.len() == 1 && errors[0].contains("rule compile error"),
        "{errors:#?}"
    );
}

#[test]
fn quantity_parsing_costs_as_a_string_traversal() {
    let schema = json!({"type": "string"});
    let value = json!("12345678901Gi");
    // isQuantity's cost: ceil(0.1 * 13) = 2, plus `self`'s own 1.
    assert_eq!(cost_of(&schema, &value, "isQuantity(self)"), 3);
    // The methods cost 1: 1 (`self`) + 2 (`quantity`) + 1 (`isInteger`) + 1 (`!`). Too many digits for
    // apimachinery's int64 form, the quantity is no integer to kube.
    assert_eq!(cost_of(&schema, &value, "!quantity(self).isInteger()"), 5);
}
