//! The operations of a resource's paths, built once and rendered in OpenAPI v3 or Swagger 2.0: which verbs
//! become which operations, their query parameters, request bodies and responses, operation IDs and tags, as
//! kube-apiserver's installer lays them out. The `/status` and `/scale` subresources follow kube's OpenAPI builder
//! for CRDs (`apiextensions-apiserver/pkg/controller/openapi/builder`): read, replace and patch operations named
//! after the subresource (`readWardleExampleComV1alpha1NamespacedFlunderStatus`), carrying the kind's GVK; `/status`
//! reads and writes the object, `/scale` an autoscaling/v1 `Scale`.

use serde_json::{json, Map, Value};

use super::meta::{param_description, META, SCALE};
use super::{gvk, model_name, V2_REFS, V3_REFS};
use apimachinery::scheme::{GroupInfo, ResourceInfo, SUBRESOURCE_VERBS};

const JSON_YAML: &[&str] = &["application/json", "application/yaml"];
const JSON_YAML_WATCH: &[&str] = &["application/json", "application/yaml", "application/json;stream=watch"];
pub(super) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];
const LIST: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const DELETE: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const WRITE: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];

/// One query or path parameter of an operation.
struct Param {
    name: &'static str,
    location: &'static str,
    description: String,
}

/// One operation, independent of the OpenAPI version it is rendered in.
struct Operation {
    method: &'static str,
    action: &'static str,
    id: String,
    description: String,
    params: Vec<Param>,
    /// The request body: schema name, content types, whether it is required.
    body: Option<(String, &'static [&'static str], bool)>,
    /// The response codes; every one returns `response`.
    codes: &'static [(u16, &'static str)],
    response: String,
    produces: &'static [&'static str],
}

/// A path with its shared parameters and operations.
pub(super) struct PathItem {
    /// The URL path, such as `/apis/<g>/<v>/namespaces/{namespace}/<plural>`.
    pub(super) path: String,
    params: Vec<Param>,
    ops: Vec<Operation>,
    gvk: Value,
    tag: String,
}

/// The paths of one resource in one version, for the verbs it serves: the item (get, update, patch, delete), the
/// collection (list, create, deletecollection) and, for namespaced resources, the list across namespaces.
/// Watches are lists with `?watch=true`. Paths without operations are left out. The item's `/status` and `/scale`
/// (get, update, patch) are there when the resource declares them.
pub(super) fn resource_paths(group: &GroupInfo, version: &str, resource: &ResourceInfo) -> Vec<PathItem> {
    let ops = ResourceOps::new(group, version, resource);
    let prefix = format!("/{}", super::group_version_path(&group.group, version));
    let (collection, mut scope_params) = if resource.namespaced {
        let namespace = path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        );
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", resource.plural),
            vec![namespace],
        )
    } else {
        (format!("{prefix}/{}", resource.plural), Vec::new())
    };
    // The item paths' parameters, as kube-apiserver's CRD builder gives them, subresources included.
    let item_params = || {
        let mut params = vec![path_param("name", &format!("name of the {}", resource.kind))];
        params.extend(scope_params.iter().map(|p| path_param(p.name, &p.description)));
        params.push(pretty());
        params
    };
    let item = format!("{collection}/{{name}}");
    let object = ops.object_target();
    let mut out = vec![ops.path(
        item.clone(),
        item_params(),
        &ops.served(&["delete", "get", "patch", "update"]),
        &object,
    )];
    let subresources = resource.subresources(version);
    if subresources.status {
        let status = ops.subresource_target("status", ops.object.clone());
        out.push(ops.path(format!("{item}/status"), item_params(), &SUBRESOURCE_VERBS, &status));
    }
    if subresources.scale.is_some() {
        let scale = ops.subresource_target("scale", SCALE.to_string());
        out.push(ops.path(format!("{item}/scale"), item_params(), &SUBRESOURCE_VERBS, &scale));
    }
    scope_params.push(pretty());
    let collection_verbs = ops.served(&["create", "deletecollection", "list"]);
    out.push(ops.path(collection, scope_params, &collection_verbs, &object));
    if resource.namespaced && resource.has_verb("list") {
        let mut all = ops.path(format!("{prefix}/{}", resource.plural), vec![pretty()], &[], &object);
        all.ops.push(ops.list(ops.id("list", "", "ForAllNamespaces")));
        out.push(all);
    }
    out.retain(|p| !p.ops.is_empty());
    out
}

/// What the item operations of a path read and write: the object itself, or one of its subresources.
struct Target {
    /// The schema of the responses and of the request bodies other than patches.
    schema: String,
    /// The subresource as operation IDs end in (`Status`, `Scale`), or empty for the object.
    id_suffix: String,
    /// The subresource as descriptions name it (` status of`), or empty for the object.
    description: String,
}

/// Builds the operations of one resource in one version.
struct ResourceOps<'a> {
    group: &'a str,
    version: &'a str,
    resource: &'a ResourceInfo,
    /// The schema names of the object, its list, `Status`, `DeleteOptions` and `Patch`.
    object: String,
    list: String,
    status: String,
    delete_options: String,
    patch: String,
    /// `Namespaced` for namespaced resources, as operation IDs spell the scope.
    scope: &'static str,
}

impl<'a> ResourceOps<'a> {
    fn new(group: &'a GroupInfo, version: &'a str, resource: &'a ResourceInfo) -> Self {
        let object = model_name(&group.group, version, &resource.kind);
        ResourceOps {
            group: &group.group,
            version,
            resource,
            list: format!("{object}List"),
            object,
            status: format!("{META}Status"),
            delete_options: format!("{META}DeleteOptions"),
            patch: format!("{META}Patch"),
            scope: if resource.namespaced { "Namespaced" } else { "" },
        }
    }

    /// Those of `verbs` the resource serves.
    fn served(&self, verbs: &[&'static str]) -> Vec<&'static str> {
        verbs.iter().copied().filter(|v| self.resource.has_verb(v)).collect()
    }

    /// The object itself as the target of item operations.
    fn object_target(&self) -> Target {
        Target {
            schema: self.object.clone(),
            id_suffix: String::new(),
            description: String::new(),
        }
    }

    /// A subresource (`status`, `scale`) whose item operations read and write `schema`, named as kube's CRD builder
    /// names them: the subresource title-cased at the end of operation IDs, `<verb> <subresource> of the specified
    /// <Kind>` in descriptions.
    fn subresource_target(&self, name: &str, schema: String) -> Target {
        let mut chars = name.chars();
        let title: String = chars
            .next()
            .map(|c| c.to_ascii_uppercase())
            .into_iter()
            .chain(chars)
            .collect();
        Target {
            schema,
            id_suffix: title,
            description: format!(" {name} of"),
        }
    }

    /// A path with the operations of `verbs`, the item ones reading and writing `target`.
    fn path(&self, path: String, params: Vec<Param>, verbs: &[&str], target: &Target) -> PathItem {
        let ops = verbs.iter().filter_map(|v| self.operation(v, target)).collect();
        PathItem {
            path,
            params,
            ops,
            gvk: gvk(self.group, self.version, &self.resource.kind),
            tag: format!(
                "{}_{}",
                operation_id_part(self.group, false),
                operation_id_part(self.version, false)
            ),
        }
    }

    /// An operation ID as kube-apiserver builds it: `listWardleExampleComV1alpha1NamespacedFlunder`.
    fn id(&self, verb: &str, infix: &str, suffix: &str) -> String {
        let (group, version) = (
            operation_id_part(self.group, true),
            operation_id_part(self.version, true),
        );
        format!("{verb}{group}{version}{infix}{}{suffix}", self.resource.kind)
    }

    fn list(&self, id: String) -> Operation {
        let watch = if self.resource.has_verb("watch") {
            "list or watch"
        } else {
            "list"
        };
        Operation {
            method: "get",
            action: "list",
            id,
            description: format!("{watch} objects of kind {}", self.resource.kind),
            params: query(LIST),
            body: None,
            codes: &[(200, "OK")],
            response: self.list.clone(),
            produces: JSON_YAML_WATCH,
        }
    }

    /// The operation serving a Kubernetes verb on the collection or item path; get, update and patch on an item
    /// path read and write `target`.
    fn operation(&self, verb: &str, target: &Target) -> Option<Operation> {
        let (kind, scope) = (&self.resource.kind, self.scope);
        let (sub, suffix) = (&target.description, target.id_suffix.as_str());
        // What most operations share: no parameters or body, 200 with the object.
        let base = |method, action, id, description| Operation {
            method,
            action,
            id,
            description,
            params: Vec::new(),
            body: None,
            codes: &[(200, "OK")],
            response: self.object.clone(),
            produces: JSON_YAML,
        };
        let delete_body = Some((self.delete_options.clone(), JSON_YAML, false));
        Some(match verb {
            "list" => self.list(self.id("list", scope, "")),
            "create" => Operation {
                params: query(WRITE),
                body: Some((self.object.clone(), JSON_YAML, true)),
                codes: &[(200, "OK"), (201, "Created"), (202, "Accepted")],
                ..base(
                    "post",
                    "post",
                    self.id("create", scope, ""),
                    format!("create {} {kind}", article(kind)),
                )
            },
            "deletecollection" => {
                let list_params = LIST.iter().filter(|p| !matches!(**p, "watch" | "allowWatchBookmarks"));
                let names: Vec<&'static str> = DELETE.iter().chain(list_params).copied().collect();
                let id = self.id("delete", &format!("Collection{scope}"), "");
                Operation {
                    params: query(&names),
                    body: delete_body,
                    response: self.status.clone(),
                    ..base("delete", "deletecollection", id, format!("delete collection of {kind}"))
                }
            }
            "get" => Operation {
                response: target.schema.clone(),
                ..base(
                    "get",
                    "get",
                    self.id("read", scope, suffix),
                    format!("read{sub} the specified {kind}"),
                )
            },
            "update" => Operation {
                params: query(WRITE),
                body: Some((target.schema.clone(), JSON_YAML, true)),
                codes: &[(200, "OK"), (201, "Created")],
                response: target.schema.clone(),
                ..base(
                    "put",
                    "put",
                    self.id("replace", scope, suffix),
                    format!("replace{sub} the specified {kind}"),
                )
            },
            "patch" => Operation {
                params: query(PATCH),
                body: Some((self.patch.clone(), PATCH_TYPES, true)),
                codes: &[(200, "OK"), (201, "Created")],
                response: target.schema.clone(),
                ..base(
                    "patch",
                    "patch",
                    self.id("patch", scope, suffix),
                    format!("partially update{sub} the specified {kind}"),
                )
            },
            "delete" => Operation {
                params: query(DELETE),
                body: delete_body,
                codes: &[(200, "OK"), (202, "Accepted")],
                response: self.status.clone(),
                ..base(
                    "delete",
                    "delete",
                    self.id("delete", scope, ""),
                    format!("delete {} {kind}", article(kind)),
                )
            },
            _ => return None,
        })
    }
}

fn pretty() -> Param {
    Param {
        name: "pretty",
        location: "query",
        description: param_description("pretty").into(),
    }
}

fn query(names: &[&'static str]) -> Vec<Param> {
    names
        .iter()
        .map(|&name| Param {
            name,
            location: "query",
            description: param_description(name).into(),
        })
        .collect()
}

fn path_param(name: &'static str, description: &str) -> Param {
    Param {
        name,
        location: "path",
        description: description.into(),
    }
}

fn param_type(name: &str) -> &'static str {
    match name {
        "allowWatchBookmarks"
        | "sendInitialEvents"
        | "watch"
        | "force"
        | "orphanDependents"
        | "ignoreStoreReadErrorWithClusterBreakingPotential" => "boolean",
        "limit" | "timeoutSeconds" | "gracePeriodSeconds" => "integer",
        _ => "string",
    }
}

impl Param {
    fn to_v3(&self) -> Value {
        let mut p = json!({"name": self.name, "in": self.location, "description": self.description,
            "schema": {"type": param_type(self.name), "uniqueItems": true}});
        if self.location == "path" {
            p["required"] = json!(true);
        }
        p
    }

    fn to_v2(&self) -> Value {
        let mut p = json!({"name": self.name, "in": self.location, "description": self.description,
            "type": param_type(self.name), "uniqueItems": true});
        if self.location == "path" {
            p["required"] = json!(true);
        }
        p
    }
}

impl PathItem {
    /// The OpenAPI v3 path item.
    pub(super) fn to_v3(&self) -> Value {
        let mut item = Map::new();
        item.insert("parameters".into(), self.params.iter().map(Param::to_v3).collect());
        for op in &self.ops {
            let media = |types: &[&str], schema: &str| -> Value {
                types
                    .iter()
                    .map(|t| (t.to_string(), json!({"schema": {"$ref": format!("{V3_REFS}{schema}")}})))
                    .collect::<Map<_, _>>()
                    .into()
            };
            let mut responses: Map<String, Value> = op
                .codes
                .iter()
                .map(|(code, text)| {
                    (
                        code.to_string(),
                        json!({"description": text, "content": media(op.produces, &op.response)}),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            let mut o = self.operation_common(op);
            o.insert("parameters".into(), op.params.iter().map(Param::to_v3).collect());
            if let Some((schema, types, required)) = &op.body {
                o.insert(
                    "requestBody".into(),
                    json!({"content": media(types, schema), "required": required}),
                );
            }
            o.insert("responses".into(), Value::Object(responses));
            item.insert(op.method.into(), Value::Object(o));
        }
        Value::Object(item)
    }

    /// The Swagger 2.0 path item.
    pub(super) fn to_v2(&self) -> Value {
        let mut item = Map::new();
        item.insert("parameters".into(), self.params.iter().map(Param::to_v2).collect());
        for op in &self.ops {
            let schema = |name: &str| json!({"$ref": format!("{V2_REFS}{name}")});
            let mut responses: Map<String, Value> = op
                .codes
                .iter()
                .map(|(code, text)| {
                    (
                        code.to_string(),
                        json!({"description": text, "schema": schema(&op.response)}),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            let mut params: Vec<Value> = op.params.iter().map(Param::to_v2).collect();
            let mut o = self.operation_common(op);
            if let Some((name, types, required)) = &op.body {
                params.push(json!({"name": "body", "in": "body", "required": required, "schema": schema(name)}));
                o.insert("consumes".into(), json!(types));
            }
            o.insert("produces".into(), json!(op.produces));
            o.insert("schemes".into(), json!(["https"]));
            o.insert("parameters".into(), Value::Array(params));
            o.insert("responses".into(), Value::Object(responses));
            item.insert(op.method.into(), Value::Object(o));
        }
        Value::Object(item)
    }

    fn operation_common(&self, op: &Operation) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("tags".into(), json!([self.tag]));
        o.insert("description".into(), json!(op.description));
        o.insert("operationId".into(), json!(op.id));
        o.insert("x-kubernetes-action".into(), json!(op.action));
        o.insert("x-kubernetes-group-version-kind".into(), self.gvk.clone());
        o
    }
}

/// `a` or `an`, as kube-apiserver chooses for operation descriptions.
fn article(noun: &str) -> &'static str {
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// A group or version as kube-apiserver writes it in operation IDs and tags: separators removed, the next letter
/// capitalised (`wardle.example.com` → `WardleExampleCom`, or `wardleExampleCom` for tags).
fn operation_id_part(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut upper = capitalize_first;
    for c in s.trim_end_matches(".k8s.io").chars() {
        if c.is_ascii_alphanumeric() {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kube_apiserver() {
        assert_eq!(
            model_name("wardle.example.com", "v1", "Flunder"),
            "com.example.wardle.v1.Flunder"
        );
        assert_eq!(operation_id_part("wardle.example.com", true), "WardleExampleCom");
        assert_eq!(operation_id_part("apps.k8s.io", true), "Apps");
        assert_eq!(operation_id_part("v1beta1", false), "v1beta1");
        assert_eq!(article("Ingress"), "an");
        assert_eq!(article("Flunder"), "a");
    }

    #[test]
    fn subresource_operations_are_named_as_for_crds() {
        let g = crate::discovery::tests::wardle();
        let paths = resource_paths(&g, "v1beta1", &g.resources[0]);
        let item = "/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders/{name}";
        for (sub, schema) in [("status", "com.example.wardle.v1beta1.Flunder"), ("scale", SCALE)] {
            let path = paths.iter().find(|p| p.path == format!("{item}/{sub}"));
            let ops: Vec<(&str, &str, &str, &str)> = path
                .into_iter()
                .flat_map(|p| &p.ops)
                .map(|o| (o.method, o.id.as_str(), o.description.as_str(), o.response.as_str()))
                .collect();
            let title = if sub == "status" { "Status" } else { "Scale" };
            let id = |verb: &str| format!("{verb}WardleExampleComV1beta1NamespacedFlunder{title}");
            let (read, replace, patch) = (id("read"), id("replace"), id("patch"));
            let text = |verb: &str| format!("{verb} {sub} of the specified Flunder");
            let (read_text, replace_text, patch_text) = (text("read"), text("replace"), text("partially update"));
            assert_eq!(
                ops,
                [
                    ("get", read.as_str(), read_text.as_str(), schema),
                    ("patch", patch.as_str(), patch_text.as_str(), schema),
                    ("put", replace.as_str(), replace_text.as_str(), schema),
                ]
            );
        }
        // Fischer declares no subresources.
        let fischer = resource_paths(&g, "v1alpha1", &g.resources[1]);
        assert!(fischer
            .iter()
            .all(|p| p.path.ends_with("fischers") || p.path.ends_with("{name}")));
    }
}
