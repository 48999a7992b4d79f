//! The configuration controller (kube's `apf_controller.go` and the bootstrap ensurer of
//! `pkg/registry/flowcontrol/ensurer`), over the root tenant's registry:
//!
//! - at start, kube's mandatory objects are made or set back to their fixed spec, and the suggested ones made
//!   when missing and kept up to date while their `apf.kubernetes.io/autoupdate-spec` annotation is `true` (or,
//!   missing, while the object was never changed: generation 1);
//! - the FlowSchemas and PriorityLevelConfigurations are followed, and each change is put in force at once; each
//!   schema's `Dangling` condition says whether its priority level exists;
//! - every [`ADJUST_PERIOD`](crate::ADJUST_PERIOD) the levels' seats are shared again by their demand.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;

use super::{Config, PriorityAndFairness};
use builtin::flowcontrol::{self as fc, AUTO_UPDATE, DANGLING, EXEMPT, FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use builtin::storage_versions::set_condition;
use registry::store::{FieldValidation, WriteOptions};
use registry::Registry;
use storage::keys::{key_prefix, object_key};
use storage::{KeyValue, ListOptions, StorageError};

/// How often the bootstrap objects are made again where they are missing.
pub const ENSURE_PERIOD: Duration = Duration::from_secs(300);

/// The bootstrap configuration's objects: (FlowSchemas, PriorityLevelConfigurations).
pub fn bootstrap_objects() -> (Vec<Value>, Vec<Value>) {
    let (mut schemas, mut levels) = (Vec::new(), Vec::new());
    for (resource, obj) in fc::mandatory().into_iter().chain(fc::suggested()) {
        if resource == FLOW_SCHEMAS {
            schemas.push(obj);
        } else {
            levels.push(obj);
        }
    }
    (schemas, levels)
}

/// Serves `flowcontrol.apiserver.k8s.io` in the root tenant's registry and starts the controller, for as long as
/// the registry lives.
pub fn start(apf: &Arc<PriorityAndFairness>, registry: &Arc<Registry>) {
    registry.replace_builtin(Arc::new(fc::plugin()));
    let (weak, apf_config) = (Arc::downgrade(registry), apf.clone());
    tokio::spawn(async move {
        let mut delay = Duration::from_millis(100);
        loop {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            let started = std::time::Instant::now();
            match registry.until_closed(run(&registry, &apf_config)).await {
                None => return,
                Some(Err(e)) => tracing::warn!(error = %e, "priority and fairness configuration: restarting"),
                Some(Ok(())) => {}
            }
            if started.elapsed() > Duration::from_secs(60) {
                delay = Duration::from_millis(100);
            }
            drop(registry);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
    });
    let apf = Arc::downgrade(apf);
    let weak: Weak<Registry> = Arc::downgrade(registry);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(crate::ADJUST_PERIOD);
        tick.tick().await;
        loop {
            tick.tick().await;
            match (apf.upgrade(), weak.upgrade()) {
                (Some(apf), Some(r)) if !r.is_closed() => apf.adjust(),
                _ => return,
            }
        }
    });
}

async fn run(registry: &Arc<Registry>, apf: &PriorityAndFairness) -> anyhow::Result<()> {
    ensure(registry).await?;
    let group_prefix = format!("/registry/{GROUP}/");
    loop {
        let (schemas, levels, revision) = read(registry).await?;
        let objects: Vec<Value> = schemas.iter().map(|(_, obj)| obj.clone()).collect();
        let config = Config::compile(&objects, &levels);
        apf.configure(config.clone());
        mark_dangling(registry, schemas, &config).await;
        let mut watch = registry.storage.watch(&group_prefix, revision).await?;
        // The next change (each one reads the few objects again); every few minutes, the bootstrap objects are
        // made again where they were deleted (kube's ensurer runs as often).
        match tokio::time::timeout(ENSURE_PERIOD, watch.recv()).await {
            Ok(Some(event)) => {
                event?;
            }
            Ok(None) => anyhow::bail!("the watch of the configuration ended"),
            Err(_) => ensure(registry).await?,
        }
    }
}

/// A stored object and its value parsed.
type Stored = (KeyValue, Value);

/// The FlowSchemas (with their stored forms, for the writes of their status) and PriorityLevelConfigurations
/// stored, and the revision of the first read (a change after it, even between the two reads, is watched for from
/// there).
async fn read(registry: &Registry) -> anyhow::Result<(Vec<Stored>, Vec<Value>, i64)> {
    let parsed = |list: storage::ListResult| -> Vec<Stored> {
        list.items
            .into_iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok().map(|obj| (kv, obj)))
            .collect()
    };
    let schemas = registry
        .storage
        .list(&key_prefix(GROUP, FLOW_SCHEMAS, None), ListOptions::default())
        .await?;
    let revision = schemas.revision;
    let levels = registry
        .storage
        .list(&key_prefix(GROUP, PRIORITY_LEVELS, None), ListOptions::default())
        .await?;
    let levels = parsed(levels).into_iter().map(|(_, obj)| obj).collect();
    Ok((parsed(schemas), levels, revision))
}

/// Sets each schema's `Dangling` condition where it is wrong (a write around the store: the status is the
/// server's).
async fn mark_dangling(registry: &Registry, schemas: Vec<Stored>, config: &Config) {
    for (kv, mut obj) in schemas {
        let name = builtin::str_at(&obj, "/metadata/name").to_owned();
        let dangling = config.dangling.contains(&name);
        let current = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == DANGLING))
            .and_then(|c| c["status"].as_str());
        if current == Some(if dangling { "True" } else { "False" }) {
            continue;
        }
        let level = builtin::str_at(&obj, "/spec/priorityLevelConfiguration/name").to_owned();
        let (reason, message) = if dangling {
            ("NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"))
        } else {
            (
                "Found",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"
                ),
            )
        };
        let now = apimachinery::object::now_rfc3339();
        set_condition(&mut obj, DANGLING, dangling, reason, &message, &now);
        match registry.update_around_store(&kv, &obj).await {
            Ok(stored) => {
                if let Some(cache) = registry.running_cache(GROUP, FLOW_SCHEMAS) {
                    cache.note_write(stored.mod_revision);
                }
            }
            // Changed meanwhile: the watch brings the change, and the condition is looked at again.
            Err(StorageError::Conflict { .. }) => {}
            Err(e) => tracing::warn!(error = %e, schema = name, "setting a FlowSchema's Dangling condition failed"),
        }
    }
}

/// Whether the server keeps a stored bootstrap object's spec as the bootstrap one (kube's ensurer): always for a
/// mandatory object; for a suggested one while its annotation says `true`, or, when it says nothing a boolean,
/// while it was never changed.
fn auto_updated(obj: &Value, mandatory: bool) -> bool {
    if mandatory {
        return true;
    }
    // Go's strconv.ParseBool, as kube reads it.
    match obj
        .pointer(&format!("/metadata/annotations/{}", AUTO_UPDATE.replace('/', "~1")))
        .and_then(Value::as_str)
    {
        Some("1" | "t" | "T" | "TRUE" | "true" | "True") => true,
        Some("0" | "f" | "F" | "FALSE" | "false" | "False") => false,
        _ => obj.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1),
    }
}

/// The spec as compared: defaulted, and for the exempt level without `spec.exempt` (the operator's).
fn compared_spec(resource: &str, obj: &Value) -> Value {
    let mut spec = fc::defaulted_spec(resource, obj);
    if resource == PRIORITY_LEVELS && builtin::str_at(obj, "/metadata/name") == EXEMPT {
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("exempt");
        }
    }
    spec
}

/// Makes the bootstrap objects missing and brings the auto-updated ones' specs back to the bootstrap's.
pub async fn ensure(registry: &Registry) -> anyhow::Result<()> {
    let opts = WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
    };
    let objects = fc::mandatory()
        .into_iter()
        .map(|(r, o)| (true, r, o))
        .chain(fc::suggested().into_iter().map(|(r, o)| (false, r, o)));
    for (is_mandatory, resource, bootstrap) in objects {
        let bootstrap = &bootstrap;
        let Some(store) = registry.system_store(GROUP, resource) else {
            anyhow::bail!("{GROUP} is not served");
        };
        let name = builtin::str_at(bootstrap, "/metadata/name");
        let stored = registry.storage.get(&object_key(GROUP, resource, None, name)).await?;
        let Some(kv) = stored else {
            match store.create(None, bootstrap.clone(), opts).await {
                Ok(_) => tracing::info!(resource, name, "created the bootstrap object"),
                Err(e) if e.reason == "AlreadyExists" => {}
                Err(e) => anyhow::bail!("creating {resource} {name}: {}", e.message),
            }
            continue;
        };
        let mut obj: Value = serde_json::from_slice(&kv.value)?;
        if !auto_updated(&obj, is_mandatory) || compared_spec(resource, &obj) == compared_spec(resource, bootstrap) {
            continue;
        }
        let mut spec = bootstrap["spec"].clone();
        if resource == PRIORITY_LEVELS && name == EXEMPT {
            if let Some(exempt) = obj.pointer("/spec/exempt") {
                spec["exempt"] = exempt.clone();
            }
        }
        obj["spec"] = spec;
        obj["metadata"]["resourceVersion"] = Value::String(kv.mod_revision.to_string());
        if !obj["metadata"]["annotations"].is_object() {
            obj["metadata"]["annotations"] = serde_json::json!({});
        }
        obj["metadata"]["annotations"][AUTO_UPDATE] = Value::String("true".into());
        match store.update(None, name, obj, opts).await {
            Ok(_) => tracing::info!(resource, name, "brought the bootstrap object's spec up to date"),
            Err(e) if e.reason == "Conflict" => {}
            Err(e) => anyhow::bail!("updating {resource} {name}: {}", e.message),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn suggested_objects_are_kept_while_annotated_or_never_changed() {
        let obj = |annotation: Option<&str>, generation: i64| {
            let mut o = json!({"metadata": {"generation": generation, "annotations": {}}});
            if let Some(a) = annotation {
                o["metadata"]["annotations"][AUTO_UPDATE] = json!(a);
            }
            o
        };
        assert!(auto_updated(&obj(Some("true"), 5), false));
        assert!(!auto_updated(&obj(Some("false"), 1), false));
        assert!(auto_updated(&obj(None, 1), false));
        assert!(!auto_updated(&obj(Some("maybe"), 2), false));
        assert!(auto_updated(&obj(Some("True"), 3), false), "as Go's ParseBool");
        assert!(auto_updated(&obj(Some("false"), 2), true), "mandatory objects always");
    }

    #[test]
    fn the_bootstrap_keys_are_where_the_store_keeps_the_objects() {
        let (schemas, levels) = bootstrap_objects();
        let stored: Vec<String> = levels
            .iter()
            .map(|o| object_key(GROUP, PRIORITY_LEVELS, None, builtin::str_at(o, "/metadata/name")))
            .chain(
                schemas
                    .iter()
                    .map(|o| object_key(GROUP, FLOW_SCHEMAS, None, builtin::str_at(o, "/metadata/name"))),
            )
            .collect();
        let mut keys = fc::bootstrap_keys();
        keys.sort();
        let mut stored = stored;
        stored.sort();
        assert_eq!(keys, stored);
    }

    #[test]
    fn the_exempt_levels_own_field_is_not_compared() {
        let (_, exempt) = fc::mandatory()
            .into_iter()
            .find(|(r, o)| *r == PRIORITY_LEVELS && o["metadata"]["name"] == EXEMPT)
            .unwrap();
        let mut changed = exempt.clone();
        changed["spec"]["exempt"]["nominalConcurrencyShares"] = json!(7);
        assert_eq!(
            compared_spec(PRIORITY_LEVELS, &changed),
            compared_spec(PRIORITY_LEVELS, &exempt)
        );
    }
}
