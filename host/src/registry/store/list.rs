//! Reads: get and list (from the watch cache when there is one), selectors, pages and continue tokens.

use super::*;

/// Encodes a continue token: the list's revision and the last key returned.
pub fn encode_continue(revision: i64, last_key: &str) -> String {
    use base64::Engine as _;
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// Decodes a continue token.
pub fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    use base64::Engine as _;
    let bad = || ApiError::bad_request("continue key is not valid: the token is malformed");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    // -1: continue at the latest revision (a token handed out with an expiry); 0 and other negatives are invalid.
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .filter(|rv| *rv > 0 || *rv == -1)
        .ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}

impl ResourceStore {
    /// Reads one object in the request's version, at least as fresh as `at` asks (the latest state comes from
    /// storage, older ones from the watch cache).
    pub async fn get(&self, namespace: Option<&str>, name: &str, at: ReadAt) -> Result<Value, ApiError> {
        let key = object_key(self.group(), self.plural(), namespace, name);
        let kv = self.read_one(&key, at).await.map_err(|e| self.storage_err(e, name))?;
        let kv = kv.ok_or_else(|| ApiError::not_found(self.group(), self.plural(), name))?;
        let obj = self.parse_stored(&kv)?;
        self.stored_to_request_version(&kv.key, kv.mod_revision, obj)
    }

    /// Checks a field selector's fields against the resource's selectable fields.
    pub fn check_field_selector(&self, fs: &FieldSelector) -> Result<(), ApiError> {
        let extra = self
            .plugin
            .selectable_fields
            .iter()
            .find(|(r, _)| r == self.plural())
            .map(|(_, f)| f.as_slice())
            .unwrap_or(&[]);
        for field in fs.requirements().iter().map(|r| r.field.as_str()) {
            if field != "metadata.name" && field != "metadata.namespace" && !extra.iter().any(|f| f == field) {
                return Err(ApiError::bad_request(format!(
                    "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"{}",
                    extra.iter().map(|f| format!(", \"{f}\"")).collect::<String>()
                )));
            }
        }
        Ok(())
    }

    /// Whether a stored object (storage version) matches the selectors.
    pub(super) fn matches(&self, obj: &Value, params: &ListParams) -> Result<bool, ApiError> {
        if let Some(ls) = &params.labels {
            if !ls.matches(&object::labels(obj)) {
                return Ok(false);
            }
        }
        if let Some(fs) = &params.fields {
            let needs_plugin = fs
                .requirements()
                .iter()
                .any(|r| r.field != "metadata.name" && r.field != "metadata.namespace");
            let attrs = if needs_plugin {
                strategy::get_attrs(&self.plugin, self.plural(), obj).map_err(|e| pe(e, self, object::name(obj)))?
            } else {
                Vec::new()
            };
            let ok = fs.matches(|field| match field {
                "metadata.name" => Some(object::name(obj).to_string()),
                "metadata.namespace" => Some(meta_str(obj, "namespace").unwrap_or("").to_string()),
                other => attrs.iter().find(|(k, _)| k == other).map(|(_, v)| v.clone()),
            });
            return Ok(ok);
        }
        Ok(true)
    }

    /// Lists objects, as fresh as the parameters ask: consistent lists, lists at "0" or not older than a
    /// revision, and the pages of a paginated list come from the watch cache when there is one.
    pub async fn list(&self, namespace: Option<&str>, params: &ListParams) -> Result<ListOut, ApiError> {
        let prefix = key_prefix(self.group(), self.plural(), namespace);
        let mut options = ListOptions {
            limit: params.limit,
            ..Default::default()
        };
        let rv = params.resource_version.as_deref();
        let rv_match = params.resource_version_match.as_deref();
        let (at, continued) = match &params.continue_token {
            Some(token) => {
                ReadAt::check_continue(rv, rv_match)?;
                let (revision, start) = decode_continue(token)?;
                if !start.starts_with(&prefix) {
                    return Err(ApiError::bad_request("the continue token does not belong to this list"));
                }
                options.start_after = Some(start);
                // A token from an expired one continues at the latest revision, as in Kubernetes.
                let at = if revision == -1 {
                    ReadAt::Latest
                } else {
                    ReadAt::Exact(revision)
                };
                (at, true)
            }
            None => (ReadAt::for_list(rv, rv_match, params.limit)?, false),
        };
        let result = self.read_list(&prefix, options.clone(), at).await.map_err(|e| match e {
            StorageError::Compacted { .. } if continued => {
                let mut expired = ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                );
                expired.continue_token = options.start_after.as_deref().map(|start| encode_continue(-1, start));
                expired
            }
            other => self.storage_err(other, ""),
        })?;
        let selective = params.labels.as_ref().is_some_and(|l| !l.is_empty())
            || params.fields.as_ref().is_some_and(|f| !f.is_empty());
        if params.limit == 0 || !selective {
            let items = self.selected(&result.items, params)?;
            let (continue_token, remaining) = match (params.limit, result.remaining, result.items.last()) {
                (limit, rem, Some(last)) if limit > 0 && rem > 0 => {
                    (Some(encode_continue(result.revision, &last.key)), Some(rem))
                }
                _ => (None, None),
            };
            return Ok(ListOut {
                items,
                resource_version: result.revision,
                continue_token,
                remaining,
            });
        }
        // With a selector, pages are read at the same revision until `limit` objects match, as kube fills them; the
        // count of what remains is unknown then, and is left out.
        let revision = result.revision;
        let mut items = Vec::new();
        let mut page = result;
        loop {
            let mut last_key = None;
            let mut unread = page.remaining > 0;
            for (i, kv) in page.items.iter().enumerate() {
                let obj = self.parse_stored(kv)?;
                if self.matches(&obj, params)? {
                    items.push(self.stored_to_request_version(&kv.key, kv.mod_revision, obj)?);
                }
                last_key = Some(kv.key.clone());
                if items.len() == params.limit {
                    unread |= i + 1 < page.items.len();
                    break;
                }
            }
            let Some(last_key) = last_key.filter(|_| unread) else {
                return Ok(ListOut {
                    items,
                    resource_version: revision,
                    continue_token: None,
                    remaining: None,
                });
            };
            if items.len() == params.limit {
                return Ok(ListOut {
                    items,
                    resource_version: revision,
                    continue_token: Some(encode_continue(revision, &last_key)),
                    remaining: None,
                });
            }
            let next = ListOptions {
                limit: params.limit,
                start_after: Some(last_key),
                ..Default::default()
            };
            page = self
                .read_list(&prefix, next, ReadAt::Exact(revision))
                .await
                .map_err(|e| self.storage_err(e, ""))?;
        }
    }

    /// The stored objects that match the selectors, in the request's version.
    pub(super) fn selected(&self, kvs: &[KeyValue], params: &ListParams) -> Result<Vec<Value>, ApiError> {
        let mut items = Vec::with_capacity(kvs.len());
        for kv in kvs {
            let obj = self.parse_stored(kv)?;
            if self.matches(&obj, params)? {
                items.push(self.stored_to_request_version(&kv.key, kv.mod_revision, obj)?);
            }
        }
        Ok(items)
    }

    /// Reads one key as fresh as `at` asks. With [`Self::read_list`], the one place that decides whether a read is
    /// served by the watch cache or by storage: the latest state from storage, older ones from the cache when there
    /// is one; storage fails when it has not reached the revision asked for yet.
    async fn read_one(&self, key: &str, at: ReadAt) -> Result<Option<KeyValue>, StorageError> {
        match (&self.cache, at) {
            // `resourceVersion=0` may be served stale, but never older than this host's own last write of the
            // resource: a client that wrote and then reads (an informer's first list) sees its write.
            (Some(cache), ReadAt::Any) => cache.get(key, cache.last_write()).await,
            (Some(cache), ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => cache.get(key, n).await,
            (None, ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => {
                let current = self.storage.current_revision().await?;
                if current < n {
                    return Err(StorageError::TooLargeRevision { requested: n, current });
                }
                self.storage.get(key).await
            }
            // No resourceVersion: a consistent read, from the cache once it has caught up with storage.
            (Some(cache), ReadAt::Latest) => cache.consistent_get(key).await,
            (None, ReadAt::Latest | ReadAt::Any) => self.storage.get(key).await,
        }
    }

    /// Reads the keys under `prefix` as fresh as `at` asks, from the watch cache when there is one.
    pub(super) async fn read_list(
        &self,
        prefix: &str,
        options: ListOptions,
        at: ReadAt,
    ) -> Result<ListResult, StorageError> {
        let Some(cache) = &self.cache else {
            return match at {
                ReadAt::Exact(revision) => self.storage.list(prefix, ListOptions { revision, ..options }).await,
                ReadAt::NotOlderThan(n) => {
                    let result = self.storage.list(prefix, options).await?;
                    if result.revision < n {
                        return Err(StorageError::TooLargeRevision {
                            requested: n,
                            current: result.revision,
                        });
                    }
                    Ok(result)
                }
                ReadAt::Latest | ReadAt::Any => self.storage.list(prefix, options).await,
            };
        };
        match at {
            ReadAt::Latest => cache.consistent_list(prefix, options).await,
            ReadAt::Any => cache.list(prefix, options, cache.last_write()).await,
            ReadAt::NotOlderThan(n) => cache.list(prefix, options, n).await,
            ReadAt::Exact(revision) => cache.list(prefix, ListOptions { revision, ..options }, 0).await,
        }
    }
}
