//! Field ownership (`metadata.managedFields`) and server-side apply, with structured-merge-diff's semantics as
//! k8s.io/apiserver's fieldmanager uses them.
//!
//! Every write records which manager set which fields: an update or patch (operation `Update`) takes the fields it
//! added or changed from every other manager; an apply (operation `Apply`) merges a configuration into the object,
//! owns exactly the configuration's fields, removes the fields it owned before and no longer applies when nobody
//! else owns them, and fails with a conflict when it would change a field another manager owns (unless forced, when
//! it takes the field over).
//!
//! Field sets are recorded per manager, operation, subresource (and API version for updates), each in the API
//! version of the write that made it, and compared with a later write in that version ([`versions`]).

pub mod fieldpath;
pub mod typed;
pub mod versions;

use serde_json::{json, Value};

use self::fieldpath::{display, FieldSet, Path, PathElement};
use self::typed::Schema;
pub use self::versions::Versions;
use self::versions::{Changes, Forms};

/// What kind of write a manager made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a patch of another kind.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Which fields a write may own: the subresource decides (kube's reset fields for a resource with `/status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every field.
    All,
    /// Everything but `status` (the object of a resource with a `/status`).
    AllButStatus,
    /// Only `status` (its `/status`).
    StatusOnly,
}

/// The writer.
#[derive(Clone, Debug)]
pub struct Manager<'a> {
    /// The manager's name (`fieldManager`, or the client's user agent).
    pub name: &'a str,
    /// The request's API version (`group/version`).
    pub api_version: &'a str,
    /// The subresource written, or empty.
    pub subresource: &'a str,
    /// The time of the write, RFC 3339.
    pub time: &'a str,
}

/// One entry of `managedFields`.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
    time: Option<String>,
    fields: FieldSet,
}

impl Entry {
    /// Whether the entry belongs to the same manager identity (kube's BuildManagerIdentifier: appliers are one
    /// manager whatever their API version).
    fn same_identity(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if let Some(t) = &self.time {
            v["time"] = json!(t);
        }
        if !self.subresource.is_empty() {
            v["subresource"] = json!(self.subresource);
        }
        v
    }

    fn from_json(v: &Value) -> Result<Entry, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let operation = match v.get("operation").and_then(Value::as_str) {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => return Err(format!("operation must be Apply or Update, not {other:?}")),
        };
        if v.get("fieldsType")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "FieldsV1")
        {
            return Err("fieldsType must be FieldsV1".into());
        }
        let fields = match v.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f).ok_or("fieldsV1 is not a valid field set")?,
        };
        Ok(Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            subresource: s("subresource"),
            time: v.get("time").and_then(Value::as_str).map(str::to_owned),
            fields,
        })
    }

    /// How the entry is named in a conflict, as kube prints a manager.
    fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
            if let Some(t) = &self.time {
                out.push_str(&format!(" at {t}"));
            }
        }
        out
    }
}

/// A field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owner, as kube prints it: `"kubectl-edit" using v1 at 2026-01-01T00:00:00Z`.
    pub manager: String,
    /// The field: `.spec.replicas`.
    pub field: String,
}

/// Why an apply or update could not record its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The apply conflicts with other managers (409 Conflict).
    Conflicts(Vec<Conflict>),
    /// `metadata.managedFields` in the request is malformed (400 BadRequest).
    Invalid(String),
    /// The object could not be converted to the API version a manager's fields are recorded in (500).
    Conversion(String),
}

impl Conflict {
    /// kube's message for a set of conflicts.
    pub fn message(conflicts: &[Conflict]) -> String {
        if let [one] = conflicts {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                one.manager, one.field
            );
        }
        let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
        managers.sort_unstable();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for c in conflicts.iter().filter(|c| c.manager == m) {
                lines.push(format!("- {}", c.field));
            }
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    }
}

/// The paths no manager owns (kube's stripMeta): identity and server-set metadata.
fn stripped() -> &'static FieldSet {
    static STRIPPED: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        let f = |p: &[&str]| -> Path { p.iter().map(|s| PathElement::Field((*s).to_owned())).collect() };
        [
            f(&["apiVersion"]),
            f(&["kind"]),
            f(&["metadata"]),
            f(&["metadata", "name"]),
            f(&["metadata", "namespace"]),
            f(&["metadata", "creationTimestamp"]),
            f(&["metadata", "selfLink"]),
            f(&["metadata", "uid"]),
            f(&["metadata", "generation"]),
            f(&["metadata", "managedFields"]),
            f(&["metadata", "resourceVersion"]),
            f(&["metadata", "deletionTimestamp"]),
            f(&["metadata", "deletionGracePeriodSeconds"]),
        ]
        .into_iter()
        .collect()
    });
    &STRIPPED
}

/// Keeps the paths a write in `scope` may own.
fn owned_in(mut set: FieldSet, scope: Scope) -> FieldSet {
    let status = [PathElement::Field("status".into())];
    let stripped = stripped();
    set.retain(|p| {
        !stripped.contains(p)
            && match scope {
                Scope::All => true,
                Scope::AllButStatus => !p.starts_with(&status),
                Scope::StatusOnly => p.starts_with(&status),
            }
    });
    set
}

/// Whether a path is a key field of an associative list's item (`...[port=80].port`) that is not itself dropped.
fn is_key_of_kept_item(path: &[PathElement], dropped: &FieldSet) -> bool {
    let [item @ .., PathElement::Key(key), PathElement::Field(field)] = path else {
        return false;
    };
    let keys: serde_json::Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
    let mut item_path = item.to_vec();
    item_path.push(PathElement::Key(key.clone()));
    keys.contains_key(field) && !dropped.contains(&item_path)
}

/// The managers recorded on an object.
fn entries_of(obj: &Value) -> Result<Vec<Entry>, String> {
    match obj.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(Entry::from_json).collect(),
        Some(_) => Err("metadata.managedFields must be a list".into()),
    }
}

/// Writes the managers into an object's metadata (removing the field when there are none).
fn set_entries(obj: &mut Value, entries: &[Entry]) {
    let meta = apimachinery::object::meta_mut(obj);
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// The managers a write starts from: the stored ones, unless the request sets others (kube lets a client reset them:
/// `[{}]` empties them; an absent or empty list keeps the stored ones).
fn starting_entries(old: Option<&Value>, new: &Value) -> Result<Vec<Entry>, Error> {
    let stored = old
        .map(entries_of)
        .transpose()
        .map_err(Error::Invalid)?
        .unwrap_or_default();
    match new.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Ok(stored),
        Some(Value::Array(a)) if a.is_empty() => Ok(stored),
        Some(Value::Array(a)) if a.len() == 1 && a[0].as_object().is_some_and(|m| m.is_empty()) => Ok(Vec::new()),
        Some(_) => {
            let requested = entries_of(new).map_err(|e| Error::Invalid(format!("metadata.managedFields: {e}")))?;
            let same = old.and_then(|o| o.pointer("/metadata/managedFields")) == new.pointer("/metadata/managedFields");
            Ok(if same { stored } else { requested })
        }
    }
}

/// Whether a request resets the managed fields (`managedFields: [{}]`): the write is then not recorded.
fn resets(new: &Value) -> bool {
    matches!(new.pointer("/metadata/managedFields"), Some(Value::Array(a))
        if a.len() == 1 && a[0].as_object().is_some_and(|m| m.is_empty()))
}

/// Puts the acting manager's entry in place: its new field set, the time when the set changed; drops managers left
/// with nothing.
fn record(entries: &mut Vec<Entry>, mut mine: Entry) {
    if let Some(i) = entries.iter().position(|e| e.same_identity(&mine)) {
        let previous = entries.remove(i);
        if previous.fields == mine.fields && previous.api_version == mine.api_version {
            mine.time = previous.time.or(mine.time);
        }
        if !mine.fields.is_empty() {
            entries.insert(i, mine);
        }
    } else if !mine.fields.is_empty() {
        entries.push(mine);
    }
    entries.retain(|e| !e.fields.is_empty());
}

/// Records an update (create when `old` is none) by `manager` on `new`, in its `metadata.managedFields`: the fields
/// it added or changed become its own and are taken from the other managers (compared in each manager's API
/// version); removed fields leave every manager.
pub fn update(
    versions: &dyn Versions,
    old: Option<&Value>,
    new: &mut Value,
    manager: &Manager<'_>,
    scope: Scope,
) -> Result<(), Error> {
    let reset = resets(new);
    let mut entries = starting_entries(old, new)?;
    if reset {
        set_entries(new, &[]);
        return Ok(());
    }
    let request = manager.api_version;
    let (changed, removed) = match old {
        Some(old) => {
            let mut changes = Changes::new(versions, request, old, new, scope);
            for e in entries.iter_mut() {
                let (changed, removed) = changes.in_version(&e.api_version)?;
                e.fields.remove_all(changed);
                e.fields.remove_all(removed);
            }
            changes.in_version(request)?.clone()
        }
        None => {
            // A create compares with an empty object, as kube's field manager does.
            let schema = Schema::object(versions.schema(request).unwrap_or(&Value::Null));
            let empty = Value::Object(serde_json::Map::new());
            let (changed, removed) = typed::compare(&empty, new, schema);
            (owned_in(changed, scope), owned_in(removed, scope))
        }
    };
    let identity = Entry {
        manager: manager.name.to_owned(),
        operation: Operation::Update,
        api_version: request.to_owned(),
        subresource: manager.subresource.to_owned(),
        time: Some(manager.time.to_owned()),
        fields: FieldSet::new(),
    };
    // The manager's set changes in place (its paths are not copied); when it stays the same, so does its time.
    let mut mine = identity;
    if let Some(previous) = entries.iter_mut().find(|e| e.same_identity(&mine)) {
        let same = previous.api_version == mine.api_version
            && changed.iter().all(|p| previous.fields.contains(p))
            && !removed.iter().any(|p| previous.fields.contains(p));
        if same {
            mine.time = previous.time.clone().or(mine.time);
        }
        mine.fields = std::mem::take(&mut previous.fields);
    }
    mine.fields.absorb(changed);
    mine.fields.remove_all(&removed);
    record(&mut entries, mine);
    set_entries(new, &entries);
    Ok(())
}

/// Applies `config` (an applied configuration, with `apiVersion`, `kind` and `metadata.name`) to the live object
/// (none: it is created) for `manager`; returns the object to write, its `metadata.managedFields` set. Both are in
/// the manager's API version; other managers' fields are compared in theirs.
pub fn apply(
    versions: &dyn Versions,
    live: Option<&Value>,
    config: &Value,
    manager: &Manager<'_>,
    scope: Scope,
    force: bool,
) -> Result<Value, Error> {
    let request = manager.api_version;
    let s = Schema::object(versions.schema(request).unwrap_or(&Value::Null));
    let mut entries = match live {
        Some(l) => entries_of(l).map_err(Error::Invalid)?,
        None => Vec::new(),
    };
    let live_value = live.cloned().unwrap_or_else(|| json!({}));
    if live.is_some() && entries.is_empty() {
        // An object written before any field was recorded: its fields so far belong to "before-first-apply", as
        // kube attributes them, so that an apply conflicts with them rather than silently taking them.
        let fields = owned_in(typed::field_set(&live_value, s), Scope::All);
        entries.push(Entry {
            manager: "before-first-apply".into(),
            operation: Operation::Update,
            api_version: request.to_owned(),
            subresource: String::new(),
            time: Some(manager.time.to_owned()),
            fields,
        });
    }
    let mut config = config.clone();
    if let Some(m) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    let mut merged = typed::merge(&live_value, &config, s);
    let identity = Entry {
        manager: manager.name.to_owned(),
        operation: Operation::Apply,
        api_version: request.to_owned(),
        subresource: manager.subresource.to_owned(),
        time: Some(manager.time.to_owned()),
        fields: owned_in(typed::field_set(&config, s), scope),
    };
    if let Some(last) = entries.iter().find(|e| e.same_identity(&identity)) {
        let others: Vec<&Entry> = entries.iter().filter(|e| !e.same_identity(&identity)).collect();
        merged = prune(versions, merged, last, &identity, &others)?;
    }
    // Conflicts: fields another manager owns whose value this apply changes, seen in that manager's version.
    let mut changes = Changes::new(versions, request, &live_value, &merged, scope);
    let mut conflicts = Vec::new();
    for e in entries.iter().filter(|e| !e.same_identity(&identity)) {
        let (changed, _) = changes.in_version(&e.api_version)?;
        for p in e.fields.intersection(changed).iter() {
            conflicts.push(Conflict {
                manager: e.describe(),
                field: display(p),
            });
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(Error::Conflicts(conflicts));
    }
    for e in entries.iter_mut().filter(|e| !e.same_identity(&identity)) {
        let (changed, removed) = changes.in_version(&e.api_version)?;
        e.fields.remove_all(changed);
        e.fields.remove_all(removed);
    }
    drop(changes);
    record(&mut entries, identity);
    set_entries(&mut merged, &entries);
    Ok(merged)
}

/// Removes from `merged` the fields the applier owned after its last apply (`last`) and no longer applies (`mine`),
/// unless another manager (or this apply) still owns them or something under them (kube's prune). The removal is
/// made in the last apply's API version, and what the managers of other versions own is put back.
fn prune(
    versions: &dyn Versions,
    mut merged: Value,
    last: &Entry,
    mine: &Entry,
    others: &[&Entry],
) -> Result<Value, Error> {
    let request = mine.api_version.as_str();
    let version = last.api_version.as_str();
    let same_version = version == request || versions.schema(version).is_none();
    let in_version: Vec<&FieldSet> = others
        .iter()
        .filter(|e| same_version || e.api_version == version)
        .map(|e| &e.fields)
        .chain(same_version.then_some(&mine.fields))
        .collect();
    let candidates: FieldSet = last
        .fields
        .iter()
        .filter(|p| !in_version.iter().any(|set| set.covers(p)))
        .cloned()
        .collect();
    // The key fields of an associative list's item stay as long as the item does.
    let dropped: FieldSet = candidates
        .iter()
        .filter(|p| !is_key_of_kept_item(p, &candidates))
        .cloned()
        .collect();
    if dropped.is_empty() {
        return Ok(merged);
    }
    let convert_err = |why| Error::Conversion(why);
    if same_version {
        let s = Schema::object(versions.schema(request).unwrap_or(&Value::Null));
        typed::remove(&mut merged, &dropped, s);
        return Ok(merged);
    }
    let mut in_last = versions.convert(&merged, version).map_err(convert_err)?;
    typed::remove(
        &mut in_last,
        &dropped,
        Schema::object(versions.schema(version).unwrap_or(&Value::Null)),
    );
    let mut pruned = versions.convert(&in_last, request).map_err(convert_err)?;
    // Put back what the managers of the other versions (this apply's included) own that the removal took.
    let mut owned: std::collections::BTreeMap<&str, FieldSet> = std::collections::BTreeMap::new();
    owned.insert(request, mine.fields.clone());
    for e in others.iter().filter(|e| e.api_version != version) {
        let set = owned.entry(e.api_version.as_str()).or_default();
        *set = set.union(&e.fields);
    }
    for (v, owned) in owned {
        let (mut full, s) = {
            let mut forms = Forms::new(versions, request, &merged);
            let (obj, s) = forms.get(v)?;
            (obj.clone(), s)
        };
        let lost = {
            let mut forms = Forms::new(versions, request, &pruned);
            let (obj, s) = forms.get(v)?;
            typed::field_set(&full, s).difference(&typed::field_set(obj, s))
        };
        let kept: FieldSet = lost.iter().filter(|p| owned.covers(p)).cloned().collect();
        if kept.is_empty() {
            continue;
        }
        let gone: FieldSet = lost.iter().filter(|p| !kept.covers(p)).cloned().collect();
        typed::remove(&mut full, &gone, s);
        pruned = if v == request {
            full
        } else {
            versions.convert(&full, request).map_err(convert_err)?
        };
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests;
