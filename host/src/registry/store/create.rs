//! Create (POST): admission, the plugin's create strategy, metadata validation, quota, storage.

use super::*;

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
        let mut obj = self.admit_body(body, namespace, opts, &mut warnings)?;
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let generate = object::name(&obj).is_empty() && meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
        if generate {
            let base = meta_str(&obj, "generateName").unwrap_or("").to_string();
            meta_mut(&mut obj).insert("name".into(), json!(crate::apimachinery::generate_name(&base)));
        }
        {
            let m = meta_mut(&mut obj);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
            m.insert("generation".into(), json!(1));
            m.remove("deletionTimestamp");
            m.remove("deletionGracePeriodSeconds");
            m.remove("selfLink");
        }
        if self.resource.subresources(&self.version).status {
            // With a `/status`, a create starts without a status (kube's custom resource strategy).
            object::set_status(&mut obj, None);
        }
        let obj = self.mutate(wit::Operation::Create, namespace, obj, None, opts.dry_run)?;
        let name = object::name(&obj).to_string();
        let prepared =
            strategy::prepare_for_create(&self.plugin, self.plural(), &obj).map_err(|e| pe(e, self, &name))?;
        let mut obj = Self::keep_host_metadata(&obj, prepared);
        if !tracked {
            self.track_fields(None, &mut obj)?;
        }
        // As kube's BeforeCreate: metadata is validated after mutating admission and the strategy's preparation.
        self.validate_meta(&obj)?;
        let validation = strategy::validate(&self.plugin, self.plural(), &obj).map_err(|e| pe(e, self, &name))?;
        self.check_validation(validation, &name, &mut warnings)?;
        self.validate_admission(
            wit::Operation::Create,
            namespace,
            &name,
            Some(&obj),
            None,
            opts.dry_run,
            &mut warnings,
        )?;
        self.host_admission(
            crate::registry::admission::Operation::Create,
            namespace,
            &name,
            &obj,
            None,
        )
        .await?;
        let mut stored = self.to_storage_version(obj)?;
        object::strip_resource_version(&mut stored);
        if opts.dry_run {
            return Ok(Written {
                object: self.to_request_version(stored)?,
                warnings,
                created: true,
            });
        }
        let key = object_key(self.group(), self.plural(), namespace, &name);
        let value = stored.to_string().into_bytes();
        let room = self.reserve(&name, 1, value.len() as i64)?;
        let kv = self
            .storage
            .create(&key, value)
            .await
            .map_err(|e| self.storage_err(e, &name))?;
        room.commit();
        self.note_write(kv.mod_revision);
        self.observe(None, Some(&stored));
        let out = self.parse_stored(&kv)?;
        Ok(Written {
            object: self.to_request_version(out)?,
            warnings,
            created: true,
        })
    }
}
