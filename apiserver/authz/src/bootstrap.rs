//! The default ClusterRoles and ClusterRoleBindings (kube's `bootstrappolicy`), created at start when missing and
//! brought up to date when they carry `rbac.authorization.kubernetes.io/autoupdate: "true"` (so an operator can take
//! one over by setting it to `"false"`).

use serde_json::{json, Value};

use authn::{AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP};
use builtin::rbac::GROUP;

/// The annotation that lets the server reconcile a default object.
pub const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

fn meta(name: &str, labels: Value) -> Value {
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE: "true"}
    })
}

fn bootstrapping() -> Value {
    json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
}

fn with_label(mut labels: Value, key: &str) -> Value {
    labels[key] = json!("true");
    labels
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": meta(name, labels), "rules": rules})
}

fn aggregated(name: &str, labels: Value, to: &[&str]) -> Value {
    let selectors: Vec<Value> = to
        .iter()
        .map(|t| json!({"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{t}"): "true"}}))
        .collect();
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": meta(name, labels),
        "aggregationRule": {"clusterRoleSelectors": selectors}, "rules": []
    })
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding", "metadata": meta(name, bootstrapping()),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects
    })
}

/// The default ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let discovery_urls = json!([
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/"
    ]);
    let public_urls = json!([
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
        "/version/"
    ]);
    let facing = bootstrapping();
    let read_write = [READ.as_slice(), WRITE.as_slice()].concat();
    vec![
        cluster_role(
            "cluster-admin",
            facing.clone(),
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]}
            ]),
        ),
        cluster_role(
            "system:discovery",
            bootstrapping(),
            json!([{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:public-info-viewer",
            bootstrapping(),
            json!([{"nonResourceURLs": public_urls, "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:basic-user",
            bootstrapping(),
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]}
            ]),
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            bootstrapping(),
            json!([{"nonResourceURLs": ["/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"], "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:auth-delegator",
            bootstrapping(),
            json!([
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
            ]),
        ),
        cluster_role(
            "system:monitoring",
            bootstrapping(),
            json!([{"nonResourceURLs": ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/readyz", "/readyz/*"], "verbs": ["get"]}]),
        ),
        aggregated("admin", facing.clone(), &["admin"]),
        aggregated(
            "edit",
            with_label(facing.clone(), "rbac.authorization.k8s.io/aggregate-to-admin"),
            &["edit"],
        ),
        aggregated(
            "view",
            with_label(
                with_label(facing, "rbac.authorization.k8s.io/aggregate-to-admin"),
                "rbac.authorization.k8s.io/aggregate-to-edit",
            ),
            &["view"],
        ),
        cluster_role(
            "system:aggregate-to-admin",
            with_label(bootstrapping(), "rbac.authorization.k8s.io/aggregate-to-admin"),
            json!([
                {"apiGroups": [GROUP], "resources": ["rolebindings", "roles"], "verbs": read_write},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"], "verbs": ["create"]}
            ]),
        ),
        cluster_role(
            "system:aggregate-to-edit",
            with_label(bootstrapping(), "rbac.authorization.k8s.io/aggregate-to-edit"),
            json!([
                {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
                {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts"], "verbs": read_write},
                {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": read_write}
            ]),
        ),
        cluster_role(
            "system:aggregate-to-view",
            with_label(bootstrapping(), "rbac.authorization.k8s.io/aggregate-to-view"),
            json!([
                {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts"], "verbs": READ},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": READ},
                {"apiGroups": [""], "resources": ["resourcequotas", "resourcequotas/status"], "verbs": READ},
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ}
            ]),
        ),
    ]
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", &[MASTERS_GROUP]),
        binding("system:discovery", "system:discovery", &[AUTHENTICATED_GROUP]),
        binding("system:basic-user", "system:basic-user", &[AUTHENTICATED_GROUP]),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP],
        ),
        binding("system:monitoring", "system:monitoring", &["system:monitoring"]),
        binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
    ]
}

/// The storage keys of the RBAC objects the host makes in every tenant: the default roles and bindings.
pub fn default_keys() -> Vec<String> {
    let key = |resource: &str, object: &Value| {
        storage::keys::object_key(
            GROUP,
            resource,
            None,
            object["metadata"]["name"].as_str().unwrap_or_default(),
        )
    };
    cluster_roles()
        .iter()
        .map(|o| key("clusterroles", o))
        .chain(cluster_role_bindings().iter().map(|o| key("clusterrolebindings", o)))
        .collect()
}

/// Whether a stored default object must be brought up to date with `wanted`: it allows autoupdate and its rules,
/// aggregation rule, role reference or subjects differ.
pub fn needs_update(stored: &Value, wanted: &Value) -> bool {
    let autoupdate = stored
        .pointer(&format!("/metadata/annotations/{}", AUTOUPDATE.replace('/', "~1")))
        .and_then(Value::as_str)
        != Some("false");
    autoupdate
        && reconciled_fields(wanted)
            .iter()
            .any(|f| stored.get(f) != wanted.get(f) && !(stored.get(f).is_none() && wanted[*f] == json!([])))
}

/// The fields of a default object the server keeps as it wants them: not the rules of an aggregated ClusterRole,
/// which aggregation writes.
fn reconciled_fields(wanted: &Value) -> Vec<&'static str> {
    if wanted.get("aggregationRule").is_some() {
        vec!["aggregationRule"]
    } else {
        vec!["rules", "aggregationRule", "roleRef", "subjects"]
    }
}

/// Creates the default ClusterRoles and ClusterRoleBindings that are missing, and updates those that allow it
/// and differ. The objects are written concurrently, so that the store commits them in a few transactions: with
/// 1,000 tenants starting, one write at a time made the start take over 5 s.
pub async fn ensure(registry: &registry::Registry) -> anyhow::Result<()> {
    let wanted = cluster_roles()
        .into_iter()
        .map(|o| ("clusterroles", o))
        .chain(cluster_role_bindings().into_iter().map(|o| ("clusterrolebindings", o)));
    let results =
        futures_util::future::join_all(wanted.map(|(resource, object)| ensure_one(registry, resource, object))).await;
    let mut created = 0;
    for result in results {
        created += usize::from(result?);
    }
    if created > 0 {
        tracing::info!(created, "created the default RBAC roles and bindings");
    }
    Ok(())
}

/// Creates one default object if missing, or brings its reconciled fields in line; true when it was created.
async fn ensure_one(registry: &registry::Registry, resource: &str, object: Value) -> anyhow::Result<bool> {
    use registry::store::{FieldValidation, WriteOptions};
    let opts = WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let store = registry
        .system_store(GROUP, resource)
        .ok_or_else(|| anyhow::anyhow!("{resource} are not served"))?;
    match store.create(None, object.clone(), opts).await {
        Ok(_) => Ok(true),
        Err(e) if e.reason == "AlreadyExists" => {
            let key = storage::keys::object_key(GROUP, resource, None, &name);
            let Some(kv) = registry.storage.get(&key).await? else {
                return Ok(false);
            };
            let mut stored: Value = serde_json::from_slice(&kv.value)?;
            if !needs_update(&stored, &object) {
                return Ok(false);
            }
            for field in reconciled_fields(&object) {
                match object.get(field) {
                    Some(v) => stored[field] = v.clone(),
                    None => {
                        if let Some(m) = stored.as_object_mut() {
                            m.remove(field);
                        }
                    }
                }
            }
            registry
                .storage
                .update(&key, stored.to_string().into_bytes(), kv.mod_revision)
                .await?;
            tracing::info!(resource, name, "updated a default RBAC object");
            Ok(false)
        }
        Err(e) => anyhow::bail!("creating {resource} {name}: {}", e.message),
    }
}
