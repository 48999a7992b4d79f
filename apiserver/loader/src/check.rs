//! `wasm-apiserver plugin check FILE`: loads a component (or a CustomResourceDefinition file) as the server would and
//! checks it against the contract.
//!
//! It reports the group, resources, versions and detected verbs, then checks what can be checked without a server:
//! the exports type-check (done by loading), schemas are structural objects, and every example object a version's
//! schema carries (OpenAPI `example`) matches its schema (structure and CEL rules), passes each hook the plugin
//! exports (defaulting, prepare and validate for create, update and status, selectable fields, table row) and
//! survives a conversion round trip through every other version.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _};
use serde_json::Value;

use plugin_runtime::cache::{content_hash, CompileCache, Compiler, Source};
use plugin_runtime::component::PluginComponent;
use plugin_runtime::runtime::{Limits, Runtime};
use rest::plugin::Plugin;

/// The outcome of a check: a printable report and the problems found.
pub struct CheckReport {
    /// The human-readable report.
    pub text: String,
    /// Problems; the check fails when there is any.
    pub problems: Vec<String>,
}

/// Checks a plugin file. With `cache_dir` (a server's `--plugin-cache-dir`, `<data-dir>/plugin-cache` by default),
/// a component is compiled into that cache, or loaded from it: the server then serves what was checked without
/// compiling it again.
pub fn check(path: &Path, cache_dir: Option<&Path>) -> anyhow::Result<CheckReport> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let runtime = Runtime::new(Limits::default())?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cached = None;
    let is_crd = path
        .extension()
        .is_some_and(|x| x == "yaml" || x == "yml" || x == "json");
    let plugin = if is_crd {
        let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", path.display()))?;
        builtin::crd::load(&name, &text).with_context(|| format!("loading {}", path.display()))?
    } else if let Some(dir) = cache_dir {
        // No size limit: pruning is the server's, after its reloads.
        let cache = CompileCache::new(dir, runtime.fingerprint, u64::MAX)?.with_compiler(Compiler::configured());
        let (component, source) = cache
            .load(&runtime.engine, &content_hash(&bytes), || Ok(bytes.clone()))
            .with_context(|| format!("loading {}", path.display()))?;
        cached = Some((dir.to_path_buf(), source));
        let component = PluginComponent::from_component(runtime, &name, component)
            .with_context(|| format!("loading {}", path.display()))?;
        crate::component::plugin(component)
    } else {
        crate::component::load(runtime, &name, &bytes).with_context(|| format!("loading {}", path.display()))?
    };
    let mut text = String::new();
    let mut problems = Vec::new();
    let e = &plugin.exports;
    let _ = writeln!(text, "plugin {name}: group {}", plugin.group.group);
    match cached {
        Some((dir, Source::Cached | Source::Shared)) => {
            let _ = writeln!(text, "compiled: loaded from the compile cache {}", dir.display());
        }
        Some((dir, Source::Compiled)) => {
            let _ = writeln!(
                text,
                "compiled: into the compile cache {} (a server using it loads the component without compiling)",
                dir.display()
            );
        }
        None => {}
    }
    let exported: Vec<&str> = [
        ("create-strategy", e.create),
        ("update-strategy", e.update),
        ("delete-strategy", e.delete),
        ("lister", e.lister),
        ("table-convertor", e.table),
        ("converter", e.converter),
        ("defaulter", e.defaulter),
        ("mutating-admission", e.mutating),
        ("validating-admission", e.validating),
        ("status-strategy", e.status),
        ("scaler", e.scaler),
        ("create-pipeline", e.create_pipeline),
    ]
    .into_iter()
    .filter_map(|(n, on)| on.then_some(n))
    .collect();
    let _ = writeln!(text, "exports: scheme, {}", exported.join(", "));
    if !plugin.group.reads.is_empty() {
        let reads: Vec<String> = plugin.group.reads.iter().map(|(g, r)| format!("{r}.{g}")).collect();
        let _ = writeln!(text, "reads: {}", reads.join(", "));
    }
    for r in &plugin.group.resources {
        let scope = if r.namespaced { "namespaced" } else { "cluster" };
        let _ = writeln!(
            text,
            "resource {} (kind {}, {scope}), verbs: {}",
            r.plural,
            r.kind,
            r.verbs.join(",")
        );
        let subresources = r.subresources(r.storage_version());
        if subresources.status {
            let _ = writeln!(text, "  subresource status");
        }
        if let Some(scale) = &subresources.scale {
            let _ = writeln!(
                text,
                "  subresource scale: replicas {} (observed {}){}",
                scale.spec_replicas,
                scale.status_replicas,
                scale
                    .label_selector
                    .as_deref()
                    .map(|s| format!(", selector {s}"))
                    .unwrap_or_default()
            );
        }
        for v in &r.versions {
            let mut flags = Vec::new();
            if v.storage {
                flags.push("storage");
            }
            if !v.served {
                flags.push("not served");
            }
            if v.deprecated {
                flags.push("deprecated");
            }
            let _ = writeln!(
                text,
                "  version {}{}",
                v.name,
                if flags.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", flags.join(", "))
                }
            );
            let Some(example) = v.schema.get("example").filter(|x| x.is_object()) else {
                continue;
            };
            match check_example(&plugin, r, &v.name, example.clone()) {
                Ok(lines) => {
                    for l in lines {
                        let _ = writeln!(text, "    {l}");
                    }
                }
                Err(e) => {
                    let _ = writeln!(text, "    example: FAILED: {e:#}");
                    problems.push(format!("{} {}: {e:#}", r.plural, v.name));
                }
            }
        }
    }
    Ok(CheckReport { text, problems })
}

/// What `plugin check` finds wrong with the example objects of a loaded plugin's schemas (each version's OpenAPI
/// `example`, checked as [`check`] does): one problem per failing example, none when every example passes or there
/// is none.
pub fn example_problems(plugin: &Plugin) -> Vec<String> {
    let mut problems = Vec::new();
    for r in &plugin.group.resources {
        for v in &r.versions {
            let Some(example) = v.schema.get("example").filter(|x| x.is_object()) else {
                continue;
            };
            if let Err(e) = check_example(plugin, r, &v.name, example.clone()) {
                problems.push(format!("{} {}: {e:#}", r.plural, v.name));
            }
        }
    }
    problems
}

/// Validates one example and converts it through every other served version and back.
fn check_example(
    plugin: &Plugin,
    r: &apimachinery::scheme::ResourceInfo,
    version: &str,
    mut example: Value,
) -> anyhow::Result<Vec<String>> {
    let api_version = format!("{}/{version}", plugin.group.group);
    example["apiVersion"] = Value::String(api_version);
    example["kind"] = Value::String(r.kind.clone());
    if example.get("metadata").is_none() {
        example["metadata"] = serde_json::json!({"name": "example"});
    }
    let schema = r.served_version(version).map(|v| v.schema.clone()).unwrap_or_default();
    let mut example = example;
    schema::structural::prune_nulls(&schema, &mut example);
    schema::structural::default(&schema, &mut example);
    let decoded = example.clone();
    let defaulted = plugin
        .strategy
        .default(&r.plural, example)
        .map_err(|e| anyhow::anyhow!("defaulting: {e}"))?;
    let mut lines = Vec::new();
    // The schema's own verdict, as the server gives it before any hook runs.
    let mut schema_errors = schema::structural::validate(&schema, &defaulted);
    schema_errors.extend(schema::cel::validate(&schema, &defaulted, None));
    if !schema_errors.is_empty() {
        let errors: Vec<String> = schema_errors.iter().map(ToString::to_string).collect();
        bail!("the example does not match its schema: {}", errors.join("; "));
    }
    lines.push("example: matches its schema (structure and CEL rules)".to_string());
    if plugin.exports.create {
        let prepared = plugin
            .strategy
            .prepare_for_create(&r.plural, &defaulted)
            .map_err(|e| anyhow::anyhow!("prepare-for-create: {e}"))?;
        let v = plugin
            .strategy
            .validate(&r.plural, &prepared)
            .map_err(|e| anyhow::anyhow!("validate: {e}"))?;
        if !v.errors.is_empty() {
            bail!("the example is invalid: {:?}", v.errors);
        }
        lines.push("example: prepare-for-create and validate ok".to_string());
        if plugin.exports.create_pipeline {
            // The one call must give what the separate calls gave (without admission or host metadata here).
            let (object, validation) = plugin
                .strategy
                .create_in_one_call(&r.plural, &decoded, &serde_json::json!({}), false, None)
                .map_err(|e| anyhow::anyhow!("create-pipeline: {}", e.error))?;
            let separate = apimachinery::object::keep_host_metadata(&defaulted, prepared);
            if object != separate || format!("{validation:?}") != format!("{v:?}") {
                bail!("create-pipeline.create gives another object or validation than the separate calls");
            }
            lines.push("example: create-pipeline gives what the separate calls give".to_string());
        }
    }
    if plugin.exports.update {
        let prepared = plugin
            .strategy
            .prepare_for_update(&r.plural, &defaulted, &defaulted)
            .map_err(|e| anyhow::anyhow!("prepare-for-update: {e}"))?;
        let v = plugin
            .strategy
            .validate_update(&r.plural, &prepared, &defaulted)
            .map_err(|e| anyhow::anyhow!("validate-update: {e}"))?;
        if !v.errors.is_empty() {
            bail!("the example is invalid as an update of itself: {:?}", v.errors);
        }
        lines.push("example: prepare-for-update and validate-update ok".to_string());
    }
    if plugin.exports.status && r.subresources(r.storage_version()).status {
        let v = plugin
            .strategy
            .validate_status_update(&r.plural, &defaulted, &defaulted)
            .map_err(|e| anyhow::anyhow!("validate-status-update: {e}"))?;
        if !v.errors.is_empty() {
            bail!("the example's status is invalid: {:?}", v.errors);
        }
        lines.push("example: validate-status-update ok".to_string());
    }
    let stored = plugin
        .convert(&r.plural, defaulted.clone(), r.storage_version())
        .map_err(|e| anyhow::anyhow!("converting to the storage version: {e}"))?;
    if plugin.exports.lister {
        plugin
            .strategy
            .get_attrs(&r.plural, &stored)
            .map_err(|e| anyhow::anyhow!("get-attrs: {e}"))?;
        lines.push("example: get-attrs ok".to_string());
    }
    if plugin.exports.table {
        let storage = r.storage_version();
        let cells = plugin
            .strategy
            .table_row(&r.plural, storage, &stored)
            .map_err(|e| anyhow::anyhow!("row: {e}"))?;
        let columns = r.columns(storage).map_or(0, <[_]>::len);
        if cells.len() != columns {
            bail!("row: {} cells for {columns} columns", cells.len());
        }
        lines.push("example: table row ok".to_string());
    }
    for other in r.versions.iter().filter(|o| o.served && o.name != version) {
        let there = plugin
            .convert(&r.plural, defaulted.clone(), &other.name)
            .map_err(|e| anyhow::anyhow!("converting to {}: {e}", other.name))?;
        let back = plugin
            .convert(&r.plural, there, version)
            .map_err(|e| anyhow::anyhow!("converting back from {}: {e}", other.name))?;
        if back != defaulted {
            bail!(
                "the round trip through {} changes the example:\n  before: {defaulted}\n  after:  {back}",
                other.name
            );
        }
        lines.push(format!("example: round trip through {} ok", other.name));
    }
    Ok(lines)
}
