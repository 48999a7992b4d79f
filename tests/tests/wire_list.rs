//! Lists written from the stored bytes against the parsed path, through the real server: a plain
//! JSON list is written from the cached objects' JSON with their resourceVersion spliced in, while `?pretty=true`
//! and a label selector still parse and serialize each object. For the same objects both must carry the same JSON,
//! and the wire list must be exactly its compact serialization (keys in byte order, as the parsed path writes).

use e2e::{
    create_escaped_flunders, fischer_v1alpha1, plain_equals_pretty, Server, FISCHERS_V1ALPHA1, FLUNDERS_V1ALPHA1,
    FLUNDERS_V1BETA1,
};
use serde_json::Value;

/// Lists `path` (with its query) plainly, with `pretty=true` and with a label selector every object matches;
/// asserts they agree and that the plain one is the compact serialization; returns the list.
fn same_everywhere(server: &Server, path: &str) -> Value {
    let plain = plain_equals_pretty(server, path);
    let join = if path.contains('?') { '&' } else { '?' };
    // A selector no object fails to match goes the parsed way too (pages aside: a selective page has no
    // remainingItemCount).
    if !path.contains("limit=") {
        let selected = server.http().get(&format!("{path}{join}labelSelector=!nothing"));
        assert_eq!(
            plain,
            *selected.expect(200),
            "{path}: the plain and the selected list differ"
        );
    }
    plain
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn plain_json_lists_equal_the_parsed_lists() {
    let server = Server::start(&["wardle"]);
    // A list's resourceVersion is the store's revision: the priority and fairness controller's start-up writes
    // must be done before two answers are compared.
    server.wait_for_flowcontrol_bootstrap();
    // Empty lists first.
    for path in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1, FISCHERS_V1ALPHA1] {
        assert_eq!(names(&same_everywhere(&server, path)), Vec::<&str>::new());
    }
    // Flunders with and without labels and annotations (some escaped in JSON), one created by an apply.
    create_escaped_flunders(&server, 5);
    server
        .http()
        .post_json(FISCHERS_V1ALPHA1, &fischer_v1alpha1("fish", &["nope"]))
        .expect(201);

    let all = ["applied", "f0", "f1", "f2", "f3", "f4"];
    for collection in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1] {
        for query in [
            "",
            "?resourceVersion=0",
            "?resourceVersion=0&resourceVersionMatch=NotOlderThan",
        ] {
            let list = same_everywhere(&server, &format!("{collection}{query}"));
            assert_eq!(names(&list), all);
            assert!(list["items"][0]["metadata"]["managedFields"].is_array(), "{list}");
            assert!(list["items"][0]["metadata"]["resourceVersion"].is_string(), "{list}");
        }
        // Pages of two, followed to the end.
        let mut path = format!("{collection}?limit=2");
        let mut listed = Vec::new();
        loop {
            let page = same_everywhere(&server, &path);
            listed.extend(names(&page).into_iter().map(str::to_owned));
            match page["metadata"]["continue"].as_str() {
                Some(token) => path = format!("{collection}?limit=2&continue={token}"),
                None => break,
            }
        }
        assert_eq!(listed, all);
    }
    // Every namespace, another (empty) namespace, and a cluster-scoped resource.
    let everywhere = same_everywhere(&server, "/apis/wardle.example.com/v1alpha1/flunders");
    assert_eq!(names(&everywhere), all);
    let elsewhere = same_everywhere(&server, "/apis/wardle.example.com/v1alpha1/namespaces/nobody/flunders");
    assert_eq!(names(&elsewhere), Vec::<&str>::new());
    assert_eq!(names(&same_everywhere(&server, FISCHERS_V1ALPHA1)), ["fish"]);
}
