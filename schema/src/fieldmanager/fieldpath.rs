//! Field paths and sets of them, as structured-merge-diff names the fields of an object: `.spec.replicas`,
//! `.spec.containers[name="a"]`, `.metadata.finalizers[="x"]`, and their `FieldsV1` encoding in `managedFields`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of an object: `f:name`.
    Field(String),
    /// An item of an associative list, by its keys: `k:{"name":"a"}` (the key object's JSON, fields sorted).
    Key(String),
    /// An item of a set list, by its value: `v:"a"` (the value's JSON).
    Value(String),
    /// An item of a list by position: `i:0` (lists of no other kind are atomic, so this is rare).
    Index(usize),
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// The element as a `FieldsV1` key.
    fn to_key(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(k) => format!("k:{k}"),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key.
    fn from_key(key: &str) -> Option<PathElement> {
        let (kind, rest) = key.split_once(':')?;
        Some(match kind {
            "f" => PathElement::Field(rest.to_owned()),
            "k" => {
                let keys: Map<String, Value> = serde_json::from_str(rest).ok()?;
                PathElement::Key(Value::Object(keys).to_string())
            }
            "v" => PathElement::Value(serde_json::from_str::<Value>(rest).ok()?.to_string()),
            "i" => PathElement::Index(rest.parse().ok()?),
            _ => return None,
        })
    }
}

/// A path as structured-merge-diff prints it in conflicts: `.spec.replicas`, `.spec.ports[port=80,protocol="TCP"]`,
/// `.metadata.finalizers[="a"]`, `.spec.list[0]`.
pub fn display(path: &[PathElement]) -> String {
    let mut out = String::new();
    for e in path {
        match e {
            PathElement::Field(f) => {
                out.push('.');
                out.push_str(f);
            }
            PathElement::Key(k) => {
                let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            PathElement::Value(v) => out.push_str(&format!("[={v}]")),
            PathElement::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A set of paths: the fields a manager owns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    /// An empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Adds a path.
    pub fn insert(&mut self, path: Path) {
        self.0.insert(path);
    }

    /// Whether the path is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        self.0.contains(path)
    }

    /// Keeps only the paths for which `keep` is true.
    pub fn retain(&mut self, keep: impl FnMut(&Path) -> bool) {
        self.0.retain(keep);
    }

    /// Whether the set has no path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The paths, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// The paths of both sets.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    /// The paths of this set that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// Adds the paths of `other`, moved.
    pub fn absorb(&mut self, mut other: FieldSet) {
        self.0.append(&mut other.0);
    }

    /// Removes the paths that are in `other`.
    pub fn remove_all(&mut self, other: &FieldSet) {
        if other.0.len() < self.0.len() {
            for path in &other.0 {
                self.0.remove(path);
            }
        } else {
            self.0.retain(|path| !other.0.contains(path));
        }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// Whether the set holds `path` or a path under it.
    pub fn covers(&self, path: &[PathElement]) -> bool {
        self.0
            .range(path.to_vec()..)
            .next()
            .is_some_and(|p| p.starts_with(path))
    }

    /// Whether a path of the set lies strictly under `path`.
    pub fn has_children(&self, path: &[PathElement]) -> bool {
        self.0
            .range(path.to_vec()..)
            .find(|p| p.as_slice() != path)
            .is_some_and(|p| p.starts_with(path))
    }

    /// The `FieldsV1` JSON of the set: nested objects keyed `f:`, `k:`, `v:`, `i:`, with `"."` marking a path that
    /// is in the set and has paths under it.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<PathElement, Node>,
        }
        fn render(node: &Node) -> Value {
            let mut m = Map::new();
            if node.member && !node.children.is_empty() {
                m.insert(".".into(), json!({}));
            }
            for (e, child) in &node.children {
                m.insert(e.to_key(), render(child));
            }
            Value::Object(m)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for e in path {
                node = node.children.entry(e.clone()).or_default();
            }
            node.member = true;
        }
        render(&root)
    }

    /// Reads a `FieldsV1` JSON object; none when it is malformed.
    pub fn from_fields_v1(value: &Value) -> Option<FieldSet> {
        fn walk(value: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) -> Option<()> {
            let m = value.as_object()?;
            if (m.is_empty() || m.contains_key(".")) && !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            for (k, v) in m {
                if k == "." {
                    continue;
                }
                prefix.push(PathElement::from_key(k)?);
                walk(v, prefix, out)?;
                prefix.pop();
            }
            Some(())
        }
        let mut out = BTreeSet::new();
        walk(value, &mut Vec::new(), &mut out)?;
        Some(FieldSet(out))
    }
}

impl FromIterator<Path> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> Self {
        FieldSet(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips_with_members_marked() {
        let set: FieldSet = [
            vec![f("spec"), f("replicas")],
            vec![f("spec"), f("ports"), PathElement::Key(r#"{"port":80}"#.into())],
            vec![
                f("spec"),
                f("ports"),
                PathElement::Key(r#"{"port":80}"#.into()),
                f("port"),
            ],
            vec![f("metadata"), f("finalizers"), PathElement::Value(r#""a""#.into())],
        ]
        .into_iter()
        .collect();
        let v1 = set.to_fields_v1();
        assert_eq!(
            v1,
            json!({"f:metadata": {"f:finalizers": {"v:\"a\"": {}}},
                   "f:spec": {"f:ports": {"k:{\"port\":80}": {".": {}, "f:port": {}}}, "f:replicas": {}}})
        );
        assert_eq!(FieldSet::from_fields_v1(&v1), Some(set));
        assert_eq!(FieldSet::from_fields_v1(&json!({"x:y": {}})), None);
        assert_eq!(FieldSet::from_fields_v1(&json!([])), None);
    }

    #[test]
    fn set_operations() {
        let a: FieldSet = [vec![f("a")], vec![f("b"), f("c")], vec![f("b")]].into_iter().collect();
        let b: FieldSet = [vec![f("b")]].into_iter().collect();
        let mut kept = a.clone();
        kept.retain(|p| !p.starts_with(&[f("b")]));
        assert_eq!(kept, [vec![f("a")]].into_iter().collect());
        assert_eq!(a.difference(&b).iter().count(), 2);
        assert!(a.covers(&[f("b")]));
        assert!(a.has_children(&[f("b")]));
        assert!(!a.has_children(&[f("a")]));
        assert!(!b.covers(&[f("a")]));
        assert_eq!(
            display(&[
                f("spec"),
                f("ports"),
                PathElement::Key(r#"{"port":80,"protocol":"TCP"}"#.into())
            ]),
            r#".spec.ports[port=80,protocol="TCP"]"#
        );
        assert_eq!(display(&[f("m"), PathElement::Value(r#""x""#.into())]), r#".m[="x"]"#);
    }
}
