//! Field sets across API versions. A manager's fields are recorded in the API version of the write that made them,
//! and a later write in another version is compared with them in that version, as structured-merge-diff does: the
//! objects are converted, not the field sets (the paths of `.spec.reference` in v1alpha1 and of
//! `.spec.fischerReference` in v1beta1 are the same field).

use std::collections::BTreeMap;

use serde_json::Value;

use super::fieldpath::FieldSet;
use super::typed::{self, Schema};
use super::{owned_in, Error, Scope};

/// The API versions of an object's type, as the field manager needs them.
pub trait Versions {
    /// The schema of the object in `api_version` (`group/version`); none when that version is not served.
    fn schema(&self, api_version: &str) -> Option<&Value>;

    /// The object converted to `api_version`.
    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String>;
}

/// One schema for every version, with no conversion: a type whose versions share their fields (and the tests).
impl Versions for Value {
    fn schema(&self, _api_version: &str) -> Option<&Value> {
        Some(self)
    }

    fn convert(&self, obj: &Value, _api_version: &str) -> Result<Value, String> {
        Ok(obj.clone())
    }
}

/// An object seen in the API versions managers recorded their fields in: each version's form is converted once.
pub(super) struct Forms<'a> {
    versions: &'a dyn Versions,
    /// The version the object is given in (the request's).
    request: &'a str,
    obj: &'a Value,
    converted: BTreeMap<String, Value>,
}

impl<'a> Forms<'a> {
    pub(super) fn new(versions: &'a dyn Versions, request: &'a str, obj: &'a Value) -> Forms<'a> {
        Forms {
            versions,
            request,
            obj,
            converted: BTreeMap::new(),
        }
    }

    /// The object in `version` with that version's schema; the request's form when `version` is the request's or
    /// is no longer served (its fields are then compared by path, the best that can be done).
    pub(super) fn get(&mut self, version: &str) -> Result<(&Value, Schema<'a>), Error> {
        let same = version == self.request || self.versions.schema(version).is_none();
        if same {
            let schema = self.versions.schema(self.request).unwrap_or(&Value::Null);
            return Ok((self.obj, Schema::object(schema)));
        }
        if !self.converted.contains_key(version) {
            let converted = self
                .versions
                .convert(self.obj, version)
                .map_err(|why| Error::Conversion(format!("converting to {version}: {why}")))?;
            self.converted.insert(version.to_owned(), converted);
        }
        let schema = self.versions.schema(version).unwrap_or(&Value::Null);
        Ok((&self.converted[version], Schema::object(schema)))
    }
}

/// The changes from an old to a new object, as each API version sees them (added or changed, removed), restricted
/// to what a write in `scope` may own.
pub(super) struct Changes<'a> {
    old: Forms<'a>,
    new: Forms<'a>,
    scope: Scope,
    by_version: BTreeMap<String, (FieldSet, FieldSet)>,
}

impl<'a> Changes<'a> {
    pub(super) fn new(
        versions: &'a dyn Versions,
        request: &'a str,
        old: &'a Value,
        new: &'a Value,
        scope: Scope,
    ) -> Changes<'a> {
        Changes {
            old: Forms::new(versions, request, old),
            new: Forms::new(versions, request, new),
            scope,
            by_version: BTreeMap::new(),
        }
    }

    /// The fields added or changed, and those removed, in `version`.
    pub(super) fn in_version(&mut self, version: &str) -> Result<&(FieldSet, FieldSet), Error> {
        if !self.by_version.contains_key(version) {
            let (old, schema) = self.old.get(version)?;
            let old = old.clone();
            let (new, _) = self.new.get(version)?;
            let (changed, removed) = typed::compare(&old, new, schema);
            let sets = (owned_in(changed, self.scope), owned_in(removed, self.scope));
            self.by_version.insert(version.to_owned(), sets);
        }
        Ok(&self.by_version[version])
    }
}
