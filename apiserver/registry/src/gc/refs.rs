//! The pure part of garbage collection: owner references, the finalizers a DELETE's propagation policy asks for
//! (kube's `deletionFinalizersForGarbageCollection`), and which work a write makes for the collector (what kube's
//! graph builder derives from informer events).

use serde_json::{json, Value};

use super::{Item, Work};
use crate::Apis;
use apimachinery::object::{self, meta_str};

/// The finalizer that makes the collector remove an owner's references from its dependents before the owner goes.
pub const ORPHAN: &str = "orphan";
/// The finalizer that makes the collector delete an owner's blocking dependents before the owner goes.
pub const FOREGROUND: &str = "foregroundDeletion";

/// A DELETE's `propagationPolicy` (`orphanDependents: true` is [`Propagation::Orphan`], `false` is
/// [`Propagation::Background`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// The dependents are left, without the reference to the owner.
    Orphan,
    /// The owner goes at once; the collector deletes the dependents afterwards.
    Background,
    /// The owner stays (with `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    /// The policy named by a DeleteOptions' `propagationPolicy`.
    pub fn parse(policy: &str) -> Option<Propagation> {
        match policy {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// The finalizers an object gets when it is deleted with `policy` (none given: its own `orphan` or
/// `foregroundDeletion` finalizer decides, else Background), or `None` when they are unchanged. The two garbage
/// collection finalizers are removed, then the one the policy asks for is added at the end, as kube does.
pub fn finalizers_for_delete(current: &[&str], policy: Option<Propagation>) -> Option<Vec<String>> {
    let policy = policy.or_else(|| {
        current.iter().find_map(|f| match *f {
            ORPHAN => Some(Propagation::Orphan),
            FOREGROUND => Some(Propagation::Foreground),
            _ => None,
        })
    });
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| **f != ORPHAN && **f != FOREGROUND)
        .map(|f| f.to_string())
        .collect();
    match policy {
        Some(Propagation::Orphan) => next.push(ORPHAN.into()),
        Some(Propagation::Foreground) => next.push(FOREGROUND.into()),
        _ => {}
    }
    let same = {
        let mut a: Vec<&str> = current.to_vec();
        let mut b: Vec<&str> = next.iter().map(String::as_str).collect();
        a.sort_unstable();
        a.dedup();
        b.sort_unstable();
        b.dedup();
        a == b
    };
    (!same).then_some(next)
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerReference {
    /// The owner's `apiVersion`.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's uid.
    pub uid: String,
    /// Whether the owner's foreground deletion waits for this dependent.
    pub block_owner_deletion: bool,
}

/// An object's owner references (malformed entries are skipped: validation refuses them on write).
pub fn owner_references(obj: &Value) -> Vec<OwnerReference> {
    let refs = obj
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array);
    refs.into_iter()
        .flatten()
        .filter_map(|r| {
            let s = |f: &str| r.get(f).and_then(Value::as_str).map(str::to_owned);
            Some(OwnerReference {
                api_version: s("apiVersion")?,
                kind: s("kind")?,
                name: s("name")?,
                uid: s("uid")?,
                block_owner_deletion: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

/// Removes the owner references to these uids; whether any was there.
pub fn remove_owner_references(obj: &mut Value, uids: &[&str]) -> bool {
    let Some(refs) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("ownerReferences"))
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(|u| uids.contains(&u)));
    let removed = refs.len() != before;
    if refs.is_empty() {
        object::meta_mut(obj).remove("ownerReferences");
    }
    removed
}

/// Sets `blockOwnerDeletion: false` on the references that block; whether any did (kube's unblocking of a
/// dependent whose own dependents wait in foreground, so that a cycle cannot hold both).
pub fn unblock_owner_references(obj: &mut Value) -> bool {
    let mut changed = false;
    if let Some(refs) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("ownerReferences"))
        .and_then(Value::as_array_mut)
    {
        for r in refs {
            if r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                r["blockOwnerDeletion"] = json!(false);
                changed = true;
            }
        }
    }
    changed
}

/// Removes a finalizer; whether it was there.
pub fn remove_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let Some(list) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("finalizers"))
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f.as_str() != Some(finalizer));
    let removed = list.len() != before;
    if list.is_empty() {
        object::meta_mut(obj).remove("finalizers");
    }
    removed
}

/// Whether the object is being deleted.
pub fn being_deleted(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

/// Whether the object is being deleted and has this finalizer.
pub fn deleting_with(obj: &Value, finalizer: &str) -> bool {
    being_deleted(obj) && object::finalizers(obj).contains(&finalizer)
}

/// The group of an `apiVersion` (`v1` is the core group, `""`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The served resource of an `apiVersion` and kind: its group, plural and whether it is namespaced. A version the
/// resource does not serve, or a kind nobody serves, does not resolve (kube's REST mapping fails the same way).
pub fn resolve(apis: &Apis, api_version: &str, kind: &str) -> Option<(String, String, bool)> {
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let plugin = apis.group(group)?;
    let resource = plugin
        .group
        .resources
        .iter()
        .find(|r| r.kind == kind && r.served_version(version).is_some())?;
    Some((group.to_owned(), resource.plural.clone(), resource.namespaced))
}

/// The item an object of `group`/`resource` is.
fn item_of(group: &str, resource: &str, obj: &Value) -> Option<Item> {
    Some(Item {
        group: group.to_owned(),
        resource: resource.to_owned(),
        namespace: meta_str(obj, "namespace").filter(|n| !n.is_empty()).map(str::to_owned),
        name: meta_str(obj, "name")?.to_owned(),
        uid: meta_str(obj, "uid")?.to_owned(),
    })
}

/// The owner an owner reference of an object in `namespace` names, when this tenant serves its kind.
fn owner_item(apis: &Apis, namespace: Option<&str>, r: &OwnerReference) -> Option<Item> {
    let (group, resource, namespaced) = resolve(apis, &r.api_version, &r.kind)?;
    Some(Item {
        group,
        resource,
        namespace: if namespaced { namespace.map(str::to_owned) } else { None },
        name: r.name.clone(),
        uid: r.uid.clone(),
    })
}

/// The work a write of an object of `group`/`resource` makes for the collector, from the stored object before
/// (`None`: created) and after (`None`: removed):
/// - an object removed: its dependents are looked for ([`Work::Gone`]), and its owners are looked at again (one
///   waiting in foreground may be free to go);
/// - an object being deleted with `orphan` or `foregroundDeletion`: it is processed as an owner;
/// - an object whose owner references are new or changed: it is processed as a dependent (its owners may be
///   absent), and the owners it named before are looked at again (a reference that blocked may be gone).
pub fn work_for_write(apis: &Apis, group: &str, resource: &str, old: Option<&Value>, new: Option<&Value>) -> Vec<Work> {
    let mut work = Vec::new();
    let again = |obj: &Value, work: &mut Vec<Work>| {
        let namespace = meta_str(obj, "namespace").filter(|n| !n.is_empty());
        for r in owner_references(obj) {
            if let Some(owner) = owner_item(apis, namespace, &r) {
                work.push(Work::Owner(owner));
            }
        }
    };
    match (old, new) {
        (Some(old), None) => {
            if let Some(item) = item_of(group, resource, old) {
                work.push(Work::Gone {
                    uid: item.uid,
                    namespace: item.namespace,
                });
            }
            again(old, &mut work);
        }
        (old, Some(new)) => {
            let Some(item) = item_of(group, resource, new) else {
                return work;
            };
            if deleting_with(new, ORPHAN) || deleting_with(new, FOREGROUND) {
                work.push(Work::Owner(item.clone()));
            }
            let refs = owner_references(new);
            let old_refs = old.map(owner_references).unwrap_or_default();
            if refs != old_refs {
                if !refs.is_empty() {
                    work.push(Work::Dependent(item));
                }
                if let Some(old) = old {
                    again(old, &mut work);
                }
            }
        }
        (None, None) => {}
    }
    work
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_sets_the_garbage_collection_finalizers_as_kube() {
        use Propagation::*;
        let f = |current: &[&str], p| finalizers_for_delete(current, p);
        assert_eq!(f(&[], None), None, "background by default: nothing to add");
        assert_eq!(f(&[], Some(Background)), None);
        assert_eq!(f(&[], Some(Orphan)), Some(vec!["orphan".to_owned()]));
        assert_eq!(
            f(&["a"], Some(Foreground)),
            Some(vec!["a".to_owned(), "foregroundDeletion".to_owned()])
        );
        assert_eq!(f(&["orphan"], None), None, "its own finalizer decides");
        assert_eq!(
            f(&["orphan"], Some(Background)),
            Some(vec![]),
            "an explicit policy overrides it"
        );
        assert_eq!(
            f(&["a", "orphan"], Some(Foreground)),
            Some(vec!["a".to_owned(), "foregroundDeletion".to_owned()])
        );
        assert_eq!(
            f(&["foregroundDeletion", "a"], Some(Foreground)),
            None,
            "order does not matter"
        );
    }

    #[test]
    fn owner_references_are_read_removed_and_unblocked() {
        let mut obj = json!({"metadata": {"name": "d", "ownerReferences": [
            {"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer", "name": "a", "uid": "1", "blockOwnerDeletion": true},
            {"apiVersion": "v1", "kind": "Namespace", "name": "b", "uid": "2"},
            {"kind": "Broken"},
        ]}});
        let refs = owner_references(&obj);
        assert_eq!(refs.len(), 2);
        assert!(refs[0].block_owner_deletion && !refs[1].block_owner_deletion);
        assert_eq!(group_of(&refs[0].api_version), "wardle.example.com");
        assert_eq!(group_of(&refs[1].api_version), "");
        assert!(unblock_owner_references(&mut obj));
        assert!(!unblock_owner_references(&mut obj));
        assert_eq!(obj["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], false);
        assert!(remove_owner_references(&mut obj, &["1"]));
        assert!(!remove_owner_references(&mut obj, &["1"]));
        assert_eq!(owner_references(&obj).len(), 1);
        obj["metadata"]["ownerReferences"].as_array_mut().unwrap().pop();
        assert!(remove_owner_references(&mut obj, &["2"]));
        assert!(obj["metadata"].get("ownerReferences").is_none(), "{obj}");
    }

    #[test]
    fn finalizers_are_removed_and_deletion_is_seen() {
        let mut obj = json!({"metadata": {"deletionTimestamp": "t", "finalizers": ["orphan", "x"]}});
        assert!(deleting_with(&obj, ORPHAN) && !deleting_with(&obj, FOREGROUND));
        assert!(remove_finalizer(&mut obj, ORPHAN));
        assert!(!remove_finalizer(&mut obj, ORPHAN));
        assert!(remove_finalizer(&mut obj, "x"));
        assert!(obj["metadata"].get("finalizers").is_none());
        assert!(!deleting_with(&json!({"metadata": {"finalizers": ["orphan"]}}), ORPHAN));
    }

    fn apis() -> Apis {
        Apis::of_groups(
            builtin::plugins()
                .into_iter()
                .map(|p| (p.group.group.clone(), p))
                .collect(),
        )
    }

    #[test]
    fn kinds_resolve_to_served_resources() {
        let apis = apis();
        assert_eq!(
            resolve(&apis, "v1", "Namespace"),
            Some(("".into(), "namespaces".into(), false))
        );
        assert_eq!(resolve(&apis, "v2", "Namespace"), None, "a version not served");
        assert_eq!(resolve(&apis, "v1", "Nothing"), None);
        assert_eq!(resolve(&apis, "wardle.example.com/v1alpha1", "Fischer"), None);
    }

    #[test]
    fn writes_make_work_for_the_collector() {
        let apis = apis();
        let owner_ref = json!([{"apiVersion": "v1", "kind": "Namespace", "name": "ns", "uid": "n1"}]);
        let obj = |refs: Value, extra: Value| {
            let mut o = json!({"metadata": {"name": "r", "uid": "u1", "namespace": "default"}});
            if !refs.is_null() {
                o["metadata"]["ownerReferences"] = refs;
            }
            if let Value::Object(extra) = extra {
                for (k, v) in extra {
                    o["metadata"][k] = v;
                }
            }
            o
        };
        let item = Item {
            group: "g".into(),
            resource: "rs".into(),
            namespace: Some("default".into()),
            name: "r".into(),
            uid: "u1".into(),
        };
        let namespace = Item {
            group: "".into(),
            resource: "namespaces".into(),
            namespace: None,
            name: "ns".into(),
            uid: "n1".into(),
        };
        let plain = obj(Value::Null, Value::Null);
        let owned = obj(owner_ref.clone(), Value::Null);
        let w = |old: Option<&Value>, new: Option<&Value>| work_for_write(&apis, "g", "rs", old, new);
        assert_eq!(w(None, Some(&plain)), vec![]);
        assert_eq!(w(None, Some(&owned)), vec![Work::Dependent(item.clone())]);
        assert_eq!(w(Some(&owned), Some(&owned)), vec![], "references unchanged");
        assert_eq!(w(Some(&owned), Some(&plain)), vec![Work::Owner(namespace.clone())]);
        assert_eq!(
            w(Some(&owned), None),
            vec![
                Work::Gone {
                    uid: "u1".into(),
                    namespace: Some("default".into())
                },
                Work::Owner(namespace)
            ]
        );
        let orphaning = obj(Value::Null, json!({"deletionTimestamp": "t", "finalizers": ["orphan"]}));
        assert_eq!(w(Some(&plain), Some(&orphaning)), vec![Work::Owner(item.clone())]);
        let held = obj(Value::Null, json!({"deletionTimestamp": "t", "finalizers": ["x"]}));
        assert_eq!(w(Some(&plain), Some(&held)), vec![]);
    }
}
