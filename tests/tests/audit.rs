//! The audit log: audit.k8s.io/v1 events for allowed and refused requests as the policy says, with user, verb,
//! resource, code and the authorization decision; level None writes nothing; watches log ResponseStarted and then
//! ResponseComplete.

use std::time::Duration;

use e2e::{fischer_v1alpha1, flunder_v1beta1, wait_until, Server, FLUNDERS_V1BETA1};
use serde_json::Value;

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: [quiet]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/metrics"]
- level: RequestResponse
  resources:
  - group: wardle.example.com
    resources: [fischers]
- level: Metadata
"#;

/// A server auditing with [`POLICY`] into a log in `dir`.
fn start(dir: &tempfile::TempDir) -> Server {
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    Server::start_with_args(
        &["wardle"],
        &[
            "--audit-log-path",
            log_path(dir).to_str().unwrap(),
            "--audit-policy-file",
            policy.to_str().unwrap(),
        ],
    )
}

fn log_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("audit").join("audit.log")
}

/// The events of the audit log so far.
fn events(dir: &tempfile::TempDir) -> Vec<Value> {
    std::fs::read_to_string(log_path(dir))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every audit line is JSON"))
        .collect()
}

/// Waits until the events of a request (by audit id) include `stage`, and returns them.
fn events_of(dir: &tempfile::TempDir, audit_id: &str, stage: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let ok = wait_until(Duration::from_secs(10), || {
        found = events(dir).into_iter().filter(|e| e["auditID"] == audit_id).collect();
        found.iter().any(|e| e["stage"] == stage)
    });
    assert!(ok, "no {stage} event for {audit_id}: {found:?}");
    found
}

fn audit_id(reply: &reqwest::blocking::Response) -> String {
    reply.headers()["audit-id"].to_str().unwrap().to_owned()
}

#[test]
fn audit_events_record_allowed_and_refused_requests_with_user_verb_resource_and_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir);
    let admin = server.https_as("alice", &["system:masters"]);
    let reply = admin
        .client()
        .post(admin.url(FLUNDERS_V1BETA1))
        .json(&flunder_v1beta1("audited", "x"))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let id = audit_id(&reply);
    let events = events_of(&dir, &id, "ResponseComplete");
    let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);
    let done = &events[1];
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["verb"], "create");
    assert_eq!(done["user"]["username"], "alice");
    assert_eq!(done["objectRef"]["resource"], "flunders");
    assert_eq!(done["objectRef"]["namespace"], "default");
    assert_eq!(done["objectRef"]["apiGroup"], "wardle.example.com");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(done["requestURI"], FLUNDERS_V1BETA1);
    assert_eq!(done["sourceIPs"][0], "127.0.0.1");
    assert_eq!(done["annotations"]["authorization.k8s.io/decision"], "allow");
    assert!(done.get("requestObject").is_none(), "Metadata logs no bodies");
    assert!(done["stageTimestamp"].as_str().unwrap().ends_with('Z'));

    // A user without a binding: 403, logged with the decision.
    let bob = server.https_as("bob", &["dev"]);
    let reply = bob.client().get(bob.url(FLUNDERS_V1BETA1)).send().unwrap();
    assert_eq!(reply.status().as_u16(), 403);
    let events = events_of(&dir, &audit_id(&reply), "ResponseComplete");
    let done = events.last().unwrap();
    assert_eq!(done["user"]["username"], "bob");
    assert_eq!(done["verb"], "list");
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert_eq!(done["annotations"]["authorization.k8s.io/decision"], "forbid");

    // A wrong token: 401, logged at ResponseStarted without a user, as kube does.
    let https = server.https();
    let reply = https
        .client()
        .get(https.url(FLUNDERS_V1BETA1))
        .bearer_auth("wrong")
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 401);
    let events = events_of(&dir, &audit_id(&reply), "ResponseStarted");
    assert_eq!(events[0]["responseStatus"]["code"], 401);
    assert_eq!(events[0]["user"]["username"], "");

    // RequestResponse for fischers: the request and response bodies.
    let reply = admin
        .client()
        .post(admin.url("/apis/wardle.example.com/v1alpha1/fischers"))
        .json(&fischer_v1alpha1("audited", &["bad"]))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let events = events_of(&dir, &audit_id(&reply), "ResponseComplete");
    let done = events.last().unwrap();
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["requestObject"]["metadata"]["name"], "audited");
    assert_eq!(done["responseObject"]["kind"], "Fischer");
    assert!(done["responseObject"]["metadata"]["uid"].is_string());
}

#[test]
fn audit_level_none_writes_nothing_and_watches_log_started_then_complete() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir);
    // Level None: the quiet user's requests leave no line.
    let quiet = server.https_as("quiet", &["system:masters"]);
    let reply = quiet.client().get(quiet.url(FLUNDERS_V1BETA1)).send().unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    let quiet_id = audit_id(&reply);
    // A watch that ends after a second, by another user.
    let admin = server.https_as("alice", &["system:masters"]);
    let reply = admin
        .client()
        .get(admin.url(&format!("{FLUNDERS_V1BETA1}?watch=1&timeoutSeconds=1")))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    let watch_id = audit_id(&reply);
    let _ = reply.bytes();
    let watch_events = events_of(&dir, &watch_id, "ResponseComplete");
    let stages: Vec<&str> = watch_events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
    assert_eq!(watch_events[2]["verb"], "watch");
    // By now the quiet request, served before the watch, would have been written.
    let all = events(&dir);
    assert!(
        all.iter().all(|e| e["auditID"] != quiet_id.as_str()),
        "level None wrote an event"
    );
    assert!(all.iter().all(|e| e["user"]["username"] != "quiet"));
    assert!(all.iter().all(|e| e["requestURI"] != "/healthz"));
}

/// A ValidatingAdmissionPolicy bound with the Audit action, and with `auditAnnotations`: its failed validation and
/// its annotation are in the write's audit events (kube's keys and JSON), and the write is admitted.
#[test]
fn a_policy_with_the_audit_action_annotates_the_writes_audit_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir);
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: short-names.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [CREATE]}
  validations:
  - {expression: \"size(object.metadata.name) <= 8\", message: names of flunders should be short}
  auditAnnotations:
  - {key: name-length, valueExpression: \"string(size(object.metadata.name))\"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: short-names-audit}
spec:
  policyName: short-names.example.com
  validationActions: [Audit]
",
    );
    let admin = server.https_as("alice", &["system:masters"]);
    let create = |name: &str| {
        admin
            .client()
            .post(admin.url(FLUNDERS_V1BETA1))
            .json(&flunder_v1beta1(name, "x"))
            .send()
            .unwrap()
    };
    // The policy applies once the server's admission configuration has it (within a second).
    let mut attempt = 0;
    let mut annotations = Value::Null;
    let applied = wait_until(Duration::from_secs(20), || {
        attempt += 1;
        let reply = create(&format!("a-rather-long-name-{attempt:02}"));
        assert_eq!(reply.status().as_u16(), 201, "Audit alone admits the write");
        let events = events_of(&dir, &audit_id(&reply), "ResponseComplete");
        annotations = events.last().unwrap()["annotations"].clone();
        annotations.get("short-names.example.com/name-length").is_some()
    });
    assert!(applied, "the policy never annotated a write: {annotations}");
    assert_eq!(
        annotations["short-names.example.com/name-length"], "21",
        "{annotations}"
    );
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation_failure annotation: {annotations}")),
    )
    .unwrap();
    assert_eq!(
        failure,
        serde_json::json!([{"message": "names of flunders should be short", "policy": "short-names.example.com",
            "binding": "short-names-audit", "expressionIndex": 0, "validationActions": ["Audit"]}])
    );
    // A short name passes: its annotation, and no failure.
    let reply = create("short");
    assert_eq!(reply.status().as_u16(), 201);
    let events = events_of(&dir, &audit_id(&reply), "ResponseComplete");
    let annotations = &events.last().unwrap()["annotations"];
    assert_eq!(annotations["short-names.example.com/name-length"], "5", "{annotations}");
    assert!(annotations
        .get("validation.policy.admission.k8s.io/validation_failure")
        .is_none());
}
