//! API Priority and Fairness: kube's mandatory and suggested FlowSchemas and PriorityLevelConfigurations are made
//! at start and listed by kubectl; responses name their schema and level by uid; dangling schemas are marked;
//! the mandatory objects keep their spec and bad configurations are refused with kube's messages; and a user sent
//! to a level of one seat and one queue place waits there, then is refused 429 with Retry-After, while another
//! user's requests at another level are served. Requests that take their seat for seconds come from the hostile
//! plugin's looping Trial (its plugin call runs to its deadline).

use std::time::Duration;

use e2e::{flunder_v1beta1, wait_until, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

const TRIALS: &str = "/apis/hostile.example.com/v1/namespaces/default/trials";
const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SCHEMA_UID: &str = "x-kubernetes-pf-flowschema-uid";
const LEVEL_UID: &str = "x-kubernetes-pf-prioritylevel-uid";

const BOOTSTRAP_SCHEMAS: [&str; 11] = [
    "catch-all",
    "exempt",
    "global-default",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-system-service-accounts",
    "probes",
    "service-accounts",
    "system-leader-election",
    "system-node-high",
    "system-nodes",
];

fn uid(server: &Server, path: &str) -> String {
    server.http().get(path).expect(200)["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn header(reply: &reqwest::blocking::Response, name: &str) -> String {
    reply
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn the_bootstrap_configuration_is_served_and_responses_name_their_schema_and_level() {
    let server = Server::start(&["wardle"]);
    let mut expected: Vec<String> = BOOTSTRAP_SCHEMAS.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert!(
        wait_until(Duration::from_secs(30), || names(&server.kubectl_json(&[
            "get",
            "flowschemas",
            "-o",
            "json"
        ])) == expected),
        "the bootstrap FlowSchemas: {:?}",
        names(&server.kubectl_json(&["get", "flowschemas", "-o", "json"]))
    );
    let levels = names(&server.kubectl_json(&["get", "prioritylevelconfigurations", "-o", "json"]));
    assert_eq!(
        levels,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    // kubectl's table, with kube's columns.
    let table = server.kubectl_ok(&["get", "flowschemas"]);
    let header_line = table.lines().next().unwrap_or_default();
    for column in [
        "NAME",
        "PRIORITYLEVEL",
        "MATCHINGPRECEDENCE",
        "DISTINGUISHERMETHOD",
        "AGE",
        "MISSINGPL",
    ] {
        assert!(header_line.contains(column), "{table}");
    }
    let row = table
        .lines()
        .find(|l| l.starts_with("global-default "))
        .unwrap_or_default();
    assert!(
        row.contains("9900") && row.contains("ByUser") && row.ends_with("False"),
        "{table}"
    );
    let table = server.kubectl_ok(&["get", "prioritylevelconfigurations"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("workload-low "))
        .unwrap_or_default();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..6], ["Limited", "100", "128", "6", "50"], "{table}");

    // The administrator's requests (system:masters) go to the exempt schema; an authenticated user's to
    // global-default; each response names both by uid.
    let (exempt, global) = (
        uid(&server, &format!("{FLOW_SCHEMAS}/exempt")),
        uid(&server, &format!("{FLOW_SCHEMAS}/global-default")),
    );
    let global_level = uid(&server, &format!("{LEVELS}/global-default"));
    // (Once the stored objects, with their uids, are in force.)
    assert!(
        wait_until(Duration::from_secs(10), || {
            let admin = server
                .http()
                .client()
                .get(server.http().url(FLUNDERS_V1BETA1))
                .send()
                .unwrap();
            header(&admin, SCHEMA_UID) == exempt
        }),
        "the administrator's requests never named the exempt schema"
    );
    let bob = server.https_as("bob", &["dev"]);
    let mut reply = None;
    assert!(
        wait_until(Duration::from_secs(10), || {
            let r = bob.client().get(bob.url(FLUNDERS_V1BETA1)).send().unwrap();
            let named = header(&r, SCHEMA_UID) == global;
            reply = Some(r);
            named
        }),
        "bob's requests never named global-default"
    );
    let reply = reply.unwrap();
    assert_eq!(
        reply.status().as_u16(),
        403,
        "bob may not list flunders; the response names his flow all the same"
    );
    assert_eq!(header(&reply, LEVEL_UID), global_level);

    // A schema naming a level that does not exist is Dangling.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: orphan}
spec:
  priorityLevelConfiguration: {name: nowhere}
  rules:
  - subjects: [{kind: User, user: {name: nobody}}]
    nonResourceRules: [{verbs: [get], nonResourceURLs: [/version]}]
",
    );
    assert!(
        wait_until(Duration::from_secs(10), || {
            server
                .kubectl_ok(&["get", "flowschema", "orphan"])
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with("True"))
        }),
        "{}",
        server.kubectl_ok(&["get", "flowschema", "orphan", "-o", "yaml"])
    );
    let orphan = server.http().get(&format!("{FLOW_SCHEMAS}/orphan")).json;
    assert_eq!(orphan["spec"]["matchingPrecedence"], 1000, "defaulted");
    let dangling = &orphan["status"]["conditions"][0];
    assert_eq!(
        (dangling["type"].as_str(), dangling["reason"].as_str()),
        (Some("Dangling"), Some("NotFound"))
    );

    // The mandatory objects keep their spec; a bad configuration is refused with kube's message.
    let refused = server.kubectl_err(&[
        "patch",
        "flowschema",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"matchingPrecedence":9000}}"#,
    ]);
    assert!(
        refused.contains("spec of 'catch-all' must equal the fixed value"),
        "{refused}"
    );
    let refused = server.kubectl_stdin_err(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: wide}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {queues: 128, handSize: 10}}
",
    );
    assert!(
        refused.contains("required entropy bits of deckSize 128 and handSize 10 should not be greater than 60"),
        "{refused}"
    );
    assert!(server.metric("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"}") > 0.0);
}

#[test]
fn a_user_at_a_level_of_one_seat_queues_then_is_refused_while_another_users_requests_are_served() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        tokens.path(),
        "bob-token,bob,uid-bob,\"dev\"\nalice-token,alice,uid-alice,\"dev\"\n",
    )
    .unwrap();
    // 200 seats: the level of 1 share gets one (200 × 1 / 246, rounded up), and lends and borrows none.
    let server = Server::start_with_args(
        &["wardle", "hostile"],
        &[
            "--token-auth-file",
            tokens.path().to_str().unwrap(),
            "--max-requests-inflight",
            "100",
            "--max-mutating-requests-inflight",
            "100",
            "--plugin-call-timeout",
            "15000",
            // Plugin calls are not queued by the plugins' fair share (a slow call there would hold back alice's
            // wardle calls): the waiting measured is APF's.
            "--plugin-lanes",
            "0",
            // Requests wait in their queue up to a quarter of it.
            "--request-timeout",
            "120s",
        ],
    );
    server.grant("default", "edit", "dev");
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: trickle}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 1}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: bob-trickle}
spec:
  priorityLevelConfiguration: {name: trickle}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: bob}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*']}]
",
    );
    let trickle = uid(&server, &format!("{LEVELS}/trickle"));
    let https = server.https();
    let send = |token: &str, path: &str, body: &Value| {
        https
            .client()
            .post(https.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .unwrap()
    };
    // The configuration is in force once bob's requests name the level.
    assert!(
        wait_until(Duration::from_secs(10), || {
            let r = https
                .client()
                .get(https.url(FLUNDERS_V1BETA1))
                .bearer_auth("bob-token")
                .send()
                .unwrap();
            header(&r, LEVEL_UID) == trickle
        }),
        "bob's requests never went to trickle"
    );
    let series =
        |name: &str| format!("apiserver_flowcontrol_{name}{{flow_schema=\"bob-trickle\",priority_level=\"trickle\"}}");
    assert_eq!(
        server.metric("apiserver_flowcontrol_current_limit_seats{priority_level=\"trickle\"}"),
        1.0
    );
    std::thread::scope(|scope| {
        // Bob's slow create holds the level's only seat until its plugin call's deadline.
        let slow = scope.spawn(|| {
            let trial = json!({
                "apiVersion": "hostile.example.com/v1", "kind": "Trial",
                "metadata": {"name": "slow", "namespace": "default"}, "spec": {"mode": "loop"},
            });
            send("bob-token", TRIALS, &trial).status().as_u16()
        });
        assert!(
            wait_until(Duration::from_secs(10), || server
                .metric(&series("current_executing_requests"))
                >= 1.0),
            "the slow create never took the seat"
        );
        // His next request waits in the level's one queue place...
        let queued = scope.spawn(|| {
            send("bob-token", FLUNDERS_V1BETA1, &flunder_v1beta1("queued", "x"))
                .status()
                .as_u16()
        });
        assert!(
            wait_until(Duration::from_secs(10), || server
                .metric(&series("current_inqueue_requests"))
                >= 1.0),
            "the second create never queued"
        );
        // ... and the one after is refused at once: the queue is full.
        let refused = send("bob-token", FLUNDERS_V1BETA1, &flunder_v1beta1("refused", "x"));
        assert_eq!(refused.status().as_u16(), 429);
        assert_eq!(header(&refused, LEVEL_UID), trickle);
        assert_eq!(header(&refused, "retry-after"), "1");
        let status: Value = refused.json().unwrap();
        assert_eq!(
            (status["reason"].as_str(), status["message"].as_str()),
            (
                Some("TooManyRequests"),
                Some("Too many requests, please try again later.")
            )
        );
        // Alice, at global-default, is served meanwhile.
        let alice = send("alice-token", FLUNDERS_V1BETA1, &flunder_v1beta1("by-alice", "x"));
        let alice_schema = header(&alice, SCHEMA_UID);
        assert_eq!(alice.status().as_u16(), 201, "{}", alice.text().unwrap_or_default());
        assert_eq!(alice_schema, uid(&server, &format!("{FLOW_SCHEMAS}/global-default")));
        assert!(
            server.metric(&series("current_executing_requests")) >= 1.0,
            "alice was served while bob's slow create held his level's seat"
        );
        // The queued create is served once the slow one gives its seat back at its deadline.
        assert_eq!(slow.join().unwrap(), 504, "the slow create ends at its plugin deadline");
        assert_eq!(queued.join().unwrap(), 201, "the queued create was served");
    });
    let rejected = "apiserver_flowcontrol_rejected_requests_total\
        {flow_schema=\"bob-trickle\",priority_level=\"trickle\",reason=\"queue-full\"}";
    assert_eq!(server.metric(rejected), 1.0);
    assert!(
        server.metric(&series("dispatched_requests_total")) >= 3.0,
        "the probe, the slow and the queued creates"
    );
    assert_eq!(
        server.metric(&series("current_executing_requests")),
        0.0,
        "every seat came back"
    );
}
