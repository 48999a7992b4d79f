//! The scope of one resource request (like `k8s.io/apiserver`'s `handlers.RequestScope`): its request info, the
//! resource's store bound to the request's user, the negotiated output, and the parameters every verb reads.

use std::collections::HashMap;
use std::sync::Arc;

use hyper::{Response, StatusCode};
use serde_json::Value;

use super::negotiate::Output;
use super::request_info::RequestInfo;
use super::response::{self, add_warnings, Body};
use super::table::{IncludeObject, TableBuilder};
use apimachinery::fields::FieldSelector;
use apimachinery::labels::LabelSelector;
use apimachinery::status::{ApiError, Cause};
use apimachinery::FieldError as HostFieldError;
use registry::store::{FieldValidation, ListParams, ResourceStore, WriteOptions};

/// Everything a verb handler needs about its request.
pub struct Scope<'a> {
    /// The parsed request info.
    pub info: std::borrow::Cow<'a, RequestInfo>,
    /// The resource's store for this request.
    pub store: Arc<ResourceStore>,
    /// Query parameters.
    pub query: &'a HashMap<String, String>,
    /// The negotiated output.
    pub output: Output,
    /// `?pretty`.
    pub pretty: bool,
    /// Warnings for every response (deprecated version).
    pub warnings: Vec<String>,
}

impl Scope<'_> {
    pub(crate) fn ns(&self) -> Option<&str> {
        self.info.namespace.as_deref()
    }

    pub(super) fn name(&self) -> &str {
        self.info.name.as_deref().unwrap_or("")
    }

    pub(crate) fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A boolean query parameter, spelled as Go's `strconv.ParseBool` accepts; `None` when absent or empty.
    pub(crate) fn bool_param(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.q(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => apimachinery::parse_bool(v)
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("invalid boolean for {key}: {v:?}"))),
        }
    }

    pub(super) fn respond(&self, code: StatusCode, value: &Value, warnings: &[String]) -> Response<Body> {
        let mut resp = response::object(code, self.output, value, self.pretty);
        add_warnings(&mut resp, warnings);
        resp
    }

    /// The options of a create, update or patch (`kind`: CreateOptions, UpdateOptions or PatchOptions), validated as
    /// kube validates them: an unsupported value is 422 Invalid on `<kind>.meta.k8s.io`.
    pub(crate) fn write_options(&self, kind: &str) -> Result<WriteOptions, ApiError> {
        let mut causes = Vec::new();
        let mut unsupported =
            |field: &str, value: &str, supported: &[&str]| causes.push(not_supported(field, value, supported));
        let dry_run = match self.q("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                unsupported("dryRun", other, &["All"]);
                false
            }
        };
        let field_validation = match self.q("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                unsupported("fieldValidation", other, &["Ignore", "Strict", "Warn"]);
                FieldValidation::Warn
            }
        };
        if let Some(manager) = self.q("fieldManager") {
            causes.extend(field_manager_causes(manager));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", kind, "", causes));
        }
        Ok(WriteOptions {
            dry_run,
            field_validation,
        })
    }

    /// The list/watch parameters from the query.
    pub fn list_params(&self) -> Result<ListParams, ApiError> {
        // Read when the request was routed; here a value that is no boolean is refused rather than read as false.
        self.bool_param("watch")?;
        let labels = match self.q("labelSelector").filter(|s| !s.is_empty()) {
            Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
            None => None,
        };
        let fields = match self.q("fieldSelector").filter(|s| !s.is_empty()) {
            Some(s) => {
                let fs = FieldSelector::parse(s)
                    .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
                self.store.check_field_selector(&fs)?;
                Some(fs)
            }
            None => None,
        };
        // A watch of one object's path (`.../flunders/a?watch=1`) selects that object, as kube does; a field
        // selector may only name the same object.
        let fields = match (self.info.name.as_deref(), fields) {
            (Some(name), Some(fs)) if !fs.is_empty() => {
                if fs.requires_exact_match("metadata.name") != Some(name) {
                    return Err(ApiError::bad_request(
                        "fieldSelector metadata.name doesn't match requested name",
                    ));
                }
                Some(fs)
            }
            (Some(name), _) => Some(FieldSelector::one_term_equal("metadata.name", name)),
            (None, fields) => fields,
        };
        let limit = match self.q("limit").filter(|s| !s.is_empty()) {
            Some(l) => l
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?
                .max(0) as usize,
            None => 0,
        };
        Ok(ListParams {
            labels,
            fields,
            limit,
            continue_token: self.q("continue").filter(|s| !s.is_empty()).map(str::to_string),
            resource_version: self.q("resourceVersion").map(str::to_string),
            resource_version_match: self.q("resourceVersionMatch").map(str::to_string),
            send_initial_events: self.bool_param("sendInitialEvents")?,
            allow_bookmarks: self.bool_param("allowWatchBookmarks")?.unwrap_or(false),
        })
    }

    /// A Table builder for this request, when the client asked for a Table.
    pub fn table(&self) -> Result<Option<TableBuilder<'_>>, ApiError> {
        let Some(table_version) = self.output.table else {
            return Ok(None);
        };
        Ok(Some(TableBuilder {
            plugin: &self.store.plugin,
            resource: &self.store.resource,
            version: &self.store.version,
            table_version,
            include: IncludeObject::parse(self.q("includeObject"))?,
        }))
    }

    /// An object read from storage, in the storage version, for table rows.
    pub fn stored_form(&self, obj: &Value) -> Result<Value, ApiError> {
        self.store.stored_form(obj)
    }
}

/// The problems of a `fieldManager`, as kube's ValidateFieldManager finds them: at most 128 bytes, printable.
pub(crate) fn field_manager_causes(manager: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if manager.len() > 128 {
        causes.push(HostFieldError::too_long("fieldManager", 128).into());
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            let detail = format!("invalid character U+{:04X} (at position {i})", u32::from(c));
            causes.push(HostFieldError::invalid("fieldManager", manager, &detail).into());
        }
    }
    causes
}

/// A `FieldValueNotSupported` cause, as kube's field.NotSupported words it.
pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    HostFieldError::not_supported(field, value, supported).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_managers_are_at_most_128_printable_bytes() {
        assert_eq!(field_manager_causes("ok"), Vec::<Cause>::new());
        assert_eq!(field_manager_causes(&"m".repeat(129))[0].reason, "FieldValueTooLong");
        assert_eq!(field_manager_causes("a\u{7}")[0].reason, "FieldValueInvalid");
    }
}
