//! CustomResourceDefinition files: an `apiextensions.k8s.io/v1` CRD in YAML (or JSON) dropped into the plugin
//! directory is served with no code, as kube-apiserver serves it: its versions (served, storage, deprecated, with
//! `None` conversion: objects convert by changing `apiVersion`), its schema (published, pruned and enforced as any
//! plugin's), and per version its printer columns ([`columns`]: kube's JSONPath and cell formatting), `/status` and
//! `/scale`; selectable fields, categories and short names.
//!
//! It becomes a plugin with a native strategy ([`CrdStrategy`]), loaded, replaced and removed with the directory
//! like a `.wasm` file. A `.wasm` plugin serving the same group takes its place (see the plugin loader).

pub mod columns;

use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};

use super::name_column;
use apimachinery::plugin::PluginError;
use apimachinery::scheme::Exports;
use apimachinery::scheme::{json_path_fields, GroupInfo, ResourceInfo, ScalePaths, Subresources, VersionInfo};
use columns::PrinterColumn;
use rest::plugin::Plugin;
use rest::strategy::Strategy;

/// Loads a CRD file's text into a plugin named `name` serving its one resource.
pub fn load(name: &str, text: &str) -> anyhow::Result<Plugin> {
    let definition = Arc::new(Definition::parse(text)?);
    Ok(serve(name, std::slice::from_ref(&definition)))
}

/// What a CustomResourceDefinition file defines: one resource of a group, its printer columns and selectable fields.
pub struct Definition {
    /// The API group.
    pub group: String,
    resource: ResourceInfo,
    /// The printer columns after Name, per version name.
    columns: Vec<(String, VersionColumns)>,
    /// The selectable fields (of the storage version).
    selectable: Vec<String>,
}

impl Definition {
    /// Reads and checks a CRD file's text (YAML or JSON).
    pub fn parse(text: &str) -> anyhow::Result<Definition> {
        let crd: Value = yaml_serde::from_str(text).context("the file is not YAML")?;
        parse(&crd)
    }

    /// The plural name of its resource.
    pub fn plural(&self) -> &str {
        &self.resource.plural
    }
}

/// A plugin named `name` serving the resources of `definitions`, all of one group, as kube-apiserver serves every
/// CustomResourceDefinition of a group side by side: each resource with its own versions, columns and selectable
/// fields; the group's versions are theirs together. `definitions` must not be empty nor define a resource twice.
pub fn serve(name: &str, definitions: &[Arc<Definition>]) -> Plugin {
    let group = definitions.first().map(|d| d.group.clone()).unwrap_or_default();
    let strategy = CrdStrategy {
        group: group.clone(),
        resources: definitions.to_vec(),
    };
    let exports = Exports {
        create: true,
        update: true,
        delete: true,
        lister: true,
        table: true,
        converter: true,
        ..Exports::default()
    };
    let group_info = GroupInfo {
        group,
        resources: definitions.iter().map(|d| Arc::new(d.resource.clone())).collect(),
        reads: Vec::new(),
    };
    let selectable = definitions
        .iter()
        .map(|d| (d.resource.plural.clone(), d.selectable.clone()))
        .collect();
    // The columns are in the scheme, per version.
    Plugin::native(name, group_info, exports, Vec::new(), selectable, Arc::new(strategy))
}

/// A string field of a JSON object, or the empty string.
fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    super::owned_strings(v.pointer(pointer))
}

/// The printer columns of one version, after Name.
#[derive(Clone, Debug)]
struct VersionColumns {
    columns: Vec<PrinterColumn>,
    /// Whether a path may read `apiVersion` (which differs between versions), so that the object must be converted
    /// to the table's version before the paths are evaluated.
    reads_api_version: bool,
}

/// Reads and checks a CRD as kube's CRD validation would (the parts the host relies on).
fn parse(crd: &Value) -> anyhow::Result<Definition> {
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
        let version_columns = version_columns(v, i)?;
        let mut table = vec![name_column()];
        table.extend(version_columns.columns.iter().map(|c| c.column.clone()));
        columns.push((vname.to_owned(), version_columns));
        infos.push(VersionInfo {
            name: vname.to_owned(),
            served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
            storage,
            deprecated: v.get("deprecated").and_then(Value::as_bool).unwrap_or(false),
            deprecation_warning: v.get("deprecationWarning").and_then(Value::as_str).map(str::to_owned),
            schema: schema.into(),
            subresources: subresources(v, i)?,
            columns: Some(table.into()),
        });
        // Field selectors are matched against the stored object: the storage version's selectable fields apply
        // to every version.
        if storage {
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
    let singular = match text(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    // kube-apiserver lists a CRD's versions by their priority (v1 before v1beta1 before v1alpha1), whatever the
    // order of spec.versions.
    infos.sort_by(|a, b| apimachinery::version_priority::by_priority(&a.name, &b.name));
    let resource = ResourceInfo {
        kind,
        plural,
        singular,
        short_names: strings(crd, "/spec/names/shortNames"),
        categories: strings(crd, "/spec/names/categories"),
        namespaced,
        versions: infos,
        verbs: Vec::new(),
        defaults: Default::default(),
    };
    Ok(Definition {
        group,
        resource,
        columns,
        selectable,
    })
}

/// The `subresources` of version `i` (`v`).
fn subresources(v: &Value, i: usize) -> anyhow::Result<Subresources> {
    let mut out = Subresources {
        status: v.pointer("/subresources/status").is_some(),
        scale: None,
        finalize: false,
        token: false,
    };
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
        out.scale = Some(paths);
    }
    Ok(out)
}

/// The `additionalPrinterColumns` of version `i` (`v`), or kube's default Age column when it has none.
fn version_columns(v: &Value, i: usize) -> anyhow::Result<VersionColumns> {
    let mut columns = Vec::new();
    for (j, c) in v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        columns.push(PrinterColumn::parse(
            c,
            &format!("spec.versions[{i}].additionalPrinterColumns[{j}]"),
        )?);
    }
    if columns.is_empty() {
        columns.push(PrinterColumn::default_age());
    }
    let reads_api_version = v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| text(c, "/jsonPath"))
        .any(|p| p.contains("apiVersion") || p.contains("..") || p.contains('*') || p.contains('?'));
    Ok(VersionColumns {
        columns,
        reads_api_version,
    })
}

/// The value at a selectable field's JSON path (`.a.b`); none for what the path does not reach.
fn at_json_path<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let mut at = obj;
    for field in json_path_fields(path)? {
        at = at.get(field)?;
    }
    Some(at)
}

/// The strategy of the CRDs of a group: None conversion, and per resource its printer columns per version and its
/// selectable fields.
struct CrdStrategy {
    group: String,
    /// The definitions served, one per resource.
    resources: Vec<Arc<Definition>>,
}

impl CrdStrategy {
    /// The definition of a resource.
    fn definition(&self, resource: &str) -> Option<&Definition> {
        self.resources
            .iter()
            .map(|d| &**d)
            .find(|d| d.resource.plural == resource)
    }
}

impl Strategy for CrdStrategy {
    fn allow_unconditional_update(&self, _resource: &str) -> Result<bool, PluginError> {
        Ok(false)
    }

    fn convert(&self, resource: &str, mut obj: Value, version: &str) -> Result<Value, PluginError> {
        if self.definition(resource).is_none() {
            return Err(PluginError::Failed {
                plugin: format!("{resource}.{}", self.group),
                call: "convert",
                message: format!("no resource {resource}"),
            });
        }
        obj["apiVersion"] = json!(format!("{}/{version}", self.group));
        Ok(obj)
    }

    fn get_attrs(&self, resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        let Some(definition) = self.definition(resource) else {
            return Ok(Vec::new());
        };
        Ok(definition
            .selectable
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
            .collect())
    }

    fn table_cells(&self, resource: &str, version: &str, obj: &Value) -> Vec<Value> {
        let Some((_, columns)) = self
            .definition(resource)
            .and_then(|d| d.columns.iter().find(|(v, _)| v == version))
        else {
            return Vec::new();
        };
        // kube evaluates the paths on the object in the table's version: with None conversion only `apiVersion`
        // differs, so the object is copied only for paths that may read it.
        let converted;
        let obj = if columns.reads_api_version && obj["apiVersion"] != json!(format!("{}/{version}", self.group)) {
            let mut copy = obj.clone();
            copy["apiVersion"] = json!(format!("{}/{version}", self.group));
            converted = copy;
            &converted
        } else {
            obj
        };
        columns.columns.iter().map(|c| c.cell(obj)).collect()
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
    fn versions_are_listed_by_kube_priority_within_a_crd_and_across_a_group() {
        // spec.versions in another order: v1beta1 first.
        let beta_first = CRD
            .replace("  - name: v1\n", "  - name: vTEMP\n")
            .replace("  - name: v1beta1\n", "  - name: v1\n")
            .replace("  - name: vTEMP\n", "  - name: v1beta1\n");
        let plugin = load("widgets", &beta_first).expect("load");
        assert_eq!(plugin.group.versions(), ["v1", "v1beta1"]);
        let names: Vec<&str> = plugin.group.resources[0]
            .versions
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(names, ["v1", "v1beta1"]);
        // Two CRDs of a group: widgets v1 and v1beta1, gadgets v2 and v1alpha1; kube lists v2, v1, v1beta1, v1alpha1.
        let gadgets = CRD
            .replace("widgets", "gadgets")
            .replace("Widget", "Gadget")
            .replace("[wg]", "[gd]")
            .replace("name: v1\n", "name: v2\n")
            .replace("name: v1beta1", "name: v1alpha1");
        let definitions = [CRD, &gadgets].map(|text| Arc::new(Definition::parse(text).expect("parse")));
        let plugin = serve("widgets+gadgets", &definitions);
        assert_eq!(plugin.group.versions(), ["v2", "v1", "v1beta1", "v1alpha1"]);
    }

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
        assert!(r.subresources("v1").status);
        assert_eq!(
            r.subresources("v1").scale.as_ref().map(|s| s.spec_replicas.as_str()),
            Some(".spec.replicas")
        );
        assert_eq!(r.storage_version(), "v1");
        assert!(r.versions[1].deprecated);
        assert!(r.versions[0].schema["properties"].get("apiVersion").is_none());
        assert!(r.has_verb("create") && r.has_verb("watch") && r.has_verb("deletecollection"));
        let names = |version: &str| -> Vec<String> {
            r.columns(version)
                .unwrap_or_default()
                .iter()
                .map(|c| c.name.clone())
                .collect()
        };
        assert_eq!(names("v1"), ["Name", "Replicas", "Age"]);
        assert_eq!(plugin.selectable_fields[0].1, ["spec.color"]);

        let strategy = &plugin.strategy;
        let obj = json!({"apiVersion": "example.com/v1", "metadata": {"name": "a", "creationTimestamp": "t"},
            "spec": {"replicas": 3, "color": "red"}});
        assert_eq!(strategy.table_cells("widgets", "v1", &obj), [json!(3), json!("t")]);
        assert_eq!(
            strategy.get_attrs("widgets", &obj).unwrap(),
            [("spec.color".to_owned(), "red".to_owned())]
        );
        let converted = strategy.convert("widgets", obj, "v1beta1").expect("convert");
        assert_eq!(converted["apiVersion"], "example.com/v1beta1");
    }

    #[test]
    fn each_version_has_its_own_columns_and_subresources() {
        let plugin = load("widgets", CRD).expect("load");
        let r = &plugin.group.resources[0];
        // v1beta1 declares neither: no /status or /scale there, and kube's default Age column.
        assert_eq!(r.subresources("v1beta1"), &Subresources::default());
        let beta: Vec<&str> = r
            .columns("v1beta1")
            .unwrap_or_default()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(beta, ["Name", "Age"]);
        let strategy = &plugin.strategy;
        let obj = json!({"apiVersion": "example.com/v1", "metadata": {"name": "a", "creationTimestamp": "t"},
            "spec": {"replicas": 3}});
        assert_eq!(strategy.table_cells("widgets", "v1beta1", &obj), [json!("t")]);

        // A path reading apiVersion sees the table's version, as kube's convertor does.
        let crd = CRD.replace(
            "    deprecated: true\n",
            "    deprecated: true\n    additionalPrinterColumns: [{name: API, type: string, jsonPath: .apiVersion}]\n",
        );
        let plugin = load("widgets", &crd).expect("load");
        let strategy = &plugin.strategy;
        assert_eq!(
            strategy.table_cells("widgets", "v1beta1", &obj),
            [json!("example.com/v1beta1")]
        );
    }

    #[test]
    fn the_crds_of_a_group_are_served_together_each_resource_its_own() {
        let gadgets = CRD
            .replace("widgets", "gadgets")
            .replace("Widget", "Gadget")
            .replace("[wg]", "[gd]")
            .replace("name: Replicas", "name: Copies")
            .replace("jsonPath: .spec.color", "jsonPath: .spec.replicas")
            .replace("name: v1beta1", "name: v1alpha1");
        let definitions = [CRD, &gadgets].map(|text| Arc::new(Definition::parse(text).expect("parse")));
        let plugin = serve("widgets+gadgets", &definitions);
        let plurals: Vec<&str> = plugin.group.resources.iter().map(|r| r.plural.as_str()).collect();
        assert_eq!(plurals, ["widgets", "gadgets"]);
        assert_eq!(plugin.group.versions(), ["v1", "v1beta1", "v1alpha1"]);
        let in_version = |version: &str| -> Vec<String> {
            plugin
                .group
                .resources_in(version)
                .map(|(r, _)| r.plural.clone())
                .collect()
        };
        assert_eq!(in_version("v1beta1"), ["widgets"]);
        assert_eq!(in_version("v1alpha1"), ["gadgets"]);
        assert_eq!(
            plugin.selectable_fields,
            [
                ("widgets".to_owned(), vec!["spec.color".to_owned()]),
                ("gadgets".to_owned(), vec!["spec.replicas".to_owned()])
            ]
        );
        let columns = |plural: &str| -> Vec<String> {
            let r = plugin.resource(plural).expect("resource");
            r.columns("v1")
                .unwrap_or_default()
                .iter()
                .map(|c| c.name.clone())
                .collect()
        };
        assert_eq!(columns("widgets"), ["Name", "Replicas", "Age"]);
        assert_eq!(columns("gadgets"), ["Name", "Copies", "Age"]);

        let strategy = &plugin.strategy;
        let obj = json!({"apiVersion": "example.com/v1", "metadata": {"name": "a", "creationTimestamp": "t"},
            "spec": {"replicas": 3, "color": "red"}});
        assert_eq!(
            strategy.get_attrs("gadgets", &obj).unwrap(),
            [("spec.replicas".to_owned(), "3".to_owned())]
        );
        assert_eq!(strategy.table_cells("gadgets", "v1alpha1", &obj), [json!("t")]);
        assert_eq!(strategy.table_cells("widgets", "v1alpha1", &obj), Vec::<Value>::new());
        assert!(strategy.convert("gizmos", obj.clone(), "v1").is_err());
        assert_eq!(
            strategy.convert("gadgets", obj, "v1alpha1").expect("convert")["apiVersion"],
            "example.com/v1alpha1"
        );
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
            (
                &CRD.replace("jsonPath: .spec.replicas}", "jsonPath: \".spec.replicas[\"}"),
                "spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: \".spec.replicas[\": \
                 unrecognized column definition: unterminated array",
            ),
            (
                &CRD.replace("type: integer, jsonPath", "type: int, jsonPath"),
                "additionalPrinterColumns[0].type: Unsupported value",
            ),
        ];
        for (text, expected) in cases {
            let err = load("x", text).err().map(|e| format!("{e:#}")).unwrap_or_default();
            assert!(err.contains(expected), "{expected:?} not in {err:?}");
        }
    }
}
