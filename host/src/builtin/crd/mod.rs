//! CustomResourceDefinition files: an `apiextensions.k8s.io/v1` CRD in YAML (or JSON) dropped into the plugin
//! directory is served with no code, as kube-apiserver serves it: its versions (served, storage, deprecated, with
//! `None` conversion: objects convert by changing `apiVersion`), its schema (published, pruned and enforced as any
//! plugin's), printer columns, `/status` and `/scale`, selectable fields, categories and short names.
//!
//! It becomes a plugin with a native strategy ([`CrdStrategy`]), loaded, replaced and removed with the directory
//! like a `.wasm` file.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};

use super::{column, name_column, NativeStrategy};
use crate::plugins::plugin::{Exports, Plugin, PluginError};
use crate::plugins::scheme::{
    json_path_fields, Column, GroupInfo, ResourceInfo, ScalePaths, Subresources, VersionInfo,
};

/// Loads a CRD file's text into a plugin named `name`.
pub fn load(name: &str, text: &str) -> anyhow::Result<Plugin> {
    let crd: Value = serde_yaml::from_str(text).context("the file is not YAML")?;
    let (group, resource, columns, selectable) = parse(&crd)?;
    let strategy = CrdStrategy {
        group: group.clone(),
        plural: resource.plural.clone(),
        columns: columns.iter().map(|(_, path)| path.clone()).collect(),
        selectable: selectable.clone(),
    };
    let mut table = vec![name_column()];
    table.extend(columns.into_iter().map(|(c, _)| c));
    let exports = Exports {
        create: true,
        update: true,
        delete: true,
        lister: true,
        table: true,
        converter: true,
        ..Exports::default()
    };
    let plural = resource.plural.clone();
    let group_info = GroupInfo {
        group,
        resources: vec![resource],
        reads: Vec::new(),
    };
    Ok(Plugin::native(
        name,
        group_info,
        exports,
        vec![(plural.clone(), table)],
        vec![(plural, selectable)],
        Arc::new(strategy),
    ))
}

/// A string field of a JSON object, or the empty string.
fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The columns (with their JSON paths) and selectable fields of a CRD.
type Parsed = (String, ResourceInfo, Vec<(Column, String)>, Vec<String>);

/// Reads and checks a CRD as kube's CRD validation would (the parts the host relies on).
fn parse(crd: &Value) -> anyhow::Result<Parsed> {
    if text(crd, "/apiVersion") != "apiextensions.k8s.io/v1" || text(crd, "/kind") != "CustomResourceDefinition" {
        bail!(
            "not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion {:?}, kind {:?})",
            text(crd, "/apiVersion"),
            text(crd, "/kind")
        );
    }
    let group = text(crd, "/spec/group").to_owned();
    let plural = text(crd, "/spec/names/plural").to_owned();
    let kind = text(crd, "/spec/names/kind").to_owned();
    if group.is_empty() || !group.contains('.') {
        bail!("spec.group {group:?} must be a domain name with at least one dot");
    }
    if plural.is_empty() || kind.is_empty() {
        bail!("spec.names.plural and spec.names.kind are required");
    }
    let name = text(crd, "/metadata/name");
    if name != format!("{plural}.{group}") {
        bail!("metadata.name {name:?} must be spec.names.plural + \".\" + spec.group ({plural}.{group})");
    }
    let namespaced = match text(crd, "/spec/scope") {
        "Namespaced" => true,
        "Cluster" => false,
        other => bail!("spec.scope {other:?} must be Namespaced or Cluster"),
    };
    match text(crd, "/spec/conversion/strategy") {
        "" | "None" => {}
        other => bail!("spec.conversion.strategy {other:?} is not supported: only None (a plugin converts with code)"),
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| anyhow!("spec.versions must list at least one version"))?;
    let mut infos = Vec::new();
    let mut subresources = Subresources::default();
    let mut columns = Vec::new();
    let mut selectable = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vname = text(v, "/name");
        if vname.is_empty() {
            bail!("spec.versions[{i}].name is required");
        }
        let mut schema = v
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .ok_or_else(|| anyhow!("spec.versions[{i}].schema.openAPIV3Schema is required"))?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            bail!("spec.versions[{i}].schema.openAPIV3Schema must be of type object");
        }
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for host_owned in ["apiVersion", "kind", "metadata"] {
                props.remove(host_owned);
            }
        }
        let storage = v.get("storage").and_then(Value::as_bool).unwrap_or(false);
        infos.push(VersionInfo {
            name: vname.to_owned(),
            served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
            storage,
            deprecated: v.get("deprecated").and_then(Value::as_bool).unwrap_or(false),
            deprecation_warning: v.get("deprecationWarning").and_then(Value::as_str).map(str::to_owned),
            schema: schema.into(),
        });
        // What the host keeps per resource (subresources, columns, selectable fields) comes from the storage
        // version; kube lets them differ per version.
        if storage {
            subresources.status = v.pointer("/subresources/status").is_some();
            if let Some(scale) = v.pointer("/subresources/scale") {
                let paths = ScalePaths {
                    spec_replicas: text(scale, "/specReplicasPath").to_owned(),
                    status_replicas: text(scale, "/statusReplicasPath").to_owned(),
                    label_selector: scale
                        .get("labelSelectorPath")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                };
                if let Some(problem) = paths.problem() {
                    bail!("spec.versions[{i}].subresources.scale: {problem}");
                }
                subresources.scale = Some(paths);
            }
            for c in v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let path = text(c, "/jsonPath").to_owned();
                let cname = text(c, "/name");
                if cname.is_empty() || path.is_empty() {
                    bail!("spec.versions[{i}].additionalPrinterColumns: each needs a name and a jsonPath");
                }
                let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
                columns.push((
                    column(
                        cname,
                        c.get("type").and_then(Value::as_str).unwrap_or("string"),
                        text(c, "/format"),
                        text(c, "/description"),
                        i32::try_from(priority).unwrap_or(0),
                    ),
                    path,
                ));
            }
            for f in v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let path = text(f, "/jsonPath");
                let fields = json_path_fields(path)
                    .ok_or_else(|| anyhow!("spec.versions[{i}].selectableFields: {path:?} is not a JSON path"))?;
                selectable.push(fields.join("."));
            }
        }
    }
    if infos.iter().filter(|v| v.storage).count() != 1 {
        bail!("exactly one version must be the storage version");
    }
    if columns.is_empty() {
        columns.push((
            column(
                "Age",
                "date",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ),
            ".metadata.creationTimestamp".to_owned(),
        ));
    }
    let singular = match text(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    let resource = ResourceInfo {
        kind,
        plural,
        singular,
        short_names: strings(crd, "/spec/names/shortNames"),
        categories: strings(crd, "/spec/names/categories"),
        namespaced,
        versions: infos,
        verbs: Vec::new(),
        subresources,
    };
    Ok((group, resource, columns, selectable))
}

/// The value at a printer column's or selectable field's JSON path: `.a.b`, with `[n]` indices; none for what the
/// path does not reach (and for JSONPath filters, which are not evaluated).
fn at_json_path<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut at = obj;
    for segment in path.strip_prefix('.')?.split('.') {
        let (field, indices) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !field.is_empty() {
            at = at.get(field)?;
        }
        for index in indices.split('[').skip(1) {
            let n: usize = index.strip_suffix(']')?.parse().ok()?;
            at = at.get(n)?;
        }
    }
    Some(at)
}

/// The strategy of a CRD's resource: None conversion, printer columns and selectable fields by JSON path.
struct CrdStrategy {
    group: String,
    plural: String,
    /// The JSON paths of the printer columns after Name.
    columns: Vec<String>,
    /// The selectable fields, as field selectors name them (`spec.color`).
    selectable: Vec<String>,
}

impl NativeStrategy for CrdStrategy {
    fn allow_unconditional_update(&self, _resource: &str) -> bool {
        false
    }

    fn convert(&self, resource: &str, mut obj: Value, version: &str) -> Result<Value, PluginError> {
        if resource != self.plural {
            return Err(PluginError::Failed {
                plugin: self.plural.clone(),
                call: "convert",
                message: format!("no resource {resource}"),
            });
        }
        obj["apiVersion"] = json!(format!("{}/{version}", self.group));
        Ok(obj)
    }

    fn get_attrs(&self, _resource: &str, obj: &Value) -> Vec<(String, String)> {
        self.selectable
            .iter()
            .map(|field| {
                let value = at_json_path(obj, &format!(".{field}"));
                let text = match value {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                (field.clone(), text)
            })
            .collect()
    }

    fn table_row(&self, _resource: &str, obj: &Value) -> Vec<Value> {
        self.columns
            .iter()
            .map(|path| at_json_path(obj, path).cloned().unwrap_or(Value::Null))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget, shortNames: [wg], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          spec: {type: object, properties: {replicas: {type: integer}, color: {type: string}}}
          status: {type: object, properties: {replicas: {type: integer}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - {jsonPath: .spec.color}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

    #[test]
    fn a_crd_becomes_a_plugin() {
        let plugin = load("widgets", CRD).expect("load");
        assert_eq!(plugin.group.group, "example.com");
        let r = &plugin.group.resources[0];
        assert_eq!(
            (r.kind.as_str(), r.singular.as_str(), r.namespaced),
            ("Widget", "widget", true)
        );
        assert_eq!(r.short_names, ["wg"]);
        assert!(r.subresources.status);
        assert_eq!(
            r.subresources.scale.as_ref().map(|s| s.spec_replicas.as_str()),
            Some(".spec.replicas")
        );
        assert_eq!(r.storage_version(), "v1");
        assert!(r.versions[1].deprecated);
        assert!(r.versions[0].schema["properties"].get("apiVersion").is_none());
        assert!(r.has_verb("create") && r.has_verb("watch") && r.has_verb("deletecollection"));
        let names: Vec<&str> = plugin.columns[0].1.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "Replicas", "Age"]);
        assert_eq!(plugin.selectable_fields[0].1, ["spec.color"]);

        let strategy = plugin.native.as_ref().expect("native");
        let obj = json!({"apiVersion": "example.com/v1", "metadata": {"name": "a", "creationTimestamp": "t"},
            "spec": {"replicas": 3, "color": "red"}});
        assert_eq!(strategy.table_row("widgets", &obj), [json!(3), json!("t")]);
        assert_eq!(
            strategy.get_attrs("widgets", &obj),
            [("spec.color".to_owned(), "red".to_owned())]
        );
        let converted = strategy.convert("widgets", obj, "v1beta1").expect("convert");
        assert_eq!(converted["apiVersion"], "example.com/v1beta1");
    }

    #[test]
    fn malformed_crds_are_refused_with_the_reason() {
        let cases = [
            (
                "kind: ConfigMap",
                "not an apiextensions.k8s.io/v1 CustomResourceDefinition",
            ),
            (
                &CRD.replace("name: widgets.example.com", "name: gadgets.example.com"),
                "must be spec.names.plural",
            ),
            (&CRD.replace("scope: Namespaced", "scope: Everywhere"), "spec.scope"),
            (&CRD.replace("storage: false", "storage: true"), "exactly one version"),
            (
                &CRD.replace("specReplicasPath: .spec.replicas", "specReplicasPath: .status.x"),
                "specReplicasPath",
            ),
            (
                &CRD.replace("  versions:", "  conversion: {strategy: Webhook}\n  versions:"),
                "only None",
            ),
        ];
        for (text, expected) in cases {
            let err = load("x", text).err().map(|e| format!("{e:#}")).unwrap_or_default();
            assert!(err.contains(expected), "{expected:?} not in {err:?}");
        }
    }

    #[test]
    fn json_paths_reach_fields_and_indices() {
        let obj = json!({"a": {"b": [1, {"c": "x"}]}});
        assert_eq!(at_json_path(&obj, ".a.b[1].c"), Some(&json!("x")));
        assert_eq!(at_json_path(&obj, "{.a.b[0]}"), Some(&json!(1)));
        assert_eq!(at_json_path(&obj, ".a.missing"), None);
        assert_eq!(at_json_path(&obj, "a"), None);
    }
}
