//! The cluster's admission policies on plugin resources: a real HTTPS webhook server (e2e's `WebhookServer`)
//! registered with Mutating- and ValidatingWebhookConfigurations mutates and denies flunders by its rules,
//! selectors and match conditions; failure policies Fail and Ignore with the webhook down; ValidatingAdmissionPolicies
//! deny with their message, warn, and read parameters; and, with `--kubeconfig`, a webhook registered in a real
//! kube-apiserver 1.37 applies to the flunders of the server beside it. Driven with kubectl.

use std::time::Duration;

use e2e::{kube_apiserver_binary, wait_until, Etcd, KubeApiserver, KubectlAt, Server, Verdict, WebhookServer};
use serde_json::{json, Value};

const FLUNDER: &str = "apiVersion: wardle.example.com/VERSION
kind: Flunder
metadata: {name: THE_NAME, namespace: THE_NAMESPACE}
spec: {}
";

fn flunder(version: &str, name: &str, namespace: &str) -> String {
    FLUNDER
        .replace("VERSION", version)
        .replace("THE_NAMESPACE", namespace)
        .replace("THE_NAME", name)
}

/// The webhook's rules: names starting with `bad` are denied at /validate; /mutate labels every flunder.
fn handler(path: &str, request: &Value) -> Verdict {
    let name = request
        .pointer("/object/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match path {
        "/mutate" => {
            let has_labels = request.pointer("/object/metadata/labels").is_some();
            let patch = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated-by", "value": "webhook"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated-by": "webhook"}}])
            };
            Verdict::Patch(patch, vec![format!("flunder {name} was labelled")])
        }
        "/validate" if name.starts_with("bad") => Verdict::Deny(format!("the name {name} is refused"), 403),
        _ => Verdict::Allow(Vec::new()),
    }
}

fn webhook_configurations(webhook: &WebhookServer) -> String {
    let ca = webhook.ca_bundle();
    let url = &webhook.url;
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: label-flunders}}
webhooks:
- name: label.flunders.example.com
  clientConfig: {{url: \"{url}/mutate\", caBundle: \"{ca}\"}}
  rules:
  - {{apiGroups: [wardle.example.com], apiVersions: [v1beta1], resources: [flunders], operations: [CREATE]}}
  sideEffects: None
  admissionReviewVersions: [v1]
  namespaceSelector:
    matchLabels: {{webhooks: enabled}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: deny-flunders}}
webhooks:
- name: deny.flunders.example.com
  clientConfig: {{url: \"{url}/validate\", caBundle: \"{ca}\"}}
  rules:
  - {{apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [CREATE, UPDATE]}}
  sideEffects: None
  admissionReviewVersions: [v1, v1beta1]
  matchConditions:
  - {{name: not-excused, expression: \"!object.metadata.name.endsWith('-excused')\"}}
"
    )
}

#[test]
fn webhooks_mutate_and_deny_flunders_by_their_rules_selectors_and_conditions() {
    let webhook = WebhookServer::start(handler);
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "hooked"]);
    server.kubectl_ok(&["label", "namespace", "hooked", "webhooks=enabled"]);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &webhook_configurations(&webhook));

    // Defaulted as kube does, and listed by kubectl.
    let config = server.kubectl_json(&["get", "validatingwebhookconfiguration", "deny-flunders", "-o", "json"]);
    assert_eq!(config["webhooks"][0]["failurePolicy"], "Fail");
    assert_eq!(config["webhooks"][0]["matchPolicy"], "Equivalent");
    assert_eq!(config["webhooks"][0]["timeoutSeconds"], 10);
    let listed = server.kubectl_ok(&["get", "mutatingwebhookconfigurations"]);
    assert!(listed.contains("label-flunders"), "{listed}");

    // Denied by the validating webhook, with kube's message and the webhook's code.
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1alpha1", "bad-one", "default"));
    assert!(
        err.contains(
            r#"admission webhook "deny.flunders.example.com" denied the request: the name bad-one is refused"#
        ),
        "{err}"
    );
    // A match condition excuses it: the webhook is not called.
    let before = webhook.received("/validate").len();
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &flunder("v1alpha1", "bad-but-excused", "default"),
    );
    assert_eq!(webhook.received("/validate").len(), before);

    // Mutated only in the labelled namespace (namespaceSelector); the webhook's rule names v1beta1 and a v1alpha1
    // create reaches it converted (matchPolicy Equivalent), with its own version as requestKind.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &flunder("v1alpha1", "good", "hooked"));
    assert!(out.status.success(), "{}", e2e::output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Warning: flunder good was labelled"), "{stderr}");
    let good = server.kubectl_json(&["get", "flunder", "good", "-n", "hooked", "-o", "json"]);
    assert_eq!(good["metadata"]["labels"]["mutated-by"], "webhook", "{good}");
    let review = webhook
        .received("/mutate")
        .pop()
        .expect("the mutating webhook was called");
    assert_eq!(
        review["kind"],
        json!({"group": "wardle.example.com", "version": "v1beta1", "kind": "Flunder"})
    );
    assert_eq!(review["requestKind"]["version"], "v1alpha1");
    assert_eq!(review["object"]["apiVersion"], "wardle.example.com/v1beta1");
    // The webhook is told its time (timeoutSeconds, 10 by default) as kube's client tells it.
    assert_eq!(webhook.queries("/mutate").pop().unwrap(), "timeout=10s");
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(review["namespace"], "hooked");
    assert_eq!(review["dryRun"], false);
    assert!(
        review["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters")),
        "{review}"
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1beta1", "plain", "default"));
    let plain = server.kubectl_json(&["get", "flunder", "plain", "-n", "default", "-o", "json"]);
    assert!(plain["metadata"]["labels"]["mutated-by"].is_null(), "{plain}");

    // A server-side dry run reaches the webhooks as one (their sideEffects are None).
    server.kubectl_stdin_ok(
        &["create", "--dry-run=server", "-f", "-"],
        &flunder("v1beta1", "dry", "hooked"),
    );
    let review = webhook.received("/mutate").pop().unwrap();
    assert_eq!(review["dryRun"], true);
    assert_eq!(review["name"], "dry");

    // Updates are validated too; the old object comes with them.
    server.kubectl_ok(&["label", "flunder", "plain", "-n", "default", "x=y"]);
    let review = webhook.received("/validate").pop().unwrap();
    assert_eq!(review["operation"], "UPDATE");
    assert_eq!(review["object"]["metadata"]["labels"]["x"], "y");
    assert!(review["oldObject"]["metadata"]["labels"]["x"].is_null(), "{review}");
    // Deleting the configuration stops the webhook at once.
    server.kubectl_ok(&["delete", "validatingwebhookconfiguration", "deny-flunders"]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1alpha1", "bad-two", "default"));
}

#[test]
fn failure_policy_fail_refuses_and_ignore_admits_while_the_webhook_is_down() {
    let server = Server::start(&["wardle"]);
    // A port nothing listens on.
    let port = e2e::free_port().unwrap();
    let config = |policy: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: down}}
webhooks:
- name: down.flunders.example.com
  clientConfig: {{url: \"https://127.0.0.1:{port}/validate\"}}
  rules:
  - {{apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [\"*\"]}}
  failurePolicy: {policy}
  timeoutSeconds: 2
  sideEffects: None
  admissionReviewVersions: [v1]
"
        )
    };
    server.kubectl_stdin_ok(&["create", "-f", "-"], &config("Fail"));
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "refused", "default"));
    assert!(err.contains("(InternalError)"), "{err}");
    assert!(
        err.contains(r#"failed calling webhook "down.flunders.example.com": failed to call webhook: Post"#),
        "{err}"
    );
    assert!(
        server
            .kubectl(&["get", "flunder", "refused", "-n", "default"])
            .status
            .code()
            != Some(0)
    );

    // Applied server-side, then replaced.
    server.kubectl_stdin_ok(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &config("Ignore"),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1beta1", "admitted", "default"));
    server.kubectl_ok(&["get", "flunder", "admitted", "-n", "default"]);
    // The configuration itself is never subject to webhooks (a broken one can always be removed).
    server.kubectl_stdin_ok(&["replace", "-f", "-"], &config("Fail"));
    server.kubectl_ok(&["delete", "validatingwebhookconfiguration", "down"]);
}

const POLICIES: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: fischer-names.example.com}
spec:
  paramKind: {apiVersion: wardle.example.com/v1alpha1, kind: Fischer}
  matchConstraints:
    resourceRules:
    - {apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [CREATE, UPDATE]}
  validations:
  - expression: \"object.metadata.name != params.metadata.name\"
    messageExpression: \"'the name ' + object.metadata.name + ' is the Fischer\\\\'s'\"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: named-by-fischer}
spec:
  policyName: fischer-names.example.com
  validationActions: [Deny]
  paramRef: {name: the-fischer, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: short-names.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [CREATE]}
  variables:
  - {name: length, expression: \"size(object.metadata.name)\"}
  validations:
  - {expression: \"variables.length <= 12\", message: names of flunders should be short}
  - {expression: \"request.userInfo.username != 'nobody'\"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: short-names-warn}
spec:
  policyName: short-names.example.com
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [wardle.example.com], apiVersions: [v1beta1], resources: [flunders], operations: [CREATE]}
  variables:
  - {name: replicas, expression: \"object.spec.replicas\"}
  validations:
  - {expression: \"!has(object.spec.replicas) || variables.replicas <= 10\", message: too many replicas}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec:
  policyName: replica-limit.example.com
  validationActions: [Deny]
";

#[test]
fn validating_admission_policies_deny_with_their_message_warn_and_read_their_params() {
    let server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], POLICIES);
    let listed = server.kubectl_ok(&["get", "validatingadmissionpolicies"]);
    assert!(listed.contains("fischer-names.example.com"), "{listed}");

    // The Fischer the binding names does not exist: parameterNotFoundAction Deny.
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "any", "default"));
    assert!(
        err.contains("ValidatingAdmissionPolicy 'fischer-names.example.com' with binding 'named-by-fischer' denied request: no params found"),
        "{err}"
    );
    let fischer = serde_json::to_string(&e2e::fischer_v1alpha1("the-fischer", &[])).unwrap();
    server.kubectl_stdin_ok(&["create", "-f", "-"], &fischer);

    // Denied with the message its expression makes, and its reason's code.
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "the-fischer", "default"));
    assert!(
        err.contains("ValidatingAdmissionPolicy 'fischer-names.example.com' with binding 'named-by-fischer' denied request: the name the-fischer is the Fischer's"),
        "{err}"
    );
    assert!(err.contains("(Forbidden)"), "{err}");
    // Allowed, with the Warn binding's warning.
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        &flunder("v1beta1", "a-rather-long-name", "default"),
    );
    assert!(out.status.success(), "{}", e2e::output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'short-names.example.com' with binding 'short-names-warn': names of flunders should be short"),
        "{stderr}"
    );
    // Deny makes it a refusal, with kube's 422 Invalid by default.
    server.kubectl_ok(&[
        "patch",
        "validatingadmissionpolicybinding",
        "short-names-warn",
        "--type=merge",
        "-p",
        r#"{"spec":{"validationActions":["Deny"]}}"#,
    ]);
    let err = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        &flunder("v1beta1", "another-long-name", "default"),
    );
    assert!(err.contains("is invalid"), "{err}");
    assert!(err.contains("names of flunders should be short"), "{err}");
    // A variable is evaluated as it is used: the flunders above had no replicas, and its error was never used
    // (kube's lazy variables); one with too many is refused by the validation that uses it.
    let err = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata: {name: many, namespace: default}\nspec: {replicas: 20}\n",
    );
    assert!(
        err.contains("ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit' denied request: too many replicas"),
        "{err}"
    );
    // Invalid policies are refused when written.
    let err = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken.example.com}
spec:
  matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], operations: ['*']}]}
  validations: [{expression: 'object.('}]
",
    );
    assert!(err.contains("spec.validations[0].expression"), "{err}");
}

#[test]
fn a_webhook_registered_in_kube_apiserver_applies_to_the_flunders_of_the_server_beside_it() {
    let Some(binary) = kube_apiserver_binary() else {
        return;
    };
    let etcd = Etcd::start().unwrap();
    let kube = KubeApiserver::start(&binary, &etcd).unwrap_or_else(|e| panic!("{e:#}"));
    let admin = kube.kubeconfig("admin", &kube.admin);
    let webhook = WebhookServer::start(handler);
    let server = Server::start_with_args(&["wardle"], &["--kubeconfig", &admin]);
    let kubectl = KubectlAt {
        kubeconfig: admin.clone(),
        cache: kube.dir().join("kube-cache"),
    };
    let config = webhook_configurations(&webhook);
    let validating = config.split("---").nth(1).unwrap();
    kubectl.ok(&["apply", "-f", "-"], Some(validating));
    // Read from kube-apiserver by its watch: applies within moments.
    let mut last = String::new();
    assert!(
        wait_until(Duration::from_secs(20), || {
            let out = server.kubectl_stdin(&["create", "-f", "-"], &flunder("v1beta1", "bad-in-cluster", "default"));
            last = e2e::output_text(&out);
            !out.status.success()
        }),
        "the cluster's webhook never applied: {last}"
    );
    assert!(
        last.contains(
            r#"admission webhook "deny.flunders.example.com" denied the request: the name bad-in-cluster is refused"#
        ),
        "{last}"
    );
    assert!(!webhook.received("/validate").is_empty());
    // Removed from the cluster, it stops applying.
    kubectl.ok(&["delete", "validatingwebhookconfiguration", "deny-flunders"], None);
    assert!(wait_until(Duration::from_secs(20), || {
        server
            .kubectl_stdin(&["create", "-f", "-"], &flunder("v1beta1", "bad-after", "default"))
            .status
            .success()
    }));
}

/// kube's dispatchers: a mutating webhook called again if needed, none called for a create in a missing namespace,
/// a patched object defaulted again; a slow webhook timing out (told its time by `?timeout=`), a validating webhook
/// that patches failing its call.
#[test]
fn a_mutating_webhook_is_called_again_if_needed_and_a_slow_webhook_times_out() {
    let webhook = WebhookServer::start(|path, request| {
        let seen_second = request.pointer("/object/metadata/labels/second").is_some();
        match path {
            // Notes whether it saw the second webhook's label.
            "/first" => {
                let mut annotations = json!({"first": "ran"});
                if seen_second {
                    annotations["first-saw-second"] = json!("yes");
                }
                Verdict::Patch(
                    json!([{"op": "add", "path": "/metadata/annotations", "value": annotations}]),
                    Vec::new(),
                )
            }
            "/second" => Verdict::Patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": {"second": "yes"}}]),
                Vec::new(),
            ),
            "/slow" => {
                std::thread::sleep(Duration::from_secs(3));
                Verdict::Allow(Vec::new())
            }
            // Sets a reference without its type, which wardle's v1alpha1 defaulting fills in.
            "/reference" => Verdict::Patch(
                json!([{"op": "add", "path": "/spec", "value": {"reference": "a-fischer"}}]),
                Vec::new(),
            ),
            _ => Verdict::Allow(Vec::new()),
        }
    });
    let server = Server::start(&["wardle"]);
    let (url, ca) = (&webhook.url, webhook.ca_bundle());
    let rule =
        "rules: [{apiGroups: [wardle.example.com], apiVersions: [\"*\"], resources: [flunders], operations: [CREATE]}]";
    let hook = |name: &str, path: &str, extra: &str| {
        format!(
            "- name: {name}\n  clientConfig: {{url: \"{url}{path}\", caBundle: \"{ca}\"}}\n  {rule}\n  sideEffects: None\n  admissionReviewVersions: [v1]\n{extra}"
        )
    };
    // A Mutating- or ValidatingWebhookConfiguration of these webhooks.
    let configuration = |kind: &str, name: &str, hooks: &str| {
        format!("apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}WebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n{hooks}")
    };
    let mutating = configuration(
        "Mutating",
        "twice",
        &(hook(
            "first.flunders.example.com",
            "/first",
            "  reinvocationPolicy: IfNeeded\n",
        ) + &hook("second.flunders.example.com", "/second", "")),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &mutating);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1beta1", "twice", "default"));
    let twice = server.kubectl_json(&["get", "flunder", "twice", "-n", "default", "-o", "json"]);
    assert_eq!(twice["metadata"]["labels"]["second"], "yes", "{twice}");
    assert_eq!(twice["metadata"]["annotations"]["first-saw-second"], "yes", "{twice}");
    assert_eq!(webhook.received("/first").len(), 2);
    assert_eq!(webhook.received("/second").len(), 1);
    // A create in a missing namespace is refused before any mutating webhook is called (kube's
    // NamespaceLifecycle, the first mutating plugin).
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "lost", "nowhere"));
    assert!(err.contains(r#"namespaces "nowhere" not found"#), "{err}");
    assert_eq!(webhook.received("/first").len(), 2);
    // Without IfNeeded, the first webhook is called once and never sees the label.
    server.kubectl_ok(&[
        "patch",
        "mutatingwebhookconfiguration",
        "twice",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/webhooks/0/reinvocationPolicy", "value": "Never"}]"#,
    ]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1beta1", "once", "default"));
    let once = server.kubectl_json(&["get", "flunder", "once", "-n", "default", "-o", "json"]);
    assert_eq!(once["metadata"]["annotations"], json!({"first": "ran"}), "{once}");
    assert_eq!(webhook.received("/first").len(), 3);
    server.kubectl_ok(&["delete", "mutatingwebhookconfiguration", "twice"]);

    // The object a webhook patched is defaulted again, in the webhook's version (v1alpha1 here).
    let reference = configuration(
        "Mutating",
        "reference",
        &hook("reference.flunders.example.com", "/reference", "")
            .replace("apiVersions: [\"*\"]", "apiVersions: [v1alpha1]"),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &reference);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder("v1beta1", "referring", "default"));
    let referring = server.kubectl_json(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "referring",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    assert_eq!(referring["spec"]["reference"], "a-fischer", "{referring}");
    assert_eq!(referring["spec"]["referenceType"], "Flunder", "{referring}");
    server.kubectl_ok(&["delete", "mutatingwebhookconfiguration", "reference"]);

    // A webhook slower than its timeoutSeconds fails the write by its failure policy (Fail).
    let slow = configuration(
        "Validating",
        "slow",
        &hook("slow.flunders.example.com", "/slow", "  timeoutSeconds: 1\n"),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &slow);
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "late", "default"));
    assert!(
        err.contains(r#"failed calling webhook "slow.flunders.example.com""#)
            && err.contains("context deadline exceeded"),
        "{err}"
    );
    assert_eq!(webhook.queries("/slow").pop().unwrap(), "timeout=1s");
    server.kubectl_ok(&["delete", "validatingwebhookconfiguration", "slow"]);

    // A validating webhook may not patch: its answer is a failed call (here failing the write by its policy).
    let patching = configuration(
        "Validating",
        "patching",
        &hook("patching.flunders.example.com", "/second", ""),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &patching);
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "patched", "default"));
    assert!(
        err.contains(
            r#"failed calling webhook "patching.flunders.example.com": received invalid webhook response: validating webhook may not return response.patch"#
        ),
        "{err}"
    );
}

/// With `--kubeconfig`, writes wait for the cluster's webhooks and policies to be first listed, and are refused
/// (403, as kube's webhook plugins refuse them) while that cluster cannot be reached; reads are served.
#[test]
fn writes_are_refused_until_the_clusters_admission_configuration_is_listed() {
    // A cluster nothing answers for.
    let port = e2e::free_port().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("unreachable-cluster");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             current-context: x\n"
        ),
    )
    .unwrap();
    let server = Server::start_with_args(&["wardle"], &["--kubeconfig", kubeconfig.to_str().unwrap()]);
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder("v1beta1", "early", "default"));
    assert!(
        err.contains(r#"(Forbidden): error when creating "STDIN": flunders.wardle.example.com "early" is forbidden: not yet ready to handle request"#),
        "{err}"
    );
    server.kubectl_ok(&["get", "flunders", "-n", "default"]);
}
