//! Reads: get and list (from the watch cache when there is one), selectors, pages and continue tokens; lists
//! written from the stored bytes ([`ResourceStore::list_wire`]).

use super::{plugin_failure, ListOut, ListParams, ResourceStore};
use crate::read::ReadAt;
use apimachinery::fields::FieldSelector;
use apimachinery::object::{self, meta_str};
use apimachinery::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;
use storage::cacher::splice::Splice;
use storage::cacher::{SharedList, SharedObject};
use storage::keys::{key_prefix, object_key};
use storage::{KeyValue, ListOptions, ListResult, Revision, StorageError};

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

/// Whether a list selects objects by labels or fields.
pub(super) fn selective(params: &ListParams) -> bool {
    params.labels.as_ref().is_some_and(|l| !l.is_empty()) || params.fields.as_ref().is_some_and(|f| !f.is_empty())
}

/// The continue token and remaining item count of a page read at `revision` ending with `last`, with `remaining`
/// objects after it.
fn page_end(
    params: &ListParams,
    revision: Revision,
    remaining: u64,
    last: Option<&KeyValue>,
) -> (Option<String>, Option<u64>) {
    match (params.limit, remaining, last) {
        (limit, rem, Some(last)) if limit > 0 && rem > 0 => (Some(encode_continue(revision, &last.key)), Some(rem)),
        _ => (None, None),
    }
}

/// One item of a [`WireList`]: JSON bytes of an object in the request's version, with its resourceVersion.
#[derive(Debug)]
pub enum WireItem {
    /// A stored object in the request's version, written with `"resourceVersion":"<mod revision>"` spliced in.
    Stored {
        /// The object as stored (shared with the watch cache).
        kv: Arc<KeyValue>,
        /// Where its resourceVersion goes.
        splice: Splice,
    },
    /// The plugin's remembered conversion of the stored object to the request's version.
    Remembered(Arc<str>),
    /// The object parsed, converted and serialized for this request.
    Encoded(Vec<u8>),
}

impl WireItem {
    /// The length of the item's JSON.
    pub fn len(&self) -> usize {
        match self {
            WireItem::Stored { kv, splice } => splice.spliced_len(kv.value.len(), decimal_len(kv.mod_revision)),
            WireItem::Remembered(text) => text.len(),
            WireItem::Encoded(bytes) => bytes.len(),
        }
    }

    /// Whether the item's JSON is empty (never: an object is at least `{}`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the item's JSON to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            WireItem::Stored { kv, splice } => {
                let mut digits = [0u8; 20];
                splice.write(&kv.value, decimal(kv.mod_revision, &mut digits), out);
            }
            WireItem::Remembered(text) => out.extend_from_slice(text.as_bytes()),
            WireItem::Encoded(bytes) => out.extend_from_slice(bytes),
        }
    }
}

/// The length of `n` in decimal (a revision: not negative; a negative one is written as 0).
fn decimal_len(n: i64) -> usize {
    (n.max(0) as u64).checked_ilog10().unwrap_or(0) as usize + 1
}

/// `n` in decimal, written into `buf` (a revision: not negative; a negative one is written as 0).
pub(super) fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = n.max(0) as u64;
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

#[cfg(test)]
#[test]
fn wire_list_revisions_in_decimal() {
    for n in [0, 1, 9, 10, 99, 100, 12345, i64::MAX] {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        assert_eq!(decimal_len(n), n.to_string().len());
    }
}

/// A page of a list with its objects shared with the watch cache ([`ResourceStore::list_shared`]).
#[derive(Debug)]
pub struct SharedPage {
    /// The objects, as stored, and the list's revision.
    pub list: SharedList,
    /// The continue token for the next page.
    pub continue_token: Option<String>,
    /// How many items remain after this page (when paginating).
    pub remaining: Option<u64>,
}

/// A list to be written from the objects' JSON bytes without parsing them: the response body of a list in JSON
/// (see `endpoints::wire_list`).
#[derive(Debug)]
pub struct WireList {
    /// The items, in order.
    pub items: Vec<WireItem>,
    /// The list's resourceVersion.
    pub resource_version: i64,
    /// The continue token for the next page.
    pub continue_token: Option<String>,
    /// How many items remain after this page (when paginating).
    pub remaining: Option<u64>,
}

impl ResourceStore {
    /// Reads one object in the request's version, at least as fresh as `at` asks (the latest state comes from
    /// storage, older ones from the watch cache).
    pub async fn get(&self, namespace: Option<&str>, name: &str, at: ReadAt) -> Result<Value, ApiError> {
        let object = self.read_object(namespace, name, at).await?;
        let kv = &object.kv;
        let obj = self.parse_stored(kv)?;
        self.stored_to_request_version(&kv.key, kv.mod_revision, obj)
    }

    /// [`ResourceStore::get`] written from the stored bytes, as [`ResourceStore::list_wire`] writes a list's items
    /// (see [`WireItem`]), or `None` when the request needs the parsed object (schema defaults applied on read, or a strategy that decorates).
    pub async fn get_wire(
        &self,
        namespace: Option<&str>,
        name: &str,
        at: ReadAt,
    ) -> Result<Option<WireItem>, ApiError> {
        if !self.reads_from_bytes() {
            return Ok(None);
        }
        let object = self.read_object(namespace, name, at).await?;
        Ok(self.wire_items(std::slice::from_ref(&object))?.pop())
    }

    /// The stored object named `name`, as fresh as `at` asks; 404 when there is none.
    async fn read_object(&self, namespace: Option<&str>, name: &str, at: ReadAt) -> Result<SharedObject, ApiError> {
        let key = object_key(self.group(), self.plural(), namespace, name);
        let object = self.read_one(&key, at).await.map_err(|e| self.storage_err(e, name))?;
        object.ok_or_else(|| ApiError::not_found(self.group(), self.plural(), name))
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
                self.plugin
                    .strategy
                    .get_attrs(self.plural(), obj)
                    .map_err(|e| plugin_failure(e, self, object::name(obj)))?
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

    /// Where and how fresh a list reads: the key prefix, the storage options, the revision asked for, and whether
    /// it continues a paginated list.
    fn list_plan(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<(String, ListOptions, ReadAt, bool), ApiError> {
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
        Ok((prefix, options, at, continued))
    }

    /// The API error of a list's failed read (`continued`: of a page after the first, starting after `start_after`).
    fn list_error(&self, e: StorageError, continued: bool, start_after: Option<&str>) -> ApiError {
        match e {
            StorageError::Compacted { .. } if continued => {
                let mut expired = ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                );
                expired.continue_token = start_after.map(|start| encode_continue(-1, start));
                expired
            }
            other => self.storage_err(other, ""),
        }
    }

    /// Lists objects, as fresh as the parameters ask: consistent lists, lists at "0" or not older than a
    /// revision, and the pages of a paginated list come from the watch cache when there is one.
    pub async fn list(&self, namespace: Option<&str>, params: &ListParams) -> Result<ListOut, ApiError> {
        let (prefix, options, at, continued) = self.list_plan(namespace, params)?;
        let result = self
            .read_list(&prefix, options.clone(), at)
            .await
            .map_err(|e| self.list_error(e, continued, options.start_after.as_deref()))?;
        if params.limit == 0 || !selective(params) {
            let items = self.selected(&result.items, params)?;
            let (continue_token, remaining) = page_end(params, result.revision, result.remaining, result.items.last());
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

    /// A list written from the stored bytes (see [`WireList`]), or `None` when this request needs the parsed
    /// objects: a label or field selector, schema defaults applied on read, a strategy that decorates. Items in the storage version are
    /// the stored JSON with their resourceVersion spliced in; items in another version are the plugin's remembered
    /// conversions, as text; the rest (objects not in the stored form, conversions not remembered yet) are parsed,
    /// converted and serialized here, exactly as [`ResourceStore::list`] does.
    pub async fn list_wire(&self, namespace: Option<&str>, params: &ListParams) -> Result<Option<WireList>, ApiError> {
        let Some(page) = self.list_shared(namespace, params).await? else {
            return Ok(None);
        };
        Ok(Some(WireList {
            items: self.wire_items(&page.list.items)?,
            resource_version: page.list.revision,
            continue_token: page.continue_token,
            remaining: page.remaining,
        }))
    }

    /// The stored objects of a list, shared with the watch cache when it serves the list (for writing them without
    /// parsing them), or `None` when the request needs the parsed objects: a label or field selector, schema
    /// defaults applied on read, a strategy that decorates.
    pub async fn list_shared(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<Option<SharedPage>, ApiError> {
        if selective(params) || !self.reads_from_bytes() {
            return Ok(None);
        }
        let (prefix, options, at, continued) = self.list_plan(namespace, params)?;
        let list = self
            .read_list_shared(&prefix, options.clone(), at)
            .await
            .map_err(|e| self.list_error(e, continued, options.start_after.as_deref()))?;
        let (continue_token, remaining) =
            page_end(params, list.revision, list.remaining, list.items.last().map(|o| &*o.kv));
        Ok(Some(SharedPage {
            list,
            continue_token,
            remaining,
        }))
    }

    /// A stored object parsed, in the request's version, with its resourceVersion (as a list has it).
    pub fn parsed_object(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        self.stored_to_request_version(&kv.key, kv.mod_revision, self.parse_stored(kv)?)
    }

    /// The [`WireItem`]s of stored objects: in the storage version when that is the request's, the stored JSON with
    /// the resourceVersion spliced in; in another version, the plugin's remembered conversions, as text; the rest
    /// (objects not in the stored form, conversions not remembered yet) parsed, converted and serialized here, as
    /// the parsed reads do.
    pub(super) fn wire_items(&self, objects: &[SharedObject]) -> Result<Vec<WireItem>, ApiError> {
        // The stored form begins with the apiVersion (keys are in byte order).
        let mut in_request_version = br#"{"apiVersion":"#.to_vec();
        serde_json::to_writer(&mut in_request_version, &self.api_version())
            .map_err(|e| ApiError::internal(e.to_string()))?;
        in_request_version.push(b',');
        let stored = |object: &SharedObject| {
            object
                .splice
                .filter(|_| object.kv.value.starts_with(&in_request_version))
        };
        // The conversions remembered for the objects not in the request's version, looked up together.
        let mut remembered = self
            .plugin
            .conversions
            .get_texts(
                objects
                    .iter()
                    .filter(|o| stored(o).is_none())
                    .map(|o| (o.kv.key.as_str(), o.kv.mod_revision)),
                &self.version,
            )
            .into_iter();
        let mut items = Vec::with_capacity(objects.len());
        for object in objects {
            let kv = &object.kv;
            let item = match stored(object) {
                Some(splice) => WireItem::Stored { kv: kv.clone(), splice },
                None => match remembered.next().flatten() {
                    Some(text) => WireItem::Remembered(text),
                    None => {
                        let obj = self.stored_to_request_version(&kv.key, kv.mod_revision, self.parse_stored(kv)?)?;
                        WireItem::Encoded(serde_json::to_vec(&obj).map_err(|e| ApiError::internal(e.to_string()))?)
                    }
                },
            };
            items.push(item);
        }
        Ok(items)
    }

    /// [`Self::read_list`], with the objects shared with the watch cache when it serves the list.
    pub(super) async fn read_list_shared(
        &self,
        prefix: &str,
        options: ListOptions,
        at: ReadAt,
    ) -> Result<SharedList, StorageError> {
        let Some(cache) = &self.cache else {
            return Ok(SharedList::located(self.read_list(prefix, options, at).await?));
        };
        match at {
            ReadAt::Latest => cache.consistent_list_shared(prefix, options).await,
            ReadAt::Any => cache.list_shared(prefix, options, cache.last_write()).await,
            ReadAt::NotOlderThan(n) => cache.list_shared(prefix, options, n).await,
            ReadAt::Exact(revision) => cache.list_shared(prefix, ListOptions { revision, ..options }, 0).await,
        }
    }

    /// Reads one key as fresh as `at` asks. With [`Self::read_list`], the one place that decides whether a read is
    /// served by the watch cache or by storage: the latest state from storage, older ones from the cache when there
    /// is one; storage fails when it has not reached the revision asked for yet.
    /// The object comes shared with the watch cache when it serves the read, with the place of its resourceVersion
    /// found (for [`ResourceStore::get_wire`]).
    async fn read_one(&self, key: &str, at: ReadAt) -> Result<Option<SharedObject>, StorageError> {
        let located = |kv: Option<KeyValue>| kv.map(SharedObject::located);
        match (&self.cache, at) {
            // `resourceVersion=0` may be served stale, but never older than this host's own last write of the
            // resource: a client that wrote and then reads (an informer's first list) sees its write.
            (Some(cache), ReadAt::Any) => cache.get_shared(key, cache.last_write()).await,
            (Some(cache), ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => cache.get_shared(key, n).await,
            (None, ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => {
                let current = self.storage.current_revision().await?;
                if current < n {
                    return Err(StorageError::TooLargeRevision { requested: n, current });
                }
                Ok(located(self.storage.get(key).await?))
            }
            // No resourceVersion: a consistent read, from the cache once it has caught up with storage.
            (Some(cache), ReadAt::Latest) => cache.consistent_get_shared(key).await,
            (None, ReadAt::Latest | ReadAt::Any) => Ok(located(self.storage.get(key).await?)),
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
