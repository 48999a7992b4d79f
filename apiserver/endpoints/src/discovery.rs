//! Discovery documents, as pure functions of the plugins' schemes: what kube-apiserver serves at `/apis`,
//! `/apis/<group>`, `/apis/<group>/<version>`, `/api` and `/version`, in the legacy (`APIGroupList`,
//! `APIGroup`, `APIResourceList`) and the aggregated (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) forms.
//!
//! Like kube-apiserver: groups are sorted by name, resources by plural name, verbs alphabetically; a group's
//! versions keep the plugin's order (most preferred first), and the first one is the preferred version.
//! Subresources are listed as kube-apiextensions-apiserver's discovery controller lists a CRD's
//! (`customresource_discovery_controller.go`): in the legacy form as entries `<plural>/status` and
//! `<plural>/scale` right after their resource, in the aggregated form in the resource's `subresources`; status
//! before scale, with the verbs [`SUBRESOURCE_VERBS`], and `/scale` answering with an autoscaling/v1 `Scale`.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256, Sha512};

use apimachinery::scheme::{GroupInfo, ResourceInfo, SUBRESOURCE_VERBS};

/// The Content-Type of an aggregated discovery response (`APIGroupDiscoveryList`), as kube-apiserver sends it.
/// client-go recognises the aggregated form by these parameters, in any order.
pub const AGGREGATED_DISCOVERY_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The verbs of a `/finalize` subresource (a namespace's): update only, as kube serves it.
pub const FINALIZE_VERBS: [&str; 1] = ["update"];

/// The group, version and kind `/scale` subresources read and write: autoscaling/v1 `Scale`.
pub const SCALE_KIND: (&str, &str, &str) = ("autoscaling", "v1", "Scale");
/// The kind a service account's `token` subresource answers with.
pub const TOKEN_REQUEST_KIND: (&str, &str, &str) = ("authentication.k8s.io", "v1", "TokenRequest");
/// The verbs of a subresource that is only created (a service account's `token`).
pub const CREATE_VERBS: [&str; 1] = ["create"];

/// The Kubernetes version this server presents itself as at `/version`.
pub const KUBERNETES_VERSION: (&str, &str) = ("1", "37");

/// The Content-Type to send with [`aggregated_discovery`] and [`aggregated_legacy_discovery`].
pub fn aggregated_discovery_content_type() -> &'static str {
    AGGREGATED_DISCOVERY_CONTENT_TYPE
}

/// Whether an `Accept` header asks for aggregated discovery: one of its media ranges is `application/json` with
/// `g=apidiscovery.k8s.io`, `v=v2` and `as=APIGroupDiscoveryList` (other parameters such as `profile=nopeer` are
/// ignored) and a non-zero quality. client-go sends it first, followed by plain `application/json`.
pub fn wants_aggregated_discovery(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        if !parts
            .next()
            .is_some_and(|media| media.eq_ignore_ascii_case("application/json"))
        {
            return false;
        }
        let (mut g, mut v, mut kind, mut quality_zero) = (false, false, false, false);
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "g" => g = value == "apidiscovery.k8s.io",
                "v" => v = value == "v2",
                "as" => kind = value == "APIGroupDiscoveryList",
                "q" => quality_zero = value.parse::<f32>().is_ok_and(|q| q <= 0.0),
                _ => {}
            }
        }
        g && v && kind && !quality_zero
    })
}

/// The `APIGroupList` served at `/apis` (legacy discovery): every group with at least one served version.
pub fn api_group_list(groups: &[GroupInfo]) -> Value {
    let groups: Vec<Value> = sorted(groups)
        .into_iter()
        .filter_map(group_body)
        .map(Value::Object)
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The `APIGroup` served at `/apis/<group>`. A group without served versions has empty `versions` and no
/// `preferredVersion`; the caller should answer 404 for it, as there is nothing to serve.
pub fn api_group(group: &GroupInfo) -> Value {
    let mut body = group_body(group).unwrap_or_else(|| {
        let mut m = Map::new();
        m.insert("name".into(), json!(group.group));
        m.insert("versions".into(), json!([]));
        m
    });
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIGroup"));
    out.insert("apiVersion".into(), json!("v1"));
    out.append(&mut body);
    Value::Object(out)
}

/// The `APIResourceList` served at `/apis/<group>/<version>`, or none when the group does not serve that version.
pub fn api_resource_list(group: &GroupInfo, version: &str) -> Option<Value> {
    let mut served: Vec<&ResourceInfo> = group.resources_in(version).map(|(r, _)| r).collect();
    if served.is_empty() {
        return None;
    }
    served.sort_by(|a, b| a.plural.cmp(&b.plural));
    let mut resources: Vec<Value> = Vec::new();
    for r in served {
        let mut m = Map::new();
        m.insert("name".into(), json!(r.plural));
        m.insert("singularName".into(), json!(r.singular));
        m.insert("namespaced".into(), json!(r.namespaced));
        m.insert("kind".into(), json!(r.kind));
        m.insert("verbs".into(), json!(sorted_verbs(r)));
        insert_non_empty(&mut m, "shortNames", &r.short_names);
        insert_non_empty(&mut m, "categories", &r.categories);
        m.insert(
            "storageVersionHash".into(),
            json!(storage_version_hash(&group.group, r.storage_version(), &r.kind)),
        );
        resources.push(Value::Object(m));
        resources.extend(legacy_subresources(r, version));
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": apimachinery::scheme::group_version(&group.group, version),
        "resources": resources,
    }))
}

/// The aggregated discovery document (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) served at `/apis` when
/// [`wants_aggregated_discovery`] holds, with Content-Type [`AGGREGATED_DISCOVERY_CONTENT_TYPE`].
pub fn aggregated_discovery(groups: &[GroupInfo]) -> Value {
    let items: Vec<Value> = sorted(groups)
        .into_iter()
        .filter_map(|g| {
            let versions: Vec<Value> = g.versions().iter().map(|v| version_discovery(g, v)).collect();
            if versions.is_empty() {
                return None;
            }
            Some(json!({"metadata": {"name": g.group}, "versions": versions}))
        })
        .collect();
    discovery_list(items)
}

/// The aggregated discovery document for `/api`: the legacy core group (`""`) and its `v1` (namespaces, built
/// in). kubectl also maps `kind: List` files (what `kubectl get -o yaml` writes) through the `v1` group version.
pub fn aggregated_legacy_discovery(core: &GroupInfo) -> Value {
    discovery_list(vec![
        json!({"metadata": {"name": ""}, "versions": [version_discovery(core, "v1")]}),
    ])
}

/// The `APIVersions` served at `/api` (legacy discovery): the core `v1`.
pub fn api_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

/// The `version.Info` served at `/version`. It claims Kubernetes 1.37 (so kubectl's version-skew check stays
/// quiet) and carries this server's own version as semver build metadata: `v1.37.0+wasm-apiserver.<version>`.
pub fn version_info() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    let minor_compat = minor
        .parse::<u32>()
        .map(|m| m.saturating_sub(1).to_string())
        .unwrap_or_default();
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": minor_compat,
        "gitVersion": format!("v{major}.{minor}.0+wasm-apiserver.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch(std::env::consts::ARCH)),
    })
}

/// The storage version hash of a kind, as Kubernetes computes it: the standard base64 of the first 8 bytes of the
/// SHA-256 of `<group>/<version>/<kind>`, with the storage version. Clients compare it only for equality.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64_standard(&digest[..8])
}

/// The entity tag kube-apiserver gives discovery and OpenAPI documents: the upper-case hex SHA-512 of the compact
/// JSON encoding. Serve the same encoding (`serde_json::to_vec`) so that the tag matches the bytes; in an `ETag`
/// header it goes between double quotes.
pub fn etag(document: &Value) -> String {
    let bytes = serde_json::to_vec(document).unwrap_or_default();
    hex::encode_upper(Sha512::digest(&bytes))
}

fn discovery_list(items: Vec<Value>) -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn version_discovery(group: &GroupInfo, version: &str) -> Value {
    let mut served: Vec<&ResourceInfo> = group.resources_in(version).map(|(r, _)| r).collect();
    served.sort_by(|a, b| a.plural.cmp(&b.plural));
    let resources: Vec<Value> = served
        .into_iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("resource".into(), json!(r.plural));
            m.insert(
                "responseKind".into(),
                json!({"group": group.group, "version": version, "kind": r.kind}),
            );
            m.insert(
                "scope".into(),
                json!(if r.namespaced { "Namespaced" } else { "Cluster" }),
            );
            m.insert("singularResource".into(), json!(r.singular));
            m.insert("verbs".into(), json!(sorted_verbs(r)));
            insert_non_empty(&mut m, "shortNames", &r.short_names);
            insert_non_empty(&mut m, "categories", &r.categories);
            let subresources = aggregated_subresources(&group.group, version, r);
            if !subresources.is_empty() {
                m.insert("subresources".into(), Value::Array(subresources));
            }
            Value::Object(m)
        })
        .collect();
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// A served subresource as discovery lists it.
struct Subresource {
    name: &'static str,
    /// The group, version and kind it answers with; `None`: the resource's own.
    answers: Option<(&'static str, &'static str, &'static str)>,
    verbs: &'static [&'static str],
}

/// A resource's subresources in `version`, in kube's order: finalize, status, scale.
fn served_subresources(r: &ResourceInfo, version: &str) -> Vec<Subresource> {
    let subresources = r.subresources(version);
    let mut out = Vec::new();
    if subresources.finalize {
        out.push(Subresource {
            name: "finalize",
            answers: None,
            verbs: &FINALIZE_VERBS,
        });
    }
    if subresources.status {
        out.push(Subresource {
            name: "status",
            answers: None,
            verbs: &SUBRESOURCE_VERBS,
        });
    }
    if subresources.scale.is_some() {
        out.push(Subresource {
            name: "scale",
            answers: Some(SCALE_KIND),
            verbs: &SUBRESOURCE_VERBS,
        });
    }
    if subresources.token {
        out.push(Subresource {
            name: "token",
            answers: Some(TOKEN_REQUEST_KIND),
            verbs: &CREATE_VERBS,
        });
    }
    out
}

/// The legacy `APIResource` entries of a resource's subresources in `version`, as kube lists a CRD's (and a
/// namespace's `finalize`): `<plural>/<subresource>` with the kind it answers with (autoscaling/v1 `Scale` for
/// scale, named with its group and version); no singular name, short names, categories or storage version hash.
fn legacy_subresources(r: &ResourceInfo, version: &str) -> Vec<Value> {
    served_subresources(r, version)
        .into_iter()
        .map(|sub| {
            let mut entry = json!({
                "name": format!("{}/{}", r.plural, sub.name),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": sub.verbs,
            });
            if let Some((group, version, kind)) = sub.answers {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
                entry["kind"] = json!(kind);
            }
            entry
        })
        .collect()
}

/// The `APISubresourceDiscovery` entries of a resource in `version` of `group`, as kube lists a CRD's: each with the
/// group, version and kind it answers with.
fn aggregated_subresources(group: &str, version: &str, r: &ResourceInfo) -> Vec<Value> {
    served_subresources(r, version)
        .into_iter()
        .map(|sub| {
            let (group, version, kind) = sub.answers.unwrap_or((group, version, &r.kind));
            json!({
                "subresource": sub.name,
                "responseKind": {"group": group, "version": version, "kind": kind},
                "verbs": sub.verbs,
            })
        })
        .collect()
}

/// The fields of an `APIGroup` (without `kind`/`apiVersion`), or none when no version is served.
fn group_body(group: &GroupInfo) -> Option<Map<String, Value>> {
    let versions = group.versions();
    let gv = |v: &String| json!({"groupVersion": format!("{}/{}", group.group, v), "version": v});
    let preferred = gv(versions.first()?);
    let mut m = Map::new();
    m.insert("name".into(), json!(group.group));
    m.insert("versions".into(), Value::Array(versions.iter().map(gv).collect()));
    m.insert("preferredVersion".into(), preferred);
    Some(m)
}

/// The named groups (served under `/apis`) in name order: the core group is served under `/api`.
fn sorted(groups: &[GroupInfo]) -> Vec<&GroupInfo> {
    let mut out: Vec<&GroupInfo> = groups.iter().filter(|g| !g.group.is_empty()).collect();
    out.sort_by(|a, b| a.group.cmp(&b.group));
    out
}

fn sorted_verbs(r: &ResourceInfo) -> Vec<&'static str> {
    let mut verbs = r.verbs.clone();
    verbs.sort_unstable();
    verbs.dedup();
    verbs
}

fn insert_non_empty(m: &mut Map<String, Value>, key: &str, values: &[String]) {
    if !values.is_empty() {
        m.insert(key.into(), json!(values));
    }
}

/// Go's name for a CPU architecture, as `/version`'s `platform` uses it.
fn go_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64_standard(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use apimachinery::scheme::{ScalePaths, Subresources, VersionInfo};

    const ALL_VERBS: [&str; 8] = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];

    fn version(name: &str, storage: bool, schema: Value) -> VersionInfo {
        VersionInfo {
            name: name.into(),
            served: true,
            storage,
            deprecated: false,
            deprecation_warning: None,
            schema: schema.into(),
            subresources: Subresources::default(),
            columns: None,
        }
    }

    /// Changes the subresources of every version of a resource.
    pub(crate) fn edit_subresources(r: &mut ResourceInfo, edit: impl Fn(&mut Subresources)) {
        for v in &mut r.versions {
            edit(&mut v.subresources);
        }
    }

    /// A group resembling sample-apiserver's wardle: namespaced Flunder in v1beta1 (preferred) and v1alpha1
    /// (storage), cluster-scoped Fischer in v1alpha1 only.
    pub(crate) fn wardle() -> GroupInfo {
        let flunder_alpha = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "reference": {"type": "string"}, "referenceType": {"type": "string", "enum": ["Flunder", "Fischer"]}}},
            "status": {"type": "object"}}});
        let flunder_beta = json!({"type": "object", "description": "A Flunder.", "properties": {"spec": {
            "type": "object", "properties": {"flunderReference": {"type": "string"},
            "fischerReference": {"type": "string"}, "referenceType": {"type": "string"}}},
            "status": {"type": "object"}}});
        let fischer = json!({"type": "object", "properties": {"disallowedFlunders": {"type": "array",
            "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"}}});
        let mut group = GroupInfo {
            group: "wardle.example.com".into(),
            resources: apimachinery::scheme::shared(vec![
                ResourceInfo {
                    kind: "Flunder".into(),
                    plural: "flunders".into(),
                    singular: "flunder".into(),
                    short_names: vec!["fl".into()],
                    categories: vec!["all".into()],
                    namespaced: true,
                    versions: vec![
                        version("v1beta1", false, flunder_beta),
                        version("v1alpha1", true, flunder_alpha),
                    ],
                    verbs: ALL_VERBS.to_vec(),
                    defaults: Default::default(),
                },
                ResourceInfo {
                    kind: "Fischer".into(),
                    plural: "fischers".into(),
                    singular: "fischer".into(),
                    short_names: vec![],
                    categories: vec![],
                    namespaced: false,
                    versions: vec![version("v1alpha1", true, fischer)],
                    verbs: vec!["create", "delete", "get", "list", "watch"],
                    defaults: Default::default(),
                },
            ]),
            reads: vec![],
        };
        std::sync::Arc::make_mut(&mut group.resources[0]).set_subresources(&Subresources {
            status: true,
            scale: Some(ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: Some(".status.selector".into()),
            }),
            finalize: false,
            token: false,
        });
        group
    }

    #[test]
    fn storage_version_hash_matches_kubernetes() {
        // The values kube-apiserver publishes for deployments.apps, pods and configmaps.
        assert_eq!(storage_version_hash("apps", "v1", "Deployment"), "8aSe+NMegvE=");
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(base64_standard(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_standard(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64_standard(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn group_list_and_group() {
        let list = api_group_list(&[wardle()]);
        assert_eq!(list["kind"], "APIGroupList");
        assert_eq!(list["apiVersion"], "v1");
        let g = &list["groups"][0];
        assert_eq!(g["name"], "wardle.example.com");
        assert!(g.get("kind").is_none());
        assert_eq!(g["preferredVersion"]["groupVersion"], "wardle.example.com/v1beta1");
        assert_eq!(
            g["versions"][1],
            json!({"groupVersion": "wardle.example.com/v1alpha1", "version": "v1alpha1"})
        );

        let group = api_group(&wardle());
        assert_eq!(group["kind"], "APIGroup");
        assert_eq!(group["preferredVersion"]["version"], "v1beta1");
        assert_eq!(group["versions"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn resource_list_per_version() {
        let g = wardle();
        let alpha = api_resource_list(&g, "v1alpha1").expect("v1alpha1 is served");
        assert_eq!(alpha["kind"], "APIResourceList");
        assert_eq!(alpha["groupVersion"], "wardle.example.com/v1alpha1");
        let names: Vec<&str> = alpha["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(names, ["fischers", "flunders", "flunders/status", "flunders/scale"]);
        let fischer = &alpha["resources"][0];
        assert_eq!(fischer["namespaced"], false);
        assert!(fischer.get("shortNames").is_none() && fischer.get("categories").is_none());
        let flunder = &alpha["resources"][1];
        assert_eq!(flunder["verbs"], json!(ALL_VERBS));
        assert_eq!(flunder["shortNames"], json!(["fl"]));
        assert_eq!(
            flunder["storageVersionHash"],
            json!(storage_version_hash("wardle.example.com", "v1alpha1", "Flunder"))
        );

        let beta = api_resource_list(&g, "v1beta1").expect("v1beta1 is served");
        assert_eq!(beta["resources"].as_array().map(Vec::len), Some(3));
        // The hash names the storage version, whatever the version listed.
        assert_eq!(
            beta["resources"][0]["storageVersionHash"],
            flunder["storageVersionHash"]
        );
        assert!(api_resource_list(&g, "v2").is_none());
    }

    /// The entries kube's CRD discovery controller adds for `subresources.status` and `subresources.scale`.
    #[test]
    fn legacy_subresource_entries() {
        let g = wardle();
        let alpha = api_resource_list(&g, "v1alpha1").expect("v1alpha1 is served");
        assert_eq!(
            alpha["resources"][2],
            json!({"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
                "verbs": ["get", "patch", "update"]})
        );
        assert_eq!(
            alpha["resources"][3],
            json!({"name": "flunders/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
                "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
        );

        // Each resource is followed by its own subresources, whatever their names sort as; scope follows the
        // resource's, and a resource without subresources has no entries.
        let mut g = wardle();
        edit_subresources(std::sync::Arc::make_mut(&mut g.resources[0]), |s| s.scale = None);
        std::sync::Arc::make_mut(&mut g.resources[0]).namespaced = false;
        let status_only = g.resources[0].versions[0].subresources.clone();
        std::sync::Arc::make_mut(&mut g.resources[1]).set_subresources(&status_only);
        let alpha = api_resource_list(&g, "v1alpha1").expect("v1alpha1 is served");
        let names: Vec<&str> = alpha["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(names, ["fischers", "fischers/status", "flunders", "flunders/status"]);
        assert_eq!(alpha["resources"][1]["kind"], "Fischer");
        assert_eq!(alpha["resources"][3]["namespaced"], false);
        std::sync::Arc::make_mut(&mut g.resources[0]).set_subresources(&Subresources::default());
        std::sync::Arc::make_mut(&mut g.resources[1]).set_subresources(&Subresources::default());
        let names: Vec<Value> = api_resource_list(&g, "v1alpha1")
            .map(|l| {
                l["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r["name"].clone())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, [json!("fischers"), json!("flunders")]);
    }

    #[test]
    fn aggregated_subresources() {
        let doc = aggregated_discovery(&[wardle()]);
        let versions = &doc["items"][0]["versions"];
        for (i, version) in ["v1beta1", "v1alpha1"].into_iter().enumerate() {
            let resources = versions[i]["resources"].as_array().cloned().unwrap_or_default();
            let flunder = resources.iter().find(|r| r["resource"] == "flunders");
            assert_eq!(
                flunder.map(|f| &f["subresources"]),
                Some(&json!([
                    {"subresource": "status",
                        "responseKind": {"group": "wardle.example.com", "version": version, "kind": "Flunder"},
                        "verbs": ["get", "patch", "update"]},
                    {"subresource": "scale",
                        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                        "verbs": ["get", "patch", "update"]},
                ])),
                "{version}"
            );
        }
        // Omitted when there are none, as kube's `omitempty`.
        let fischer = &versions[1]["resources"][0];
        assert_eq!(fischer["resource"], "fischers");
        assert!(fischer.get("subresources").is_none());

        let mut g = wardle();
        edit_subresources(std::sync::Arc::make_mut(&mut g.resources[0]), |s| s.status = false);
        let doc = aggregated_discovery(&[g]);
        let subresources = &doc["items"][0]["versions"][1]["resources"][1]["subresources"];
        assert_eq!(subresources.as_array().map(Vec::len), Some(1));
        assert_eq!(subresources[0]["subresource"], "scale");
    }

    #[test]
    fn aggregated_document() {
        let doc = aggregated_discovery(&[wardle()]);
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
        let group = &doc["items"][0];
        assert_eq!(group["metadata"]["name"], "wardle.example.com");
        assert_eq!(group["versions"][0]["version"], "v1beta1");
        let alpha = &group["versions"][1];
        assert_eq!(alpha["freshness"], "Current");
        let fischer = &alpha["resources"][0];
        assert_eq!(fischer["resource"], "fischers");
        assert_eq!(fischer["scope"], "Cluster");
        assert_eq!(
            fischer["responseKind"],
            json!({"group": "wardle.example.com", "version": "v1alpha1", "kind": "Fischer"})
        );
        assert_eq!(alpha["resources"][1]["scope"], "Namespaced");
        assert_eq!(alpha["resources"][1]["singularResource"], "flunder");
        assert_eq!(alpha["resources"][1]["categories"], json!(["all"]));
        let core = aggregated_legacy_discovery(&builtin::core::plugin().group);
        assert_eq!(core["items"][0]["metadata"]["name"], "");
        assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
        let resources = core["items"][0]["versions"][0]["resources"].as_array().unwrap();
        let names: Vec<&str> = resources.iter().filter_map(|r| r["resource"].as_str()).collect();
        assert_eq!(
            names,
            [
                "configmaps",
                "events",
                "namespaces",
                "resourcequotas",
                "secrets",
                "serviceaccounts"
            ]
        );
        // A namespace's subresources, in kube's order, with their verbs.
        assert_eq!(
            resources[2]["subresources"],
            json!([
                {"subresource": "finalize", "responseKind": {"group": "", "version": "v1", "kind": "Namespace"}, "verbs": ["update"]},
                {"subresource": "status", "responseKind": {"group": "", "version": "v1", "kind": "Namespace"}, "verbs": ["get", "patch", "update"]}
            ])
        );
        assert_eq!(api_versions()["versions"], json!(["v1"]));
    }

    #[test]
    fn accept_negotiation() {
        let client_go = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated_discovery(client_go));
        assert!(wants_aggregated_discovery(
            "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io; profile=nopeer"
        ));
        assert!(!wants_aggregated_discovery("application/json"));
        assert!(!wants_aggregated_discovery(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
        assert!(!wants_aggregated_discovery(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"
        ));
        assert!(!wants_aggregated_discovery(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn version_and_etag() {
        let v = version_info();
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "37");
        let git = v["gitVersion"].as_str().unwrap_or_default();
        assert!(git.starts_with("v1.37.0+wasm-apiserver."), "{git}");
        let a = etag(&aggregated_discovery(&[wardle()]));
        assert_eq!(a, etag(&aggregated_discovery(&[wardle()])));
        assert_eq!(a.len(), 128);
        assert!(a.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        let mut changed = wardle();
        std::sync::Arc::make_mut(&mut changed.resources[1])
            .short_names
            .push("fi".into());
        assert_ne!(a, etag(&aggregated_discovery(&[changed])));
    }
}
