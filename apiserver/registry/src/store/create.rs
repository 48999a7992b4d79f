//! Create (POST): admission, the plugin's create strategy, metadata validation, quota, storage.
//!
//! A plugin exporting `create-pipeline` is given the defaulting, its own mutating admission, the preparation and the
//! validation of a create in one call instead of up to four: each call crosses the object as JSON text both ways. The
//! one call runs when nothing else can see the object between defaulting and preparing it: nothing of the admission
//! chain but the plugin's own admission mutates the request (kube runs mutating admission between the two;
//! `admission::Mutates`), and the host's own changes in between (metadata it sets, a `/status` resource's status
//! cleared) are handed to the call as data. Otherwise, and for plugins without it, the separate calls run, in the
//! same order.

use super::{plugin_failure, ResourceStore, Written};
use crate::write_options::WriteOptions;
use admission::Mutates;
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::plugin::Operation;
use apimachinery::plugin::Validation;
use apimachinery::status::ApiError;
use serde_json::{json, Value};
use storage::keys::object_key;

/// Metadata fields a create never keeps from the request.
const CLEARED_ON_CREATE: [&str; 3] = ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"];

impl ResourceStore {
    /// Creates an object from a decoded body.
    pub async fn create(&self, namespace: Option<&str>, body: Value, opts: WriteOptions) -> Result<Written, ApiError> {
        self.create_tracked(namespace, body, opts, false).await
    }

    /// Creates an object; `tracked`: its `managedFields` are already set (by an apply) rather than to be recorded.
    pub(super) async fn create_tracked(
        &self,
        namespace: Option<&str>,
        body: Value,
        opts: WriteOptions,
        tracked: bool,
    ) -> Result<Written, ApiError> {
        let mut warnings = Vec::new();
        let decoded = self.decode_body(body, namespace, opts, &mut warnings)?;
        let mutates = self
            .admission
            .mutates(self.attributes(Operation::Create, namespace, "", Some(&decoded), None, opts.dry_run))
            .await;
        let in_one_call = match mutates {
            Mutates::Yes => None,
            Mutates::No => self.create_in_one_call(namespace, &decoded, opts, false)?,
            Mutates::ByServingPlugin => {
                // The chain's mutation would run the checks that precede it first (a create in a missing namespace
                // meets no admission): when one refuses, the separate calls answer, after the defaulter's errors.
                let attributes = self.attributes(
                    Operation::Create,
                    namespace,
                    object::name(&decoded),
                    Some(&decoded),
                    None,
                    opts.dry_run,
                );
                match self.admission.precede_mutation(attributes).await {
                    Ok(()) => self.create_in_one_call(namespace, &decoded, opts, true)?,
                    Err(_) => None,
                }
            }
        };
        let (obj, validation) = match in_one_call {
            Some((obj, validation)) => (obj, Some(validation)),
            None => (
                self.create_in_separate_calls(namespace, decoded, opts, &mut warnings)
                    .await?,
                None,
            ),
        };
        self.store_created(namespace, obj, validation, opts, tracked, warnings)
            .await
    }

    /// The plugin's separate calls: defaulter, the host's metadata, the admission chain's mutation, preparation.
    /// Returns the prepared object.
    async fn create_in_separate_calls(
        &self,
        namespace: Option<&str>,
        decoded: Value,
        opts: WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let mut obj = self
            .plugin
            .strategy
            .default(self.plural(), decoded)
            .map_err(|e| plugin_failure(e, self, ""))?;
        check_no_resource_version(&obj)?;
        let generate = object::name(&obj).is_empty() && meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
        if generate {
            let base = meta_str(&obj, "generateName").unwrap_or("").to_string();
            meta_mut(&mut obj).insert("name".into(), json!(apimachinery::generate_name(&base)));
        }
        {
            let m = meta_mut(&mut obj);
            for (field, value) in host_metadata() {
                m.insert(field.into(), value);
            }
            for field in CLEARED_ON_CREATE {
                m.remove(field);
            }
        }
        if self.resource.subresources(&self.version).status {
            // With a `/status`, a create starts without a status (kube's custom resource strategy).
            object::set_status(&mut obj, None);
        }
        let name = object::name(&obj).to_string();
        let attributes = self.attributes(Operation::Create, namespace, &name, None, None, opts.dry_run);
        let obj = self.admission.mutate(attributes, obj, warnings).await?;
        let name = object::name(&obj).to_string();
        let prepared = self
            .plugin
            .strategy
            .prepare_for_create(self.plural(), &obj)
            .map_err(|e| plugin_failure(e, self, &name))?;
        let mut prepared = apimachinery::object::keep_host_metadata(&obj, prepared);
        let initial = self.plugin.strategy.initial_finalizers(self.plural(), &prepared);
        if !initial.is_empty() {
            let mut finalizers: Vec<String> = object::finalizers(&prepared).into_iter().map(str::to_owned).collect();
            for f in initial {
                if !finalizers.iter().any(|g| g == f) {
                    finalizers.push(f.to_owned());
                }
            }
            meta_mut(&mut prepared).insert("finalizers".into(), json!(finalizers));
        }
        Ok(prepared)
    }

    /// The plugin's `create-pipeline` when it applies: the prepared object and its validation, or `None` for the
    /// separate calls. `admit`: the plugin's own mutating admission matches the request, and runs inside the call.
    fn create_in_one_call(
        &self,
        namespace: Option<&str>,
        decoded: &Value,
        opts: WriteOptions,
        admit: bool,
    ) -> Result<Option<(Value, Validation)>, ApiError> {
        if !self.plugin.exports.create_pipeline || !self.create_pipeline {
            return Ok(None);
        }
        // The separate calls give the error of a set resourceVersion, and generate names, in their order.
        if meta_str(decoded, "resourceVersion").is_some_and(|rv| !rv.is_empty())
            || (object::name(decoded).is_empty() && meta_str(decoded, "generateName").is_some())
        {
            return Ok(None);
        }
        let admission = admit.then(|| {
            self.attributes(Operation::Create, namespace, "", None, None, opts.dry_run)
                .plugin_request()
        });
        let mut metadata: serde_json::Map<String, Value> =
            host_metadata().into_iter().map(|(k, v)| (k.into(), v)).collect();
        for field in CLEARED_ON_CREATE {
            metadata.insert(field.into(), Value::Null);
        }
        let clear_status = self.resource.subresources(&self.version).status;
        let (obj, validation) = self
            .plugin
            .strategy
            .create_in_one_call(
                self.plural(),
                decoded,
                &Value::Object(metadata),
                clear_status,
                admission,
            )
            .map_err(|e| plugin_failure(e.error, self, if e.in_default { "" } else { object::name(decoded) }))?;
        // A defaulter that set a resourceVersion or left only a generateName: as the separate calls would answer.
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty())
            || (object::name(&obj).is_empty() && meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty()))
        {
            return Ok(None);
        }
        Ok(Some((obj, validation)))
    }

    /// What follows the plugin's preparation: managed fields, metadata and plugin validation (`validation` when the
    /// one call made it already), the admission chain's validation, storage.
    async fn store_created(
        &self,
        namespace: Option<&str>,
        mut obj: Value,
        validation: Option<Validation>,
        opts: WriteOptions,
        tracked: bool,
        mut warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        let name = object::name(&obj).to_string();
        if !tracked {
            self.track_fields(None, &mut obj)?;
        }
        // As kube's BeforeCreate: metadata is validated after mutating admission and the strategy's preparation.
        self.validate_meta(&obj)?;
        let validation = match validation {
            Some(v) => v,
            None => self
                .plugin
                .strategy
                .validate(self.plural(), &obj)
                .map_err(|e| plugin_failure(e, self, &name))?,
        };
        self.check_validation(validation, &name, &mut warnings)?;
        let attributes = self.attributes(Operation::Create, namespace, &name, Some(&obj), None, opts.dry_run);
        self.admission.validate(attributes, &mut warnings).await?;
        let mut stored = self.to_storage_version(obj)?;
        object::strip_resource_version(&mut stored);
        if opts.dry_run {
            return Ok(self.written(self.to_request_version(stored)?, warnings, true));
        }
        let key = object_key(self.group(), self.plural(), namespace, &name);
        let value = stored.to_string().into_bytes();
        let written = async {
            self.record_storage_version().await?;
            let room = self.reserve(&key, &name, 1, value.len() as i64)?;
            let kv = self
                .storage
                .create(&key, value)
                .await
                .map_err(|e| self.storage_err(e, &name))?;
            room.commit();
            Ok::<_, ApiError>(kv)
        }
        .await;
        // Refused past admission: the quota usage admission raised is counted again.
        if let (Err(_), Some(replenish), Some(ns)) = (&written, &self.replenish, namespace) {
            replenish.note(ns);
        }
        let kv = written?;
        self.note_write(kv.mod_revision);
        self.observe(None, Some(&stored));
        // The answer is what was stored (the bytes are `stored` written out, which reads back the same), as a read
        // gives it: not parsed again from the bytes.
        let stored = self.as_read(stored, kv.mod_revision);
        Ok(self.written(self.to_request_version(stored)?, warnings, true))
    }
}

/// The metadata the host gives every new object.
fn host_metadata() -> [(&'static str, Value); 3] {
    [
        ("uid", json!(uuid::Uuid::new_v4().to_string())),
        ("creationTimestamp", json!(object::now_rfc3339())),
        ("generation", json!(1)),
    ]
}

/// A create's object may not carry a resourceVersion.
fn check_no_resource_version(obj: &Value) -> Result<(), ApiError> {
    if meta_str(obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    Ok(())
}
