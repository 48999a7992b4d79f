//! OpenAPI documents, as pure functions of the plugins' schemes: the v3 root (`/openapi/v3`), one v3 document
//! per group version (`/openapi/v3/apis/<group>/<version>`) and one Swagger 2.0 document (`/openapi/v2`).
//!
//! They follow what kube-apiserver publishes for custom resources: the kind's schema is named after the
//! reversed group (`com.example.wardle.v1alpha1.Flunder`), gains `apiVersion`, `kind` and `metadata`, and carries
//! `x-kubernetes-group-version-kind`; every operation carries `x-kubernetes-action` and the GVK, and lists its
//! query parameters itself (kubectl sends `fieldValidation` only when the PATCH operation lists it, and uses
//! strategic merge patch only when it is offered, which it never is here; for the built-in types, kubectl sends one
//! anyway from its own copy of their patch metadata, and the server takes it). Resources with `/status` and `/scale`
//! subresources get their paths as CRDs do, and a document holds the autoscaling/v1 `Scale` schemas exactly when
//! one of its resources has `/scale`, as kube-openapi includes only the definitions a document refers to. The
//! apimachinery types the documents refer to are in [`meta`], the operations in [`paths`], and the Swagger 2.0
//! specifics in [`v2`].

mod meta;
mod paths;
mod v2;

use serde_json::{json, Map, Value};

pub use self::v2::openapi_v2_protobuf_stub;

use self::meta::{meta_schemas, object_properties, scale_schemas, META};
use self::paths::resource_paths;
use self::v2::schema_v2;
use super::discovery::{etag, KUBERNETES_VERSION};
use apimachinery::scheme::{GroupInfo, ResourceInfo, VersionInfo};

/// The Content-Type to send with a protobuf OpenAPI v2 document. client-go's `OpenAPISchema` asks for
/// [`OPENAPI_V2_PROTOBUF_ACCEPT`] only, but Go's media-type parser rejects the `@` in a response, so kube-openapi
/// answers both spellings with this one.
pub const OPENAPI_V2_PROTOBUF_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The deprecated spelling of [`OPENAPI_V2_PROTOBUF_CONTENT_TYPE`] that client-go sends in `Accept`.
pub const OPENAPI_V2_PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

const V3_REFS: &str = "#/components/schemas/";
const API_CONVENTIONS: &str = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md";
const V2_REFS: &str = "#/definitions/";

/// The key of a group version in the v3 root document: `apis/<group>/<version>`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        return format!("api/{version}");
    }
    format!("apis/{group}/{version}")
}

/// Where a group version's v3 document is served, with its hash: `/openapi/v3/apis/<g>/<v>?hash=<HASH>`. The URL
/// is rooted at `/openapi/v3` even under a tenant prefix: client-go then keeps its own path prefix.
pub fn server_relative_url(group: &str, version: &str, hash: &str) -> String {
    format!("/openapi/v3/{}?hash={hash}", group_version_path(group, version))
}

/// The name of a kind's schema, as for custom resources: the group's labels reversed, then version and kind
/// (`wardle.example.com`, `v1alpha1`, `Flunder` → `com.example.wardle.v1alpha1.Flunder`).
pub fn model_name(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        return format!("io.k8s.api.core.{version}.{kind}");
    }
    if let Some(short) = group.strip_suffix(".k8s.io") {
        return format!(
            "io.k8s.api.{}.{version}.{kind}",
            short.split('.').next().unwrap_or(short)
        );
    }
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The v3 root document: `{"paths": {"apis/<g>/<v>": {"serverRelativeURL": ...}}}` for every served group
/// version. kubectl needs nothing else in it. It builds every group version's document to hash it: cache the
/// result per plugin set rather than calling it per request.
pub fn openapi_v3_root(groups: &[GroupInfo]) -> Value {
    let mut paths = Map::new();
    for group in groups {
        for version in group.versions() {
            if let Some((_, hash)) = openapi_v3_group_version(group, &version) {
                let url = server_relative_url(&group.group, &version, &hash);
                paths.insert(
                    group_version_path(&group.group, &version),
                    json!({ "serverRelativeURL": url }),
                );
            }
        }
    }
    json!({ "paths": paths })
}

/// The v3 document of one group version and its hash (the upper-case hex SHA-512 of its compact JSON, also its
/// ETag), or none when the group does not serve the version.
pub fn openapi_v3_group_version(group: &GroupInfo, version: &str) -> Option<(Value, String)> {
    let served: Vec<(&ResourceInfo, &VersionInfo)> = group.resources_in(version).collect();
    if served.is_empty() {
        return None;
    }
    let mut gvs = vec![(String::new(), "v1".to_string())];
    gvs.extend(group.versions().into_iter().map(|v| (group.group.clone(), v)));
    let mut schemas = meta_schemas(&gvs);
    let mut paths = Map::new();
    if served.iter().any(|(_, v)| v.subresources.scale.is_some()) {
        schemas.extend(scale_schemas());
    }
    for (resource, served_version) in served {
        let object = model_name(&group.group, version, &resource.kind);
        schemas.insert(object.clone(), object_schema(group, version, resource, served_version));
        schemas.insert(format!("{object}List"), list_schema(group, version, resource, &object));
        for path in resource_paths(group, version, resource) {
            paths.insert(path.path.clone(), path.to_v3());
        }
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": info(),
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {"BearerToken": bearer_token()}},
        "security": [{"BearerToken": []}],
    });
    let hash = etag(&doc);
    Some((doc, hash))
}

/// The Swagger 2.0 document served as JSON at `/openapi/v2`: the paths and definitions of every served group
/// version, with the same extensions as the v3 documents.
pub fn openapi_v2(groups: &[GroupInfo]) -> Value {
    let mut gvs = vec![(String::new(), "v1".to_string())];
    for g in groups {
        gvs.extend(g.versions().into_iter().map(|v| (g.group.clone(), v)));
    }
    let mut definitions = Map::new();
    for (name, schema) in meta_schemas(&gvs) {
        definitions.insert(name, schema_v2(&schema));
    }
    let mut paths = Map::new();
    let mut scale = false;
    for group in groups {
        for version in group.versions() {
            for (resource, served_version) in group.resources_in(&version) {
                scale |= served_version.subresources.scale.is_some();
                let object = model_name(&group.group, &version, &resource.kind);
                let schema = object_schema(group, &version, resource, served_version);
                definitions.insert(object.clone(), schema_v2(&schema));
                definitions.insert(
                    format!("{object}List"),
                    schema_v2(&list_schema(group, &version, resource, &object)),
                );
                for path in resource_paths(group, &version, resource) {
                    paths.insert(path.path.clone(), path.to_v2());
                }
            }
        }
    }
    if scale {
        for (name, schema) in scale_schemas() {
            definitions.insert(name, schema_v2(&schema));
        }
    }
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": bearer_token()},
        "security": [{"BearerToken": []}],
    })
}

fn info() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({"title": "wasm-apiserver", "version": format!("v{major}.{minor}.0")})
}

fn bearer_token() -> Value {
    json!({"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"})
}

/// The kind's schema: the plugin's, plus `apiVersion`, `kind`, `metadata` and the GVK extension.
fn object_schema(group: &GroupInfo, version: &str, resource: &ResourceInfo, served: &VersionInfo) -> Value {
    let mut schema = match served.schema.as_ref() {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    schema.entry("type").or_insert_with(|| json!("object"));
    let properties = schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = properties {
        let (api_version, kind) = object_properties();
        props.insert("apiVersion".into(), api_version);
        props.insert("kind".into(), kind);
        let description = format!("Standard object's metadata. More info: {API_CONVENTIONS}#metadata");
        props.insert("metadata".into(), wrap_ref(&format!("{META}ObjectMeta"), &description));
    }
    schema.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([gvk(&group.group, version, &resource.kind)]),
    );
    Value::Object(schema)
}

fn list_schema(group: &GroupInfo, version: &str, resource: &ResourceInfo, object: &str) -> Value {
    let (api_version, kind) = object_properties();
    let list_metadata = format!("Standard list metadata. More info: {API_CONVENTIONS}#types-kinds");
    json!({
        "description": format!("{}List is a list of {}", resource.kind, resource.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": api_version,
            "kind": kind,
            "items": {
                "description": format!("List of {}. More info: {API_CONVENTIONS}", resource.plural),
                "type": "array",
                "items": {"$ref": format!("{V3_REFS}{object}")},
            },
            "metadata": wrap_ref(&format!("{META}ListMeta"), &list_metadata),
        },
        "x-kubernetes-group-version-kind": [gvk(&group.group, version, &format!("{}List", resource.kind))],
    })
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// A v3 reference with a description, wrapped in `allOf` as kube-openapi does.
fn wrap_ref(name: &str, description: &str) -> Value {
    json!({"allOf": [{"$ref": format!("{V3_REFS}{name}")}], "description": description})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::{edit_subresources, wardle};
    use apimachinery::scheme::Subresources;

    const G: &str = "wardle.example.com";

    fn doc(version: &str) -> Value {
        openapi_v3_group_version(&wardle(), version)
            .map(|(d, _)| d)
            .unwrap_or_default()
    }

    fn methods(item: &Value) -> Vec<&str> {
        let all = ["get", "put", "post", "delete", "patch"];
        all.into_iter().filter(|m| item.get(*m).is_some()).collect()
    }

    fn param_names(op: &Value) -> Vec<&str> {
        op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect()
    }

    /// Collects every `$ref` in `value`.
    fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => out.push(r),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn paths_follow_scope_and_verbs() {
        let d = doc("v1alpha1");
        let paths = d["paths"].as_object().cloned().unwrap_or_default();
        let ns = format!("/apis/{G}/v1alpha1/namespaces/{{namespace}}/flunders");
        let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = vec![
            format!("/apis/{G}/v1alpha1/fischers"),
            format!("/apis/{G}/v1alpha1/fischers/{{name}}"),
            format!("/apis/{G}/v1alpha1/flunders"),
            ns.clone(),
            format!("{ns}/{{name}}"),
            format!("{ns}/{{name}}/scale"),
            format!("{ns}/{{name}}/status"),
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(methods(&paths[&ns]), ["get", "post", "delete"]);
        assert_eq!(
            methods(&paths[&format!("{ns}/{{name}}")]),
            ["get", "put", "delete", "patch"]
        );
        assert_eq!(methods(&paths[&format!("/apis/{G}/v1alpha1/flunders")]), ["get"]);
        // Fischer serves create, delete, get, list and watch only.
        assert_eq!(
            methods(&paths[&format!("/apis/{G}/v1alpha1/fischers")]),
            ["get", "post"]
        );
        assert_eq!(
            methods(&paths[&format!("/apis/{G}/v1alpha1/fischers/{{name}}")]),
            ["get", "delete"]
        );

        let item = &paths[&format!("{ns}/{{name}}")];
        assert_eq!(param_names(item), ["name", "namespace", "pretty"]);
        assert_eq!(item["parameters"][0]["in"], "path");
        assert_eq!(item["parameters"][0]["required"], true);
        assert_eq!(item["get"]["x-kubernetes-action"], "get");
        assert_eq!(item["put"]["x-kubernetes-action"], "put");
        assert_eq!(
            item["get"]["operationId"],
            "readWardleExampleComV1alpha1NamespacedFlunder"
        );
        assert_eq!(item["get"]["tags"], json!(["wardleExampleCom_v1alpha1"]));
        let collection = &paths[&ns];
        assert_eq!(collection["post"]["x-kubernetes-action"], "post");
        assert_eq!(collection["delete"]["x-kubernetes-action"], "deletecollection");
        assert_eq!(
            collection["delete"]["operationId"],
            "deleteWardleExampleComV1alpha1CollectionNamespacedFlunder"
        );
        assert!(param_names(&collection["get"]).contains(&"watch"));
        assert!(!param_names(&collection["delete"]).contains(&"watch"));
        assert_eq!(
            collection["get"]["description"],
            "list or watch objects of kind Flunder"
        );
        let all = &paths[&format!("/apis/{G}/v1alpha1/flunders")]["get"];
        assert_eq!(
            all["operationId"],
            "listWardleExampleComV1alpha1FlunderForAllNamespaces"
        );
        assert!(
            all["responses"]["200"]["content"]["application/json;stream=watch"]["schema"]["$ref"]
                .as_str()
                .is_some_and(|r| r.ends_with("com.example.wardle.v1alpha1.FlunderList"))
        );
    }

    #[test]
    fn every_operation_names_its_gvk() {
        let d = doc("v1alpha1");
        for (path, item) in d["paths"].as_object().into_iter().flatten() {
            let kind = if path.contains("fischers") {
                "Fischer"
            } else {
                "Flunder"
            };
            for method in methods(item) {
                let op = &item[method];
                assert_eq!(
                    op["x-kubernetes-group-version-kind"],
                    json!({"group": G, "version": "v1alpha1", "kind": kind})
                );
                assert!(op["x-kubernetes-action"].is_string(), "{method} {path}");
                assert_eq!(op["responses"]["401"]["description"], "Unauthorized");
            }
        }
    }

    #[test]
    fn patch_offers_no_strategic_merge_and_lists_kubectl_params() {
        let d = doc("v1beta1");
        let mut patches = 0;
        for item in d["paths"].as_object().into_iter().flatten().map(|(_, v)| v) {
            let Some(patch) = item.get("patch") else { continue };
            patches += 1;
            let mut content: Vec<&str> = patch["requestBody"]["content"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect();
            content.sort_unstable();
            assert_eq!(
                content,
                [
                    "application/apply-patch+yaml",
                    "application/json-patch+json",
                    "application/merge-patch+json"
                ]
            );
            assert_eq!(patch["requestBody"]["required"], true);
            // What kubectl's query-parameter verifier looks for: the operation's own query parameters.
            for name in ["dryRun", "fieldManager", "fieldValidation", "force"] {
                let p = patch["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|p| p["name"] == name);
                assert_eq!(p.map(|p| &p["in"]), Some(&json!("query")), "{name}");
            }
        }
        // The object's, its status' and its scale's.
        assert_eq!(patches, 3);
        let put = &d["paths"][format!("/apis/{G}/v1beta1/namespaces/{{namespace}}/flunders/{{name}}")]["put"];
        assert_eq!(param_names(put), ["dryRun", "fieldManager", "fieldValidation"]);
    }

    /// The paths kube's CRD OpenAPI builder adds for `subresources.status` and `subresources.scale`.
    #[test]
    fn subresource_paths_follow_kube_crd_builder() {
        let d = doc("v1alpha1");
        let item = format!("/apis/{G}/v1alpha1/namespaces/{{namespace}}/flunders/{{name}}");
        let id = |verb: &str, sub: &str| format!("{verb}WardleExampleComV1alpha1NamespacedFlunder{sub}");
        let flunder = format!("{V3_REFS}com.example.wardle.v1alpha1.Flunder");
        let scale = format!("{V3_REFS}{}", meta::SCALE);
        let patch = format!("{V3_REFS}{META}Patch");
        let main = &d["paths"][&item];
        for (sub, schema) in [("Status", &flunder), ("Scale", &scale)] {
            let lower = sub.to_ascii_lowercase();
            let path = &d["paths"][format!("{item}/{lower}")];
            assert_eq!(methods(path), ["get", "put", "patch"], "{sub}");
            assert_eq!(param_names(path), ["name", "namespace", "pretty"]);
            assert_eq!(path["parameters"][0]["description"], "name of the Flunder");
            for (method, verb, action, text) in [
                ("get", "read", "get", "read"),
                ("put", "replace", "put", "replace"),
                ("patch", "patch", "patch", "partially update"),
            ] {
                let op = &path[method];
                assert_eq!(op["operationId"], json!(id(verb, sub)));
                assert_eq!(op["x-kubernetes-action"], action);
                assert_eq!(
                    op["description"],
                    json!(format!("{text} {lower} of the specified Flunder"))
                );
                assert_eq!(op["tags"], json!(["wardleExampleCom_v1alpha1"]));
                // kube's CRD builder gives every route the custom resource's GVK, /scale included.
                assert_eq!(
                    op["x-kubernetes-group-version-kind"],
                    json!({"group": G, "version": "v1alpha1", "kind": "Flunder"})
                );
                assert_eq!(param_names(op), param_names(&main[method]), "{sub} {method}");
                for media in ["application/json", "application/yaml"] {
                    let response = &op["responses"]["200"]["content"][media]["schema"]["$ref"];
                    assert_eq!(response, &json!(schema), "{sub} {method} {media}");
                }
                let codes: Vec<&String> = op["responses"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                    .collect();
                let main_codes: Vec<&String> = main[method]["responses"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                    .collect();
                assert_eq!(codes, main_codes);
            }
            let body = &path["put"]["requestBody"];
            assert_eq!(body["required"], true);
            assert_eq!(body["content"]["application/json"]["schema"]["$ref"], json!(schema));
            assert_eq!(body["content"]["application/yaml"]["schema"]["$ref"], json!(schema));
            let body = &path["patch"]["requestBody"];
            assert_eq!(body["content"], main["patch"]["requestBody"]["content"]);
            assert_eq!(
                body["content"]["application/merge-patch+json"]["schema"]["$ref"],
                json!(patch)
            );
        }

        // Cluster-scoped, without `Namespaced` in the IDs; no paths for what is not declared.
        let mut g = wardle();
        let status = Subresources {
            status: true,
            ..Subresources::default()
        };
        std::sync::Arc::make_mut(&mut g.resources[1]).set_subresources(&status);
        let d = openapi_v3_group_version(&g, "v1alpha1")
            .map(|(d, _)| d)
            .unwrap_or_default();
        let status = &d["paths"][format!("/apis/{G}/v1alpha1/fischers/{{name}}/status")];
        assert_eq!(param_names(status), ["name", "pretty"]);
        assert_eq!(
            status["patch"]["operationId"],
            "patchWardleExampleComV1alpha1FischerStatus"
        );
        // Fischer itself serves neither update nor patch: its status does.
        assert_eq!(methods(status), ["get", "put", "patch"]);
        assert!(d["paths"]
            .get(format!("/apis/{G}/v1alpha1/fischers/{{name}}/scale"))
            .is_none());
        let sub_paths = d["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(p, _)| p.ends_with("/status") || p.ends_with("/scale"));
        assert_eq!(sub_paths.count(), 3);
        let mut none = wardle();
        std::sync::Arc::make_mut(&mut none.resources[0]).set_subresources(&Subresources::default());
        let d = openapi_v3_group_version(&none, "v1alpha1")
            .map(|(d, _)| d)
            .unwrap_or_default();
        assert_eq!(d["paths"].as_object().map(Map::len), Some(5));
    }

    /// kube-openapi includes the definitions a document refers to: the Scale schemas only with a `/scale`.
    #[test]
    fn scale_schemas_only_when_a_resource_scales() {
        let scale_names = [
            meta::SCALE.to_string(),
            format!("{}Spec", meta::SCALE),
            format!("{}Status", meta::SCALE),
        ];
        let d = doc("v1beta1");
        let schemas = &d["components"]["schemas"];
        for name in &scale_names {
            assert!(schemas.get(name).is_some(), "{name}");
        }
        let scale = &schemas[meta::SCALE];
        assert_eq!(
            scale["x-kubernetes-group-version-kind"],
            json!([{"group": "autoscaling", "version": "v1", "kind": "Scale"}])
        );
        assert_eq!(
            scale["description"],
            "Scale represents a scaling request for a resource."
        );
        assert_eq!(
            scale["properties"]["metadata"]["allOf"][0]["$ref"],
            json!(format!("{V3_REFS}{META}ObjectMeta"))
        );
        assert_eq!(
            scale["properties"]["spec"]["allOf"][0]["$ref"],
            json!(format!("{V3_REFS}{}Spec", meta::SCALE))
        );
        for field in ["apiVersion", "kind"] {
            assert_eq!(scale["properties"][field]["type"], "string");
        }
        let status = &schemas[format!("{}Status", meta::SCALE)];
        assert_eq!(status["required"], json!(["replicas"]));
        assert_eq!(status["properties"]["replicas"]["format"], "int32");
        assert_eq!(status["properties"]["selector"]["type"], "string");
        assert_eq!(
            schemas[format!("{}Spec", meta::SCALE)]["properties"]["replicas"]["type"],
            "integer"
        );

        let mut g = wardle();
        edit_subresources(std::sync::Arc::make_mut(&mut g.resources[0]), |s| s.scale = None);
        for version in ["v1alpha1", "v1beta1"] {
            let d = openapi_v3_group_version(&g, version)
                .map(|(d, _)| d)
                .unwrap_or_default();
            for name in &scale_names {
                assert!(d["components"]["schemas"].get(name).is_none(), "{version} {name}");
            }
        }
        let v2 = openapi_v2(std::slice::from_ref(&g));
        for name in &scale_names {
            assert!(v2["definitions"].get(name).is_none(), "{name}");
        }
        // A scale on a resource another version serves does not bring them: Fischer is served in v1alpha1 only.
        let mut g = wardle();
        edit_subresources(std::sync::Arc::make_mut(&mut g.resources[0]), |s| s.scale = None);
        let scale = wardle().resources[0].versions[0].subresources.scale.clone();
        edit_subresources(std::sync::Arc::make_mut(&mut g.resources[1]), |s| {
            s.scale = scale.clone()
        });
        let beta = openapi_v3_group_version(&g, "v1beta1")
            .map(|(d, _)| d)
            .unwrap_or_default();
        assert!(beta["components"]["schemas"].get(meta::SCALE).is_none());
        let alpha = openapi_v3_group_version(&g, "v1alpha1")
            .map(|(d, _)| d)
            .unwrap_or_default();
        assert!(alpha["components"]["schemas"].get(meta::SCALE).is_some());
        assert!(alpha["paths"]
            .get(format!("/apis/{G}/v1alpha1/fischers/{{name}}/scale"))
            .is_some());
    }

    #[test]
    fn refs_resolve_and_schemas_carry_gvk() {
        for version in ["v1alpha1", "v1beta1"] {
            let d = doc(version);
            let schemas = &d["components"]["schemas"];
            let mut all = Vec::new();
            refs(&d, &mut all);
            assert!(!all.is_empty());
            // The subresources' bodies and responses, and the Scale schemas' own references, are among them.
            for name in [
                meta::SCALE,
                &format!("{}Spec", meta::SCALE),
                &format!("{}Status", meta::SCALE),
            ] {
                assert!(all.contains(&format!("{V3_REFS}{name}").as_str()), "{version}: {name}");
            }
            for r in all {
                let name = r.strip_prefix(V3_REFS).unwrap_or_else(|| panic!("bad ref {r}"));
                assert!(schemas.get(name).is_some(), "{version}: dangling {r}");
            }
            let flunder = &schemas[format!("com.example.wardle.{version}.Flunder")];
            assert_eq!(
                flunder["x-kubernetes-group-version-kind"],
                json!([{"group": G, "version": version, "kind": "Flunder"}])
            );
            for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
                assert!(flunder["properties"].get(field).is_some(), "{field}");
            }
            let list = &schemas[format!("com.example.wardle.{version}.FlunderList")];
            assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "FlunderList");
        }
        assert!(doc("v1beta1")["components"]["schemas"]
            .get("com.example.wardle.v1beta1.Fischer")
            .is_none());
        assert_eq!(
            doc("v1beta1")["components"]["schemas"]["com.example.wardle.v1beta1.Flunder"]["description"],
            "A Flunder."
        );
    }

    /// Follows what `kubectl explain flunders.metadata` does with the document.
    #[test]
    fn explain_finds_kind_and_metadata_fields() {
        let d = doc("v1alpha1");
        let op = &d["paths"][format!("/apis/{G}/v1alpha1/namespaces/{{namespace}}/flunders")]["get"];
        let wanted = &op["x-kubernetes-group-version-kind"];
        let schemas = d["components"]["schemas"].as_object().cloned().unwrap_or_default();
        let found: Vec<&String> = schemas
            .iter()
            .filter(|(_, s)| {
                s["x-kubernetes-group-version-kind"]
                    .as_array()
                    .is_some_and(|l| l.contains(wanted))
            })
            .map(|(name, _)| name)
            .collect();
        assert_eq!(found, ["com.example.wardle.v1alpha1.Flunder"]);
        let metadata = &schemas["com.example.wardle.v1alpha1.Flunder"]["properties"]["metadata"];
        let target = metadata["allOf"][0]["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix(V3_REFS))
            .unwrap_or_default();
        let meta = &schemas[target]["properties"];
        for field in [
            "name",
            "namespace",
            "labels",
            "annotations",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "ownerReferences",
            "finalizers",
            "generateName",
        ] {
            assert!(
                meta[field]["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{field}"
            );
        }
        assert_eq!(meta["ownerReferences"]["x-kubernetes-list-map-keys"], json!(["uid"]));
        assert_eq!(meta["labels"]["additionalProperties"]["type"], "string");
    }

    #[test]
    fn hash_is_stable_and_follows_changes() {
        let g = wardle();
        let (d1, h1) = openapi_v3_group_version(&g, "v1alpha1").unwrap_or_default();
        let (_, h2) = openapi_v3_group_version(&g, "v1alpha1").unwrap_or_default();
        assert_eq!(h1, h2);
        assert_eq!(h1, etag(&d1));
        assert_eq!(h1.len(), 128);
        let mut changed = wardle();
        std::sync::Arc::make_mut(&mut std::sync::Arc::make_mut(&mut changed.resources[1]).versions[0].schema)
            ["properties"]["extra"] = json!({"type": "string"});
        let (_, h3) = openapi_v3_group_version(&changed, "v1alpha1").unwrap_or_default();
        assert_ne!(h1, h3);
        let root = openapi_v3_root(std::slice::from_ref(&g));
        assert_eq!(
            root["paths"][format!("apis/{G}/v1alpha1")]["serverRelativeURL"],
            json!(format!("/openapi/v3/apis/{G}/v1alpha1?hash={h1}"))
        );
        assert_eq!(root["paths"].as_object().map(Map::len), Some(2));
        assert!(openapi_v3_group_version(&g, "v1").is_none());
        let mut unserved = wardle();
        unserved
            .resources
            .iter_mut()
            .flat_map(|r| std::sync::Arc::make_mut(r).versions.iter_mut())
            .for_each(|v| v.served = v.name != "v1beta1");
        assert!(openapi_v3_group_version(&unserved, "v1beta1").is_none());
    }

    #[test]
    fn swagger_v2_document() {
        let d = openapi_v2(&[wardle()]);
        assert_eq!(d["swagger"], "2.0");
        let defs = &d["definitions"];
        let mut all = Vec::new();
        refs(&d, &mut all);
        for r in all {
            let name = r.strip_prefix(V2_REFS).unwrap_or_else(|| panic!("bad ref {r}"));
            assert!(defs.get(name).is_some(), "dangling {r}");
        }
        assert!(!serde_json::to_string(&d).unwrap_or_default().contains("allOf"));
        assert_eq!(
            defs["com.example.wardle.v1beta1.Flunder"]["x-kubernetes-group-version-kind"][0]["version"],
            "v1beta1"
        );
        assert_eq!(
            defs[format!("{META}ObjectMeta")]["properties"]["creationTimestamp"]["$ref"],
            json!(format!("{V2_REFS}{META}Time"))
        );
        let patch = &d["paths"][format!("/apis/{G}/v1alpha1/namespaces/{{namespace}}/flunders/{{name}}")]["patch"];
        assert_eq!(patch["consumes"], json!(paths::PATCH_TYPES));
        let body = patch["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["in"] == "body");
        assert_eq!(
            body.map(|b| &b["schema"]["$ref"]),
            Some(&json!(format!("{V2_REFS}{META}Patch")))
        );
        let field_validation = patch["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "fieldValidation");
        assert_eq!(field_validation.map(|p| &p["type"]), Some(&json!("string")));
        // The subresources, in every served version.
        for version in ["v1alpha1", "v1beta1"] {
            let item = format!("/apis/{G}/{version}/namespaces/{{namespace}}/flunders/{{name}}");
            let id_version = if version == "v1alpha1" { "V1alpha1" } else { "V1beta1" };
            for (sub, schema) in [
                ("status", format!("com.example.wardle.{version}.Flunder")),
                ("scale", meta::SCALE.to_string()),
            ] {
                let path = &d["paths"][format!("{item}/{sub}")];
                assert_eq!(methods(path), ["get", "put", "patch"], "{version} {sub}");
                let title = if sub == "status" { "Status" } else { "Scale" };
                assert_eq!(
                    path["get"]["operationId"],
                    json!(format!("readWardleExampleCom{id_version}NamespacedFlunder{title}"))
                );
                assert_eq!(
                    path["get"]["responses"]["200"]["schema"]["$ref"],
                    json!(format!("{V2_REFS}{schema}"))
                );
                let body = |op: &str| {
                    let params = path[op]["parameters"].as_array().cloned().unwrap_or_default();
                    params
                        .into_iter()
                        .find(|p| p["in"] == "body")
                        .map(|b| b["schema"]["$ref"].clone())
                };
                assert_eq!(body("put"), Some(json!(format!("{V2_REFS}{schema}"))));
                assert_eq!(body("patch"), Some(json!(format!("{V2_REFS}{META}Patch"))));
                assert_eq!(path["patch"]["consumes"], json!(paths::PATCH_TYPES));
                assert_eq!(path["put"]["consumes"], json!(["application/json", "application/yaml"]));
                assert_eq!(path["put"]["x-kubernetes-action"], "put");
            }
        }
        assert!(d["paths"]
            .get(format!("/apis/{G}/v1alpha1/fischers/{{name}}/status"))
            .is_none());
        let scale = &defs[meta::SCALE];
        assert_eq!(scale["x-kubernetes-group-version-kind"][0]["group"], "autoscaling");
        assert_eq!(
            scale["properties"]["metadata"]["$ref"],
            json!(format!("{V2_REFS}{META}ObjectMeta"))
        );
        assert_eq!(
            scale["properties"]["status"]["$ref"],
            json!(format!("{V2_REFS}{}Status", meta::SCALE))
        );
        let delete_options = defs[format!("{META}DeleteOptions")]["x-kubernetes-group-version-kind"]
            .as_array()
            .map(Vec::len);
        assert_eq!(delete_options, Some(3));
    }
}
