//! Server-side apply (PATCH with `application/apply-patch+yaml`): the configuration is merged into the live object
//! for its field manager ([`schema::fieldmanager`]), conflicts with other managers refused unless forced,
//! and the result written through the update (or, for a missing object, the create) path.

use super::{field_manager_error, ResourceStore, Subresource, Written};
use crate::write_options::WriteOptions;
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::status::ApiError;
use schema::fieldmanager;
use serde_json::{json, Value};
use storage::keys::object_key;

impl ResourceStore {
    /// Applies a configuration (a decoded apply patch) for `self.field_manager`; `force` takes over the fields other
    /// managers own. Creates the object when it does not exist.
    pub async fn apply(
        &self,
        namespace: Option<&str>,
        name: &str,
        config: Value,
        force: bool,
        opts: WriteOptions,
    ) -> Result<Written, ApiError> {
        let mut warnings = Vec::new();
        let config = self.check_apply_config(config, namespace, name, opts, &mut warnings)?;
        let pinned = meta_str(&config, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(|rv| {
                rv.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))
            })
            .transpose()?;
        let key = object_key(self.group(), self.plural(), namespace, name);
        let api_version = self.api_version();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let time = object::now_rfc3339();
            let manager = fieldmanager::Manager {
                name: &self.field_manager,
                api_version: &api_version,
                subresource: self.subresource.as_str(),
                time: &time,
            };
            let current = self.storage.get(&key).await.map_err(|e| self.storage_err(e, name))?;
            let Some(current) = current else {
                if self.subresource != Subresource::None {
                    return Err(ApiError::not_found(self.group(), self.plural(), name));
                }
                if pinned.is_some() {
                    return Err(ApiError::not_found(self.group(), self.plural(), name));
                }
                let obj = fieldmanager::apply(self, None, &config, &manager, self.ownership_scope(), force)
                    .map_err(field_manager_error)?;
                let mut w = match self.create_tracked(namespace, obj, opts, true).await {
                    // Created meanwhile by someone else: apply to it.
                    Err(e) if e.reason == "AlreadyExists" && attempts < 5 => continue,
                    other => other?,
                };
                w.warnings.splice(0..0, warnings);
                return Ok(w);
            };
            if pinned.is_some_and(|rv| rv != current.mod_revision) {
                return Err(ApiError::modified(self.group(), self.plural(), name));
            }
            let old = self.to_request_version(self.parse_stored(&current)?)?;
            let merged = fieldmanager::apply(self, Some(&old), &config, &manager, self.ownership_scope(), force)
                .map_err(field_manager_error)?;
            let obj = self.admit_body(merged, namespace, opts, &mut Vec::new())?;
            match self
                .finish_update(namespace, name, obj, old, &current, opts, warnings.clone(), true)
                .await
            {
                Err(e) if e.reason == "Conflict" && e.causes.is_empty() && pinned.is_none() && attempts < 5 => continue,
                other => return other,
            }
        }
    }

    /// Checks an apply configuration as kube does: an object of the request's apiVersion and kind (both required),
    /// naming the object of the URL (or no name), its unknown fields handled per `fieldValidation`. Returns it with
    /// its name and namespace set; no defaults are applied (the applier owns only what it wrote).
    fn check_apply_config(
        &self,
        mut config: Value,
        namespace: Option<&str>,
        name: &str,
        opts: WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        if !config.is_object() {
            return Err(ApiError::bad_request("an apply configuration must be an object"));
        }
        let expected = self.api_version();
        match config.get("apiVersion").and_then(Value::as_str) {
            Some(v) if v == expected => {}
            None | Some("") => {
                return Err(ApiError::bad_request(
                    "apiVersion must be set in an apply configuration",
                ))
            }
            Some(v) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected})"
                )))
            }
        }
        match config.get("kind").and_then(Value::as_str) {
            Some(k) if k == self.resource.kind => {}
            None | Some("") => return Err(ApiError::bad_request("kind must be set in an apply configuration")),
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    self.resource.kind
                )))
            }
        }
        if !config.get("metadata").is_none_or(Value::is_object) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        match meta_str(&config, "name") {
            Some(n) if !n.is_empty() && n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )))
            }
            _ => {
                meta_mut(&mut config).insert("name".into(), json!(name));
            }
        }
        self.set_namespace(&mut config, namespace)?;
        self.prune_unknown(&mut config, opts, warnings)?;
        Ok(config)
    }
}
