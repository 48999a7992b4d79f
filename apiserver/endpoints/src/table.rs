//! `meta.k8s.io` Table responses for `kubectl get`: the columns of the request's version and their cells (from the
//! plugin's `table-convertor`, or a CRD's printer columns), or the default Name and Age columns.

use serde_json::{json, Value};

use apimachinery::plugin::PluginError;
use apimachinery::scheme::ResourceInfo;
use apimachinery::status::ApiError;
use registry::store::{stored_identity, ResourceStore, SharedPage};
use rest::plugin::Plugin;
use storage::cacher::SharedObject;

/// The memo entry of a stored object's table cells in a version, after this prefix (no API version is spelled so).
const TABLE_ROW: &str = "\0table-row ";

/// What each row embeds (`?includeObject=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter.
    pub fn parse(v: Option<&str>) -> Result<IncludeObject, ApiError> {
        match v {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "includeObject: unsupported value \"{other}\": supported values: \"None\", \"Metadata\", \"Object\""
            ))),
        }
    }
}

/// Builds Table rows and column definitions for one resource.
pub struct TableBuilder<'a> {
    /// The plugin.
    pub plugin: &'a Plugin,
    /// The resource.
    pub resource: &'a ResourceInfo,
    /// The request's version of the resource, whose columns the table has.
    pub version: &'a str,
    /// The Table's version (`v1` or `v1beta1`).
    pub table_version: &'static str,
    /// What rows embed.
    pub include: IncludeObject,
}

impl TableBuilder<'_> {
    fn custom_columns(&self) -> Option<&[apimachinery::scheme::Column]> {
        self.resource.columns(self.version)
    }

    /// The column definitions.
    pub fn columns(&self) -> Value {
        match self.custom_columns() {
            Some(cols) => Value::Array(
                cols.iter()
                    .map(|c| {
                        json!({"name": c.name, "type": c.type_, "format": c.format,
                               "description": c.description, "priority": c.priority})
                    })
                    .collect(),
            ),
            None => json!([
                {"name": "Name", "type": "string", "format": "name", "priority": 0,
                 "description": "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"},
                {"name": "Age", "type": "date", "format": "", "priority": 0,
                 "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
            ]),
        }
    }

    /// The plugin's cells for a stored object, remembered with its conversions (a stored revision never changes).
    fn cells(&self, stored: &Value) -> Result<Vec<Value>, PluginError> {
        // A decorated object's cells are not remembered: its decorations change without a new revision.
        let identity = stored_identity(&self.plugin.group.group, self.resource, stored)
            .filter(|_| !self.plugin.strategy.decorates(&self.resource.plural));
        let memo = &self.plugin.conversions;
        let entry = format!("{TABLE_ROW}{}", self.version);
        if let Some((key, revision)) = &identity {
            if let Some(Value::Array(cells)) = memo.get(key, *revision, &entry) {
                return Ok(cells);
            }
        }
        let cells = self
            .plugin
            .strategy
            .table_row(&self.resource.plural, self.version, stored)?;
        if let Some((key, revision)) = identity {
            memo.insert(&key, revision, &entry, &Value::Array(cells.clone()));
        }
        Ok(cells)
    }

    /// One row for a stored object (storage version); `object` is the object in the request's version, embedded
    /// when `includeObject=Object`.
    pub fn row(&self, stored: &Value, object: Option<&Value>) -> Result<Value, ApiError> {
        let name = stored
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let created = stored
            .get("metadata")
            .and_then(|m| m.get("creationTimestamp"))
            .and_then(Value::as_str);
        let cells: Vec<Value> = match self.custom_columns() {
            Some(cols) => {
                let cells = self.cells(stored).map_err(|e| {
                    e.into_api_error(
                        &self.plugin.group.group,
                        &self.resource.plural,
                        &self.resource.kind,
                        name,
                    )
                })?;
                if cells.len() != cols.len() {
                    return Err(ApiError::internal(format!(
                        "plugin {:?} returned {} cells for {} columns of {}",
                        self.plugin.name(),
                        cells.len(),
                        cols.len(),
                        self.resource.plural
                    )));
                }
                cells
                    .into_iter()
                    .zip(cols)
                    .map(|(cell, col)| match cell.as_str() {
                        // Ages change while the cells are remembered: they are computed here, from the timestamp.
                        // An empty one is kube's zero time.
                        Some("") if col.shows_age => json!("<unknown>"),
                        Some(ts) if col.shows_age => json!(age(ts)),
                        _ => cell,
                    })
                    .collect()
            }
            None => vec![
                json!(name),
                json!(created.map(age).unwrap_or_else(|| "<unknown>".into())),
            ],
        };
        let mut row = json!({"cells": cells});
        match self.include {
            IncludeObject::None => {}
            IncludeObject::Metadata => {
                row["object"] = json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": format!("meta.k8s.io/{}", self.table_version),
                    "metadata": stored.get("metadata").cloned().unwrap_or(json!({})),
                });
            }
            IncludeObject::Object => row["object"] = object.cloned().unwrap_or_else(|| stored.clone()),
        }
        Ok(row)
    }

    /// The JSON of a Table of a page's objects, as [`TableBuilder::table`] serializes: each row written from the
    /// stored bytes when its cells are remembered ([`TableBuilder::wire_row`]), else made from the parsed object;
    /// and how many rows were written from the stored bytes.
    pub fn wire_table(&self, store: &ResourceStore, page: &SharedPage) -> Result<(Vec<u8>, usize), ApiError> {
        let mut meta = json!({"resourceVersion": page.list.revision.to_string()});
        if let Some(c) = &page.continue_token {
            meta["continue"] = json!(c);
        }
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
        let serialize = |e: serde_json::Error| ApiError::internal(e.to_string());
        let mut out = Vec::with_capacity(page.list.items.iter().map(|o| o.kv.value.len()).sum::<usize>() + 4096);
        out.extend_from_slice(b"{\"apiVersion\":");
        serde_json::to_writer(&mut out, &format!("meta.k8s.io/{}", self.table_version)).map_err(serialize)?;
        out.extend_from_slice(b",\"columnDefinitions\":");
        serde_json::to_writer(&mut out, &self.columns()).map_err(serialize)?;
        out.extend_from_slice(b",\"kind\":\"Table\",\"metadata\":");
        serde_json::to_writer(&mut out, &meta).map_err(serialize)?;
        out.extend_from_slice(b",\"rows\":[");
        // The stored form begins with the apiVersion (keys are in byte order).
        let storage_version = format!(
            "{{\"apiVersion\":{},",
            Value::from(format!(
                "{}/{}",
                self.plugin.group.group,
                self.resource.storage_version()
            ))
        );
        let entry = format!("{TABLE_ROW}{}", self.version);
        let mut wired = 0;
        for (i, object) in page.list.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let start = out.len();
            if self.wire_row(object, &storage_version, &entry, &mut out).is_some() {
                wired += 1;
            } else {
                out.truncate(start);
                let obj = store.parsed_object(&object.kv)?;
                let row = self.row(&store.stored_form(&obj)?, Some(&obj))?;
                serde_json::to_writer(&mut out, &row).map_err(serialize)?;
            }
        }
        out.extend_from_slice(b"]}");
        Ok((out, wired))
    }

    /// Writes the row of a stored object without parsing it, as [`TableBuilder::row`] makes and `serde_json`
    /// serializes it: the remembered cells (ages computed now), and the metadata from the stored bytes with the
    /// resourceVersion spliced in. `None` (with something written, perhaps) when the row must be made from the
    /// parsed object: the cells not remembered, the whole object asked for (`includeObject=Object`), an object
    /// not in the storage version (`storage_version`: how its JSON begins) or not in the stored form, or the
    /// default columns (whose cells come from the metadata).
    fn wire_row(&self, object: &SharedObject, storage_version: &str, entry: &str, out: &mut Vec<u8>) -> Option<()> {
        let kv = &object.kv;
        let splice = object.splice?;
        let cols = self.custom_columns()?;
        if self.include == IncludeObject::Object || !kv.value.starts_with(storage_version.as_bytes()) {
            return None;
        }
        let text = self.plugin.conversions.get_text(&kv.key, kv.mod_revision, entry)?;
        let Ok(Value::Array(cells)) = serde_json::from_str::<Value>(&text) else {
            return None;
        };
        if cells.len() != cols.len() {
            return None;
        }
        let cells: Vec<Value> = cells
            .into_iter()
            .zip(cols)
            .map(|(cell, col)| match cell.as_str() {
                Some("") if col.shows_age => json!("<unknown>"),
                Some(ts) if col.shows_age => json!(age(ts)),
                _ => cell,
            })
            .collect();
        out.extend_from_slice(b"{\"cells\":");
        serde_json::to_writer(&mut *out, &cells).ok()?;
        if self.include == IncludeObject::Metadata {
            out.extend_from_slice(b",\"object\":{\"apiVersion\":\"meta.k8s.io/");
            out.extend_from_slice(self.table_version.as_bytes());
            out.extend_from_slice(b"\",\"kind\":\"PartialObjectMetadata\",\"metadata\":");
            splice.write_metadata(&kv.value, kv.mod_revision.to_string().as_bytes(), out);
            out.push(b'}');
        }
        out.push(b'}');
        Some(())
    }

    /// A whole Table.
    pub fn table(&self, rows: Vec<Value>, list_meta: Value) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{}", self.table_version),
            "metadata": list_meta,
            "columnDefinitions": self.columns(),
            "rows": rows,
        })
    }
}

/// A timestamp's age, in kubectl's short human form (`5s`, `3m2s`, `4h`, `12d`).
pub fn age(timestamp: &str) -> String {
    let Ok(t) = chrono::DateTime::parse_from_rfc3339(timestamp) else {
        return "<invalid>".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds();
    human_duration(secs)
}

/// Kubernetes' `duration.HumanDuration`, for whole seconds.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        let y = d / 365;
        if d % 365 == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{}y", d / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(50 * 3600), "2d2h");
        assert_eq!(human_duration(-5), "<invalid>");
    }
}
