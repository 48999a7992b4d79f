//! Tests of [`super`], most cases taken from Kubernetes' own `pkg/labels/selector_test.go`.

use super::*;
use serde_json::json;

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn req(key: &str, operator: Operator, values: &[&str]) -> Requirement {
    Requirement::new(key, operator, values.iter().map(|v| v.to_string()).collect())
        .unwrap_or_else(|e| panic!("requirement {key}: {e}"))
}

fn parse(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn parse_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(selector) => panic!("{s:?} parsed as {selector:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_selectors_restring_without_spaces() {
    for good in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ] {
        assert_eq!(parse(good).to_string(), good.replace(' ', ""), "{good:?}");
    }
}

#[test]
fn bad_selectors_are_rejected() {
    for bad in [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        "x,,y",
        ",x,y",
        "x nott in (y)",
        "a in (xyz),",
        "a in (xyz)b notin ()",
    ] {
        parse_err(bad);
    }
    for bad in [
        "a in (xyz abc)",
        "a notin(",
        "a (",
        "(",
        "x in (a",
        "x in a",
        "x=(",
        "x>",
        "=x",
        "x in (a,=)",
        "!",
    ] {
        parse_err(bad);
    }
}

#[test]
fn parse_is_deterministic() {
    assert_eq!(parse("x=a,a=x").to_string(), parse("a=x,x=a").to_string());
    assert_eq!(parse("x=a,a=x").to_string(), "a=x,x=a");
}

#[test]
fn set_based_parsing_matches_kubernetes() {
    let cases: &[(&str, Vec<Requirement>)] = &[
        ("", vec![]),
        ("\rx", vec![req("x", Operator::Exists, &[])]),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            vec![req("this-is-a-dns.domain.com/key-with-dash", Operator::Exists, &[])],
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            vec![req(
                "this-is-another-dns.domain.com/key-with-dash",
                Operator::In,
                &["so", "what"],
            )],
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            vec![req(
                "0.1.2.domain/99",
                Operator::NotIn,
                &["10.10.100.1", "tick.tack.clock"],
            )],
        ),
        ("foo  in\t (abc)", vec![req("foo", Operator::In, &["abc"])]),
        ("x notin\n (abc)", vec![req("x", Operator::NotIn, &["abc"])]),
        (
            "x  notin\t\t\t(abc,def)",
            vec![req("x", Operator::NotIn, &["abc", "def"])],
        ),
        ("x in (abc,def)", vec![req("x", Operator::In, &["abc", "def"])]),
        ("x in (abc,)", vec![req("x", Operator::In, &["", "abc"])]),
        ("x in (abc,abc)", vec![req("x", Operator::In, &["abc"])]),
        ("x in ()", vec![req("x", Operator::In, &[""])]),
        ("x in (a,,)", vec![req("x", Operator::In, &["", "a"])]),
        ("x in (a,,,)", vec![req("x", Operator::In, &["", "a"])]),
        ("x in (a,,,,,,)", vec![req("x", Operator::In, &["", "a"])]),
        ("x in (a,,a,,a,,a,,)", vec![req("x", Operator::In, &["", "a"])]),
        (
            "x notin (abc,,def),bar,z in (),w",
            vec![
                req("bar", Operator::Exists, &[]),
                req("w", Operator::Exists, &[]),
                req("x", Operator::NotIn, &["", "abc", "def"]),
                req("z", Operator::In, &[""]),
            ],
        ),
        (
            "x,y in (a)",
            vec![req("x", Operator::Exists, &[]), req("y", Operator::In, &["a"])],
        ),
        ("x=a", vec![req("x", Operator::Equals, &["a"])]),
        ("x>1", vec![req("x", Operator::GreaterThan, &["1"])]),
        ("x<7", vec![req("x", Operator::LessThan, &["7"])]),
        (
            "x=a,y!=b",
            vec![
                req("x", Operator::Equals, &["a"]),
                req("y", Operator::NotEquals, &["b"]),
            ],
        ),
        (
            "x=a,y!=b,z in (h,i,j)",
            vec![
                req("x", Operator::Equals, &["a"]),
                req("y", Operator::NotEquals, &["b"]),
                req("z", Operator::In, &["h", "i", "j"]),
            ],
        ),
        ("x notin ( )", vec![req("x", Operator::NotIn, &[""])]),
        ("x notin (, a)", vec![req("x", Operator::NotIn, &["", "a"])]),
        ("a ", vec![req("a", Operator::Exists, &[])]),
        (
            "a in (x,y,notin, z,in)",
            vec![req("a", Operator::In, &["in", "notin", "x", "y", "z"])],
        ),
        ("notin=in", vec![req("notin", Operator::Equals, &["in"])]),
        ("in in (in)", vec![req("in", Operator::In, &["in"])]),
        ("x==a", vec![req("x", Operator::DoubleEquals, &["a"])]),
        ("x= in", vec![req("x", Operator::Equals, &["in"])]),
        (
            "!x,x",
            vec![req("x", Operator::DoesNotExist, &[]), req("x", Operator::Exists, &[])],
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(parse(input).requirements(), expected.as_slice(), "{input:?}");
    }
}

#[test]
fn parse_errors_have_kubernetes_text() {
    let cases = [
        ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!x", "unable to parse requirement: found '!', expected: identifier"),
        ("a_", "unable to parse requirement: <nil>: Invalid value: \"a_\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ];
    for (input, message) in cases {
        assert_eq!(parse_err(input), message, "{input:?}");
    }
}

#[test]
fn several_requirement_errors_are_aggregated() {
    let err = parse_err("x>a_");
    assert!(err.starts_with("unable to parse requirement: [values[0]: Invalid value: \"a_\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"a_\": a valid label"), "{err}");
    assert!(err.ends_with("')]"), "{err}");
    let long_key = "a".repeat(254);
    let err = Requirement::new(long_key.clone(), Operator::Exists, vec![]).unwrap_err();
    assert!(err.message().starts_with(&format!(
        "key: Invalid value: \"{long_key}\": name part must be no more than 63 bytes"
    )));
}

#[test]
fn requirement_constructor_checks_like_kubernetes() {
    let s = |v: &[&str]| v.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    let cases: Vec<(&str, Operator, Vec<String>, Option<&str>)> = vec![
        (
            "x1",
            Operator::In,
            s(&[]),
            Some("values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
        ),
        (
            "x2",
            Operator::NotIn,
            s(&[]),
            Some("values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
        ),
        ("x3", Operator::In, s(&["foo"]), None),
        ("x4", Operator::NotIn, s(&["foo"]), None),
        (
            "x5",
            Operator::Equals,
            s(&["bar", "foo"]),
            Some("values: Invalid value: [\"bar\",\"foo\"]: exact-match compatibility requires one single value"),
        ),
        ("x6", Operator::Exists, s(&[]), None),
        ("x7", Operator::DoesNotExist, s(&[]), None),
        (
            "x8",
            Operator::Exists,
            s(&["foo"]),
            Some("values: Invalid value: [\"foo\"]: values set must be empty for exists and does not exist"),
        ),
        ("x11", Operator::GreaterThan, s(&["1"]), None),
        ("x12", Operator::LessThan, s(&["6"]), None),
        (
            "x13",
            Operator::GreaterThan,
            s(&[]),
            Some("values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required"),
        ),
        (
            "x14",
            Operator::GreaterThan,
            s(&["bar"]),
            Some("values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ),
        (
            "x15",
            Operator::LessThan,
            s(&["bar"]),
            Some("values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ),
        (
            "x16",
            Operator::Equals,
            s(&[&"a".repeat(254)]),
            Some("values[0][x16]: Invalid value: "),
        ),
        (
            "x17",
            Operator::Equals,
            s(&["a b"]),
            Some("values[0][x17]: Invalid value: \"a b\": a valid label must be"),
        ),
        (
            "x18",
            Operator::LessThan,
            s(&["-5"]),
            Some("values[0][x18]: Invalid value: \"-5\": a valid label must be"),
        ),
        (
            "x19",
            Operator::GreaterThan,
            s(&["99999999999999999999"]),
            Some("values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators"),
        ),
    ];
    for (key, operator, values, error) in cases {
        match (Requirement::new(key, operator, values), error) {
            (Ok(_), None) => {}
            (Err(e), Some(prefix)) => assert!(e.message().starts_with(prefix), "{key}: {e}"),
            (result, _) => panic!("{key}: unexpected {result:?}"),
        }
    }
}

#[test]
fn requirements_render_canonically() {
    let selector = |reqs: Vec<Requirement>| LabelSelector::from_requirements(reqs).to_string();
    assert_eq!(
        selector(vec![
            req("x", Operator::In, &["def", "abc"]),
            req("y", Operator::NotIn, &["jkl"]),
            req("z", Operator::Exists, &[]),
        ]),
        "x in (abc,def),y notin (jkl),z"
    );
    assert_eq!(
        selector(vec![
            req("x", Operator::NotIn, &["abc", "def"]),
            req("y", Operator::NotEquals, &["jkl"]),
            req("z", Operator::DoesNotExist, &[]),
        ]),
        "x notin (abc,def),y!=jkl,!z"
    );
    assert_eq!(
        selector(vec![
            req("x", Operator::NotIn, &["abc"]),
            req("y", Operator::In, &["jkl", "mno"]),
            req("z", Operator::NotIn, &[""]),
        ]),
        "x notin (abc),y in (jkl,mno),z notin ()"
    );
    assert_eq!(
        selector(vec![
            req("x", Operator::Equals, &["abc"]),
            req("y", Operator::DoubleEquals, &["jkl"]),
            req("z", Operator::NotEquals, &["a"]),
            req("z", Operator::Exists, &[]),
        ]),
        "x=abc,y==jkl,z!=a,z"
    );
    assert_eq!(
        selector(vec![
            req("x", Operator::GreaterThan, &["2"]),
            req("y", Operator::LessThan, &["8"])
        ]),
        "x>2,y<8"
    );
    assert_eq!(parse(" x in ( b , a ) , ! y ").to_string(), "x in (a,b),!y");
}

#[test]
fn matching_follows_kubernetes_semantics() {
    let yes = |s: &str, labels: &[(&str, &str)]| assert!(parse(s).matches(&set(labels)), "{s} should match {labels:?}");
    let no =
        |s: &str, labels: &[(&str, &str)]| assert!(!parse(s).matches(&set(labels)), "{s} should not match {labels:?}");
    yes("", &[("x", "y")]);
    yes("x=y", &[("x", "y")]);
    yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
    yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
    yes("notin=in", &[("notin", "in")]);
    yes("x", &[("x", "z")]);
    yes("!x", &[("y", "z")]);
    yes("x>1", &[("x", "2")]);
    yes("x<1", &[("x", "0")]);
    no("x=z", &[]);
    no("x=y", &[("x", "z")]);
    no("x=y,z=w", &[("x", "w"), ("z", "w")]);
    no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
    no("x", &[("y", "z")]);
    no("!x", &[("x", "z")]);
    no("x>1", &[("x", "0")]);
    no("x<1", &[("x", "2")]);
    no("x>1", &[("x", "1")]);

    // != and notin match objects without the label; gt and lt need an integer label.
    yes("x!=a", &[]);
    yes("x notin (a,b)", &[("y", "a")]);
    no("x notin (a,b)", &[("x", "b")]);
    yes("x in (a,b)", &[("x", "b")]);
    no("x in (a,b)", &[]);
    no("z>1", &[("z", "v2")]);
    no("z>1", &[]);
    no("z<1", &[("z", "")]);
    yes("x notin ()", &[("y", "")]);
    no("x in ()", &[("y", "baz")]);
    yes("x in ()", &[("x", "")]);
    yes("x=", &[("x", "")]);
    no("x=", &[]);

    let labels = set(&[("foo", "bar"), ("baz", "blah")]);
    assert!(parse("foo=bar,baz=blah").matches(&labels));
    assert!(!parse("foo=bar,foobar=bar,baz=blah").matches(&labels));
    let hash: HashMap<String, String> = labels.clone().into_iter().collect();
    assert!(parse("foo==bar").matches(&hash));
    let json_labels = json!({"foo": "bar", "n": 7});
    let map = json_labels.as_object().expect("object");
    assert!(parse("foo=bar,!n").matches(map), "non-string values count as absent");
}

#[test]
fn empty_everything_and_nothing() {
    assert!(LabelSelector::everything().is_empty());
    assert!(LabelSelector::everything().matches(&set(&[("x", "y")])));
    assert!(parse("").is_empty());
    assert!(parse("  ").is_empty());
    assert!(!parse("x").is_empty());
    let nothing = LabelSelector::nothing();
    assert!(!nothing.is_empty() && nothing.matches_nothing());
    assert!(!nothing.matches(&set(&[])));
    assert_eq!(nothing.to_string(), "");
}

#[test]
fn lexer_sequences() {
    use super::parser::Token::{self, *};
    let cases: &[(&str, &[Token])] = &[
        ("key in ( value )", &[Identifier, In, OpenPar, Identifier, ClosedPar]),
        (
            "key notin ( value )",
            &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
        ),
        (
            "key in ( value1, value2 )",
            &[Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar],
        ),
        ("key", &[Identifier]),
        ("!key", &[DoesNotExist, Identifier]),
        ("()", &[OpenPar, ClosedPar]),
        ("x in (),y", &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier]),
        (
            "== != (), = notin",
            &[DoubleEquals, NotEquals, OpenPar, ClosedPar, Comma, Equals, NotIn],
        ),
        ("key>2", &[Identifier, GreaterThan, Identifier]),
        ("key<1", &[Identifier, LessThan, Identifier]),
        ("~", &[Identifier]),
        ("||", &[Identifier]),
        ("!==", &[NotEquals, Equals]),
        ("a\0b", &[Identifier, Identifier]),
        ("a \0b", &[Identifier]),
    ];
    for (input, expected) in cases {
        let tokens: Vec<Token> = lex(input).into_iter().map(|(t, _)| t).collect();
        assert_eq!(tokens.last(), Some(&EndOfString), "{input:?}");
        assert_eq!(&tokens[..tokens.len() - 1], *expected, "{input:?}");
    }
}

#[test]
fn exact_match_introspection() {
    let selector = parse("a=1,b in (2),c in (3,4),d!=5");
    assert_eq!(selector.requires_exact_match("a"), Some("1"));
    assert_eq!(selector.requires_exact_match("b"), Some("2"));
    assert_eq!(selector.requires_exact_match("c"), None);
    assert_eq!(selector.requires_exact_match("d"), None);
    assert_eq!(selector.requires_exact_match("e"), None);
    let parsed: LabelSelector = "a=1".parse().expect("parses");
    assert_eq!(parsed.requirements()[0].operator().as_str(), "=");
}

#[test]
fn structured_selectors() {
    let selector = LabelSelector::from_json(&json!({
        "matchLabels": {"app": "web", "tier": "front"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "app", "operator": "Exists", "values": null},
            {"key": "zone", "operator": "NotIn", "values": ["b", "a"]}
        ]
    }))
    .expect("valid");
    assert_eq!(
        selector.to_string(),
        "app=web,app,!canary,env in (prod,staging),tier=front,zone notin (a,b)"
    );
    assert_eq!(
        selector.requirements()[5].values(),
        ["b", "a"],
        "values keep their order"
    );
    assert!(selector.matches(&set(&[("app", "web"), ("tier", "front"), ("env", "prod")])));
    assert!(!selector.matches(&set(&[("app", "web"), ("tier", "front"), ("env", "dev")])));

    assert!(LabelSelector::from_json(&json!({})).expect("empty").is_empty());
    assert!(
        LabelSelector::from_json(&json!({"matchLabels": {}, "matchExpressions": []}))
            .expect("empty")
            .is_empty()
    );
    assert!(LabelSelector::from_json(&Value::Null).expect("null").matches_nothing());

    let err = |v: Value| LabelSelector::from_json(&v).unwrap_err().to_string();
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]})),
        "\"Equals\" is not a valid label selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
        "values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist"
    );
    assert!(err(json!({"matchLabels": {"a_": "b"}})).starts_with("key: Invalid value: \"a_\": name part must"));
    assert!(err(json!({"matchLabels": {"a": "b c"}})).starts_with("values[0][a]: Invalid value: \"b c\""));
    assert_eq!(err(json!({"matchLabels": {"a": 1}})), "matchLabels[a] must be a string");
    assert_eq!(err(json!({"matchLabels": []})), "matchLabels must be an object");
    assert_eq!(
        err(json!({"matchExpressions": {}})),
        "matchExpressions must be an array"
    );
    assert_eq!(
        err(json!({"matchExpressions": [1]})),
        "matchExpressions[0] must be an object"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": 1}]})),
        "matchExpressions[0].key must be a string"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})),
        "matchExpressions[0].values must be an array of strings"
    );
    assert_eq!(err(json!("x=y")), "a label selector must be a JSON object");
}
