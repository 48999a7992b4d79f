//! Objects seen through their schema, as structured-merge-diff sees them: which lists are atomic, sets or maps keyed
//! by some fields, which maps are atomic; the field set of an object, the merge of an applied configuration into
//! it, the removal of fields, and the value at a path.
//!
//! The schema is the plugin's OpenAPI v3 schema of the object, with ObjectMeta known to the host. Where a schema
//! says nothing (an unknown or preserved field), lists are atomic and maps granular, as for CRDs.

use std::sync::LazyLock;

use serde_json::{json, Map, Value};

use super::fieldpath::{FieldSet, Path, PathElement};

/// How a list merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole (the default).
    Atomic,
    /// A set of scalars, items identified by value.
    Set,
    /// An associative list, items identified by these key fields.
    Map(Vec<String>),
}

/// The schema of ObjectMeta's fields that merge in a particular way.
static METADATA: LazyLock<Value> = LazyLock::new(|| {
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({"type": "object", "properties": {
        "labels": strings, "annotations": strings,
        "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "ownerReferences": {"type": "array", "items": {"type": "object"},
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
        "managedFields": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "atomic"},
    }})
});

/// A node of a schema, or none where the schema says nothing.
#[derive(Clone, Copy, Debug)]
pub struct Schema<'a> {
    node: Option<&'a Value>,
    root: bool,
}

impl<'a> Schema<'a> {
    /// The schema of a whole object (`metadata` is the host's).
    pub fn object(schema: &'a Value) -> Schema<'a> {
        Schema {
            node: Some(schema),
            root: true,
        }
    }

    fn of(node: Option<&'a Value>) -> Schema<'a> {
        Schema { node, root: false }
    }

    /// The schema of a field of this object.
    pub fn field(&self, name: &str) -> Schema<'a> {
        if self.root && name == "metadata" {
            return Schema::of(Some(&METADATA));
        }
        let Some(node) = self.node else {
            return Schema::of(None);
        };
        if let Some(p) = node.get("properties").and_then(|p| p.get(name)) {
            return Schema::of(Some(p));
        }
        Schema::of(node.get("additionalProperties").filter(|a| a.is_object()))
    }

    /// Whether the object declares the field (rather than allowing any key).
    pub fn declares(&self, name: &str) -> bool {
        (self.root && matches!(name, "metadata" | "apiVersion" | "kind"))
            || self
                .node
                .and_then(|n| n.get("properties"))
                .is_some_and(|p| p.get(name).is_some())
    }

    /// The schema of this list's items.
    pub fn items(&self) -> Schema<'a> {
        Schema::of(self.node.and_then(|n| n.get("items")))
    }

    /// How this list merges.
    pub fn list_type(&self) -> ListType {
        let node = self.node;
        match node
            .and_then(|n| n.get("x-kubernetes-list-type"))
            .and_then(Value::as_str)
        {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys = node
                    .and_then(|n| n.get("x-kubernetes-list-map-keys"))
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default();
                ListType::Map(keys)
            }
            _ => ListType::Atomic,
        }
    }

    /// Whether this map is replaced as a whole.
    pub fn atomic_map(&self) -> bool {
        self.node
            .and_then(|n| n.get("x-kubernetes-map-type"))
            .and_then(Value::as_str)
            == Some("atomic")
    }
}

/// The path element of a list item, or none when the item has no identity (a set item that is not a scalar, a map
/// item without its keys): such lists are taken as atomic.
fn item_element(item: &Value, list: &ListType) -> Option<PathElement> {
    match list {
        ListType::Atomic => None,
        ListType::Set => (!item.is_object() && !item.is_array()).then(|| PathElement::Value(item.to_string())),
        ListType::Map(keys) => {
            let obj = item.as_object()?;
            let mut key = Map::new();
            for k in keys {
                key.insert(k.clone(), obj.get(k)?.clone());
            }
            Some(PathElement::Key(Value::Object(key).to_string()))
        }
    }
}

/// The identities of a list's items, when every item has one and none repeats; else the list is atomic.
fn item_elements(items: &[Value], list: &ListType) -> Option<Vec<PathElement>> {
    let elements: Option<Vec<PathElement>> = items.iter().map(|i| item_element(i, list)).collect();
    let elements = elements?;
    let unique: std::collections::BTreeSet<&PathElement> = elements.iter().collect();
    (unique.len() == elements.len()).then_some(elements)
}

/// The field set of a value: its leaves, the items of its non-atomic lists, and its empty or null fields.
pub fn field_set(value: &Value, schema: Schema<'_>) -> FieldSet {
    let mut out = FieldSet::new();
    walk_set(value, schema, &mut Vec::new(), &mut out);
    out
}

fn walk_set(value: &Value, schema: Schema<'_>, path: &mut Path, out: &mut FieldSet) {
    match value {
        Value::Object(m) if !schema.atomic_map() => {
            for (k, v) in m {
                path.push(PathElement::Field(k.clone()));
                let child = schema.field(k);
                walk_set(v, child, path, out);
                let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if empty || !schema.declares(k) {
                    out.insert(path.clone());
                }
                path.pop();
            }
        }
        Value::Array(items) => match item_elements(items, &schema.list_type()) {
            Some(elements) => {
                let item_schema = schema.items();
                for (item, e) in items.iter().zip(elements) {
                    path.push(e);
                    walk_set(item, item_schema, path, out);
                    out.insert(path.clone());
                    path.pop();
                }
            }
            None => out.insert(path.clone()),
        },
        _ => out.insert(path.clone()),
    }
}

/// The value at a path, if it is there.
pub fn value_at<'v>(value: &'v Value, path: &[PathElement], schema: Schema<'_>) -> Option<&'v Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(value);
    };
    match first {
        PathElement::Field(f) => value_at(value.get(f)?, rest, schema.field(f)),
        PathElement::Index(i) => value_at(value.get(*i)?, rest, schema.items()),
        PathElement::Key(_) | PathElement::Value(_) => {
            let list = schema.list_type();
            let item = value
                .as_array()?
                .iter()
                .find(|i| item_element(i, &list).as_ref() == Some(first))?;
            value_at(item, rest, schema.items())
        }
    }
}

/// Merges an applied configuration into the live object: the configuration's values win; maps merge key by key
/// (unless atomic), associative lists and sets item by item (live items first, in their order, then new ones), other
/// lists are replaced.
pub fn merge(live: &Value, config: &Value, schema: Schema<'_>) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !schema.atomic_map() => {
            let mut out = l.clone();
            for (k, v) in c {
                let merged = match l.get(k) {
                    Some(lv) => merge(lv, v, schema.field(k)),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) => {
            let list = schema.list_type();
            let (Some(le), Some(ce)) = (item_elements(l, &list), item_elements(c, &list)) else {
                return config.clone();
            };
            let items = schema.items();
            let mut out: Vec<Value> = Vec::with_capacity(l.len() + c.len());
            for (item, e) in l.iter().zip(&le) {
                match ce.iter().position(|x| x == e) {
                    Some(i) => out.push(merge(item, &c[i], items)),
                    None => out.push(item.clone()),
                }
            }
            for (item, e) in c.iter().zip(&ce) {
                if !le.contains(e) {
                    out.push(item.clone());
                }
            }
            Value::Array(out)
        }
        _ => config.clone(),
    }
}

/// Removes the paths of `remove` from a value: a field path drops the field, an item path drops the item.
pub fn remove(value: &mut Value, remove: &FieldSet, schema: Schema<'_>) {
    for path in remove.iter() {
        remove_path(value, path, schema);
    }
}

fn remove_path(value: &mut Value, path: &[PathElement], schema: Schema<'_>) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match first {
        PathElement::Field(f) => {
            let Some(m) = value.as_object_mut() else { return };
            if rest.is_empty() {
                m.remove(f);
            } else if let Some(child) = m.get_mut(f) {
                remove_path(child, rest, schema.field(f));
            }
        }
        PathElement::Index(i) => {
            if let Some(child) = value.get_mut(*i) {
                remove_path(child, rest, schema.items());
            }
        }
        PathElement::Key(_) | PathElement::Value(_) => {
            let list = schema.list_type();
            let Some(items) = value.as_array_mut() else { return };
            let Some(at) = items
                .iter()
                .position(|i| item_element(i, &list).as_ref() == Some(first))
            else {
                return;
            };
            if rest.is_empty() {
                items.remove(at);
            } else {
                remove_path(&mut items[at], rest, schema.items());
            }
        }
    }
}

/// What changed from `old` to `new`, as structured-merge-diff's `Compare` finds it: the paths added (every field
/// and list item that `old` lacks, maps included, so a new map owns itself as well as its children: `"."` in
/// `FieldsV1`) or whose leaf value changed, and the paths removed.
pub fn compare(old: &Value, new: &Value, schema: Schema<'_>) -> (FieldSet, FieldSet) {
    let mut changes = Changes::default();
    compare_walk(Some(old), Some(new), schema, &mut Vec::new(), &mut changes);
    (changes.added, changes.removed)
}

#[derive(Default)]
struct Changes {
    added: FieldSet,
    removed: FieldSet,
}

impl Changes {
    /// structured-merge-diff's hook after each map field and list item: a member one side lacks.
    fn item(&mut self, old: Option<&Value>, new: Option<&Value>, path: &Path) {
        if old.is_none() {
            self.added.insert(path.clone());
        } else if new.is_none() {
            self.removed.insert(path.clone());
        }
    }
}

/// Whether a value is absent, null or an empty map.
fn empty(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_object().is_some_and(Map::is_empty))
}

/// The items of a granular list with their path elements (none for an absent list); `None` for an atomic list,
/// one whose items cannot be keyed, or a value that is not a list.
fn keyed_items<'v>(v: Option<&'v Value>, list_type: &ListType) -> Option<Vec<(&'v Value, PathElement)>> {
    match v {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => item_elements(items, list_type).map(|e| items.iter().zip(e).collect()),
        Some(_) => None,
    }
}

fn find_item<'v>(items: &[(&'v Value, PathElement)], e: &PathElement) -> Option<&'v Value> {
    items.iter().find(|(_, x)| x == e).map(|(v, _)| *v)
}

fn compare_walk(old: Option<&Value>, new: Option<&Value>, schema: Schema<'_>, path: &mut Path, c: &mut Changes) {
    match (old.map(Value::as_object), new.map(Value::as_object)) {
        // Maps (or a map and nothing) that are not both empty: walk their fields; both empty is a leaf, to keep
        // the difference between empty and null.
        (None | Some(Some(_)), None | Some(Some(_))) if !(schema.atomic_map() || empty(old) && empty(new)) => {
            let (o, n) = (old.and_then(Value::as_object), new.and_then(Value::as_object));
            let keys: Vec<&String> = n
                .into_iter()
                .flat_map(Map::keys)
                .chain(
                    o.into_iter()
                        .flat_map(Map::keys)
                        .filter(|k| !n.is_some_and(|n| n.contains_key(*k))),
                )
                .collect();
            for k in keys {
                let (ov, nv) = (o.and_then(|o| o.get(k)), n.and_then(|n| n.get(k)));
                path.push(PathElement::Field(k.clone()));
                compare_walk(ov, nv, schema.field(k), path, c);
                c.item(ov, nv, path);
                path.pop();
            }
            return;
        }
        _ => {}
    }
    let list_type = schema.list_type();
    if old.is_some_and(Value::is_array) || new.is_some_and(Value::is_array) {
        if let (Some(o), Some(n)) = (keyed_items(old, &list_type), keyed_items(new, &list_type)) {
            let item_schema = schema.items();
            let mut order: Vec<PathElement> = n.iter().map(|(_, e)| e.clone()).collect();
            order.extend(o.iter().map(|(_, e)| e.clone()).filter(|e| find_item(&n, e).is_none()));
            for e in order {
                let (ov, nv) = (find_item(&o, &e), find_item(&n, &e));
                path.push(e);
                compare_walk(ov, nv, item_schema, path, c);
                c.item(ov, nv, path);
                path.pop();
            }
            return;
        }
    }
    // A leaf: a scalar, an atomic map or list, or a change of type.
    match (old, new) {
        (None, _) => c.added.insert(path.clone()),
        (_, None) => c.removed.insert(path.clone()),
        (Some(o), Some(n)) if o != n => c.added.insert(path.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"}},
        }}}})
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.iter().map(|p| super::super::fieldpath::display(p)).collect()
    }

    #[test]
    fn field_sets_follow_list_and_map_types() {
        let s = schema();
        let obj = json!({"metadata": {"labels": {"a": "b"}, "finalizers": ["x"]}, "spec": {
            "replicas": 1, "ports": [{"port": 80, "name": "http"}], "tags": ["t"], "args": ["-v"],
            "selector": {"a": "b"}, "extra": {"deep": 1}, "empty": {}}});
        let set = field_set(&obj, Schema::object(&s));
        assert_eq!(
            paths(&set),
            [
                ".metadata.finalizers[=\"x\"]",
                ".metadata.labels.a",
                ".spec.args",
                ".spec.empty",
                ".spec.extra",
                ".spec.extra.deep",
                ".spec.ports[port=80]",
                ".spec.ports[port=80].name",
                ".spec.ports[port=80].port",
                ".spec.replicas",
                ".spec.selector",
                ".spec.tags[=\"t\"]",
            ]
        );
    }

    #[test]
    fn merge_follows_list_and_map_types() {
        let s = schema();
        let live = json!({"spec": {"replicas": 1, "ports": [{"port": 80, "name": "a"}, {"port": 81}],
            "tags": ["x"], "args": ["1"], "selector": {"a": "1", "b": "2"}, "other": 1}});
        let config = json!({"spec": {"replicas": 2, "ports": [{"port": 82}, {"port": 80, "name": "b"}],
            "tags": ["y", "x"], "args": ["2"], "selector": {"c": "3"}}});
        let merged = merge(&live, &config, Schema::object(&s));
        assert_eq!(
            merged,
            json!({"spec": {"replicas": 2, "ports": [{"port": 80, "name": "b"}, {"port": 81}, {"port": 82}],
                "tags": ["x", "y"], "args": ["2"], "selector": {"c": "3"}, "other": 1}})
        );
    }

    #[test]
    fn remove_and_compare() {
        let s = schema();
        let mut obj = json!({"spec": {"replicas": 1, "ports": [{"port": 80}, {"port": 81}], "tags": ["x", "y"]}});
        let old = obj.clone();
        let drop: FieldSet = [
            vec![PathElement::Field("spec".into()), PathElement::Field("replicas".into())],
            vec![
                PathElement::Field("spec".into()),
                PathElement::Field("ports".into()),
                PathElement::Key(r#"{"port":81}"#.into()),
            ],
            vec![
                PathElement::Field("spec".into()),
                PathElement::Field("tags".into()),
                PathElement::Value(r#""x""#.into()),
            ],
        ]
        .into_iter()
        .collect();
        remove(&mut obj, &drop, Schema::object(&s));
        assert_eq!(obj, json!({"spec": {"ports": [{"port": 80}], "tags": ["y"]}}));
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(2);
        new["spec"]["tags"] = json!(["y"]);
        let (changed, removed) = compare(&old, &new, Schema::object(&s));
        assert_eq!(paths(&changed), [".spec.replicas"]);
        assert_eq!(paths(&removed), [".spec.tags[=\"x\"]"]);
    }
}
