//! Garbage collection: a DELETE's `propagationPolicy` (and the deprecated `orphanDependents`) acts on
//! the objects whose `metadata.ownerReferences` name the deleted owner, as kube-apiserver with
//! kube-controller-manager's garbage collector does for custom resources: Background (the default) deletes them
//! after the owner, Foreground before it (the owner waits with the `foregroundDeletion` finalizer for its
//! `blockOwnerDeletion` dependents), Orphan removes their references (the owner waits with the `orphan` finalizer).
//! Wardle's flunders (namespaced) and fischers (cluster-scoped) are the owners and dependents.

use std::time::Duration;

use e2e::{fischer_v1alpha1, flunder_v1beta1, str_at, wait_until, Server, FISCHERS_V1ALPHA1, FLUNDERS_V1BETA1};
use reqwest::Method;
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);

/// An owner reference to an object, as a client writes it.
fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

/// A flunder owned through these references, with these finalizers.
fn flunder(name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
    let mut f = flunder_v1beta1(name, "x");
    if !owners.is_empty() {
        f["metadata"]["ownerReferences"] = json!(owners);
    }
    if !finalizers.is_empty() {
        f["metadata"]["finalizers"] = json!(finalizers);
    }
    f
}

/// A fischer owned through these references.
fn fischer(name: &str, owners: &[Value]) -> Value {
    let mut f = fischer_v1alpha1(name, &[]);
    if !owners.is_empty() {
        f["metadata"]["ownerReferences"] = json!(owners);
    }
    f
}

/// The API paths of one tenant (`""` for the default one).
struct Api<'a> {
    server: &'a Server,
    prefix: String,
}

impl<'a> Api<'a> {
    fn new(server: &'a Server, tenant: Option<&str>) -> Api<'a> {
        let prefix = tenant.map_or_else(String::new, |t| format!("/tenants/{t}"));
        Api { server, prefix }
    }

    fn flunders(&self) -> String {
        format!("{}{FLUNDERS_V1BETA1}", self.prefix)
    }

    fn flunder_path(&self, name: &str) -> String {
        format!("{}/{name}", self.flunders())
    }

    fn fischer_path(&self, name: &str) -> String {
        format!("{}{FISCHERS_V1ALPHA1}/{name}", self.prefix)
    }

    fn path_of(&self, obj: &Value) -> String {
        match obj["kind"].as_str() {
            Some("Fischer") => self.fischer_path(str_at(obj, "/metadata/name")),
            _ => self.flunder_path(str_at(obj, "/metadata/name")),
        }
    }

    /// Creates an object (a flunder or a fischer) and returns it as stored.
    fn create(&self, obj: Value) -> Value {
        let collection = match obj["kind"].as_str() {
            Some("Fischer") => format!("{}{FISCHERS_V1ALPHA1}", self.prefix),
            _ => self.flunders(),
        };
        self.server.http().post_json(&collection, &obj).expect(201).clone()
    }

    /// The object at a path, if it exists.
    fn get(&self, path: &str) -> Option<Value> {
        let reply = self.server.http().get(path);
        match reply.status {
            200 => Some(reply.json),
            404 => None,
            other => panic!("GET {path}: {other} {}", reply.text),
        }
    }

    /// Waits until the object at a path is gone.
    fn wait_gone(&self, path: &str) {
        assert!(
            wait_until(DEADLINE, || self.get(path).is_none()),
            "{path} is still there: {:#}",
            self.get(path).unwrap_or_default()
        );
    }

    /// Waits until the object at a path satisfies `check`, and returns it.
    fn wait_for(&self, path: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let mut last = None;
        let ok = wait_until(DEADLINE, || {
            last = self.get(path);
            last.as_ref().is_some_and(&check)
        });
        assert!(ok, "{path}: {what}; last seen {last:#?}");
        last.unwrap_or_default()
    }

    /// DELETE with a DeleteOptions body.
    fn delete_with(&self, path: &str, options: &Value) -> e2e::Reply {
        self.server.http().send(
            Method::DELETE,
            path,
            Some("application/json"),
            options.to_string().into_bytes(),
        )
    }

    /// A barrier: a flunder whose owner never existed is created and waited for until the collector removed it,
    /// so that the collector has handled what was written before (for assertions that something was kept).
    fn collector_barrier(&self, name: &str) {
        let ghost = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer", "name": "ghost",
            "uid": "00000000-0000-0000-0000-00000000dead"});
        self.create(flunder(name, &[ghost], &[]));
        self.wait_gone(&self.flunder_path(name));
    }
}

/// The uids an object's owner references name.
fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().map(|r| str_at(r, "/uid").to_owned()).collect())
        .unwrap_or_default()
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().map(|x| x.as_str().unwrap_or("").to_owned()).collect())
        .unwrap_or_default()
}

fn uid(obj: &Value) -> String {
    str_at(obj, "/metadata/uid").to_owned()
}

/// The (type, name) of the watch events seen until `done` says so.
fn events_until(
    watch: &mut e2e::JsonStream,
    done: impl Fn(&[(String, String, Value)]) -> bool,
) -> Vec<(String, String, Value)> {
    let mut seen = Vec::new();
    while !done(&seen) {
        let event = watch
            .next(DEADLINE)
            .unwrap_or_else(|| panic!("no further watch event after {seen:#?}"));
        seen.push((
            str_at(&event, "/type").to_owned(),
            str_at(&event, "/object/metadata/name").to_owned(),
            event["object"].clone(),
        ));
    }
    seen
}

fn position(seen: &[(String, String, Value)], kind: &str, name: &str) -> usize {
    seen.iter()
        .position(|(t, n, _)| t == kind && n == name)
        .unwrap_or_else(|| panic!("no {kind} event for {name} in {seen:#?}"))
}

#[test]
fn background_deletion_collects_the_dependents_after_the_owner() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    // A cluster-scoped owner with a namespaced and a cluster-scoped dependent; the namespaced one owns another.
    let owner = api.create(fischer("bg-owner", &[]));
    let child = api.create(flunder("bg-child", &[owner_ref(&owner, false)], &[]));
    api.create(fischer("bg-child-fischer", &[owner_ref(&owner, false)]));
    api.create(flunder("bg-grandchild", &[owner_ref(&child, false)], &[]));
    let unrelated = api.create(flunder("bg-unrelated", &[], &[]));
    let rv = str_at(&unrelated, "/metadata/resourceVersion").to_owned();
    let mut watch = server
        .http()
        .watch(&format!("{}?watch=true&resourceVersion={rv}", api.flunders()));

    // kubectl's default cascade is background: the owner goes at once, its dependents after it.
    let out = server.kubectl_ok(&["delete", "fischer", "bg-owner"]);
    assert!(out.contains("deleted"), "{out}");
    api.wait_gone(&api.fischer_path("bg-child-fischer"));
    api.wait_gone(&api.flunder_path("bg-child"));
    api.wait_gone(&api.flunder_path("bg-grandchild"));
    assert!(api.get(&api.flunder_path("bg-unrelated")).is_some());
    let seen = events_until(&mut watch, |seen| seen.len() >= 2);
    assert_eq!(
        seen.iter()
            .map(|(t, n, _)| (t.as_str(), n.as_str()))
            .collect::<Vec<_>>(),
        [("DELETED", "bg-child"), ("DELETED", "bg-grandchild")],
        "the dependents go level by level"
    );

    // A DELETE without options is a background one too.
    let plain = api.create(flunder("bg-plain", &[], &[]));
    api.create(flunder("bg-plain-child", &[owner_ref(&plain, true)], &[]));
    let deleted = server.http().delete(&api.flunder_path("bg-plain"));
    assert_eq!(deleted.expect(200)["kind"], "Status", "{}", deleted.text);
    api.wait_gone(&api.flunder_path("bg-plain-child"));
}

#[test]
fn foreground_deletion_waits_for_the_blocking_dependents() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    let owner = api.create(flunder("fg-owner", &[], &[]));
    let hold = "example.com/hold";
    api.create(flunder("fg-blocker", &[owner_ref(&owner, true)], &[hold]));
    api.create(flunder("fg-free", &[owner_ref(&owner, false)], &[]));
    let middle = api.create(flunder("fg-middle", &[owner_ref(&owner, true)], &[]));
    let leaf = api.create(flunder("fg-leaf", &[owner_ref(&middle, true)], &[hold]));
    let rv = str_at(&leaf, "/metadata/resourceVersion").to_owned();
    let mut watch = server
        .http()
        .watch(&format!("{}?watch=true&resourceVersion={rv}", api.flunders()));

    // The owner is marked and answered (200, the object), with the foregroundDeletion finalizer.
    let reply = api.delete_with(
        &api.flunder_path("fg-owner"),
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
    );
    let marked = reply.expect(200);
    assert_eq!(marked["kind"], "Flunder", "{marked:#}");
    assert!(marked.pointer("/metadata/deletionTimestamp").is_some(), "{marked:#}");
    assert_eq!(finalizers(marked), ["foregroundDeletion"]);

    // Every dependent is deleted; one with dependents of its own that block goes in foreground too.
    api.wait_gone(&api.flunder_path("fg-free"));
    let middle = api.wait_for(&api.flunder_path("fg-middle"), "deleted in foreground", |m| {
        m.pointer("/metadata/deletionTimestamp").is_some() && finalizers(m) == ["foregroundDeletion"]
    });
    assert_eq!(owner_uids(&middle), [uid(&owner)]);
    api.wait_for(&api.flunder_path("fg-leaf"), "marked", |l| {
        l.pointer("/metadata/deletionTimestamp").is_some()
    });
    api.wait_for(&api.flunder_path("fg-blocker"), "marked", |b| {
        b.pointer("/metadata/deletionTimestamp").is_some()
    });

    // Releasing the leaf lets the middle go; the owner still waits for the blocker.
    let release = json!({"metadata": {"finalizers": null}});
    server
        .http()
        .patch(&api.flunder_path("fg-leaf"), "application/merge-patch+json", &release)
        .expect(200);
    api.wait_gone(&api.flunder_path("fg-middle"));
    let waiting = api
        .get(&api.flunder_path("fg-owner"))
        .expect("the owner waits for fg-blocker");
    assert_eq!(finalizers(&waiting), ["foregroundDeletion"]);

    server
        .http()
        .patch(
            &api.flunder_path("fg-blocker"),
            "application/merge-patch+json",
            &release,
        )
        .expect(200);
    api.wait_gone(&api.flunder_path("fg-owner"));

    // Watchers saw the owner marked, the dependents deleted, then the owner deleted.
    let seen = events_until(&mut watch, |seen| {
        seen.iter().any(|(t, n, _)| t == "DELETED" && n == "fg-owner")
    });
    let (kind, _, first) = seen.iter().find(|(_, n, _)| n == "fg-owner").expect("an owner event");
    assert_eq!(kind, "MODIFIED");
    assert_eq!(finalizers(first), ["foregroundDeletion"]);
    let owner_deleted = position(&seen, "DELETED", "fg-owner");
    for dependent in ["fg-free", "fg-middle", "fg-leaf", "fg-blocker"] {
        assert!(position(&seen, "DELETED", dependent) < owner_deleted, "{seen:#?}");
    }
    assert!(position(&seen, "MODIFIED", "fg-owner") < position(&seen, "DELETED", "fg-free"));
}

#[test]
fn kubectl_cascades_foreground_and_orphan() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);

    // --cascade=foreground waits for the owner, which goes after its blocking dependent.
    let owner = api.create(flunder("k-fg", &[], &[]));
    api.create(flunder("k-fg-child", &[owner_ref(&owner, true)], &[]));
    server.kubectl_ok(&["delete", "flunder", "k-fg", "--cascade=foreground", "--timeout=60s"]);
    assert!(api.get(&api.flunder_path("k-fg")).is_none());
    assert!(
        api.get(&api.flunder_path("k-fg-child")).is_none(),
        "the blocking dependent went before its owner"
    );

    // --cascade=orphan: the dependents stay, without the reference to the owner (others are kept).
    let owner = api.create(flunder("k-or", &[], &[]));
    let other = api.create(fischer("k-other", &[]));
    api.create(flunder(
        "k-or-a",
        &[owner_ref(&owner, true), owner_ref(&other, false)],
        &[],
    ));
    api.create(flunder("k-or-b", &[owner_ref(&owner, false)], &[]));
    server.kubectl_ok(&[
        "delete",
        "flunder",
        "k-or",
        "--cascade=orphan",
        "--wait=true",
        "--timeout=60s",
    ]);
    assert!(api.get(&api.flunder_path("k-or")).is_none());
    let a = api.get(&api.flunder_path("k-or-a")).expect("orphaned, not deleted");
    assert_eq!(owner_uids(&a), [uid(&other)]);
    let b = api.get(&api.flunder_path("k-or-b")).expect("orphaned, not deleted");
    assert!(b.pointer("/metadata/ownerReferences").is_none(), "{b:#}");

    // The deprecated orphanDependents=true orphans too: the owner is marked with the orphan finalizer first.
    let owner = api.create(fischer("q-or", &[]));
    api.create(flunder("q-or-child", &[owner_ref(&owner, false)], &[]));
    let marked = server
        .http()
        .delete(&format!("{}?orphanDependents=true", api.fischer_path("q-or")));
    assert_eq!(finalizers(marked.expect(200)), ["orphan"], "{}", marked.text);
    api.wait_gone(&api.fischer_path("q-or"));
    let child = api.get(&api.flunder_path("q-or-child")).expect("orphaned");
    assert!(owner_uids(&child).is_empty(), "{child:#}");

    // An owner created with the orphan finalizer orphans its dependents when deleted without options.
    let owner = api.create(flunder("f-or", &[], &["orphan"]));
    api.create(flunder("f-or-child", &[owner_ref(&owner, false)], &[]));
    server.http().delete(&api.flunder_path("f-or")).expect(200);
    api.wait_gone(&api.flunder_path("f-or"));
    assert!(api.get(&api.flunder_path("f-or-child")).is_some());
}

#[test]
fn a_dependent_with_several_owners_goes_with_the_last() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    let a = api.create(fischer("mo-a", &[]));
    let b = api.create(flunder("mo-b", &[], &[]));
    api.create(flunder("mo-child", &[owner_ref(&a, false), owner_ref(&b, true)], &[]));

    server.http().delete(&api.fischer_path("mo-a")).expect(200);
    // The reference to the deleted owner is removed; the dependent stays for its other owner.
    api.wait_for(&api.flunder_path("mo-child"), "only mo-b's reference left", |c| {
        owner_uids(c) == [uid(&b)]
    });
    server.http().delete(&api.flunder_path("mo-b")).expect(200);
    api.wait_gone(&api.flunder_path("mo-child"));
}

#[test]
fn dependents_of_absent_owners_are_collected_and_unresolvable_references_kept() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    // Kept, as kube's collector keeps them: an owner of a kind nobody serves (its REST mapping fails), and a
    // cluster-scoped object naming a namespaced owner.
    let unserved = json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w",
        "uid": "00000000-0000-0000-0000-000000000001"});
    api.create(flunder("a-unserved", &[unserved], &[]));
    let namespaced = json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "name": "nowhere",
        "uid": "00000000-0000-0000-0000-000000000002"});
    api.create(fischer("a-cluster-names-namespaced", &[namespaced]));

    // Collected: an owner that does not exist, and one whose uid is not the live object's.
    let live = api.create(fischer("live", &[]));
    let mut stale = owner_ref(&live, false);
    stale["uid"] = json!("00000000-0000-0000-0000-000000000003");
    api.create(flunder("d-stale-uid", &[stale.clone()], &[]));
    api.collector_barrier("d-no-owner");
    api.wait_gone(&api.flunder_path("d-stale-uid"));

    // With one live owner, only the dangling reference goes.
    api.create(flunder("d-mixed", &[owner_ref(&live, false), stale], &[]));
    api.wait_for(&api.flunder_path("d-mixed"), "only the live owner's reference", |m| {
        owner_uids(m) == [uid(&live)]
    });

    api.collector_barrier("d-barrier");
    let kept = api.get(&api.flunder_path("a-unserved")).expect("kept");
    assert_eq!(owner_uids(&kept), ["00000000-0000-0000-0000-000000000001"]);
    let kept = api.get(&api.fischer_path("a-cluster-names-namespaced")).expect("kept");
    assert_eq!(owner_uids(&kept), ["00000000-0000-0000-0000-000000000002"]);
    assert!(api.get(&api.fischer_path("live")).is_some());
}

#[test]
fn deletecollection_honours_the_policy_for_each_object() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    let labelled = |name: &str, set: &str| {
        let mut f = flunder(name, &[], &[]);
        f["metadata"]["labels"] = json!({"set": set});
        api.create(f)
    };
    let mut children = Vec::new();
    for (owner, set) in [
        ("dc-o1", "orphan"),
        ("dc-o2", "orphan"),
        ("dc-b1", "background"),
        ("dc-f1", "foreground"),
    ] {
        let owner = labelled(owner, set);
        let name = format!("{}-child", str_at(&owner, "/metadata/name"));
        api.create(flunder(&name, &[owner_ref(&owner, true)], &[]));
        children.push(name);
    }

    let reply = api.delete_with(
        &format!("{}?labelSelector=set%3Dorphan", api.flunders()),
        &json!({"propagationPolicy": "Orphan"}),
    );
    let items = reply.expect(200)["items"].as_array().expect("a list").clone();
    assert_eq!(items.len(), 2, "{}", reply.text);
    for item in &items {
        assert_eq!(finalizers(item), ["orphan"], "{item:#}");
    }
    api.wait_gone(&api.flunder_path("dc-o1"));
    api.wait_gone(&api.flunder_path("dc-o2"));
    for child in ["dc-o1-child", "dc-o2-child"] {
        let c = api.get(&api.flunder_path(child)).expect("orphaned");
        assert!(owner_uids(&c).is_empty(), "{c:#}");
    }

    api.delete_with(
        &format!("{}?labelSelector=set%3Dforeground", api.flunders()),
        &json!({"propagationPolicy": "Foreground"}),
    )
    .expect(200);
    api.wait_gone(&api.flunder_path("dc-f1"));
    assert!(
        api.get(&api.flunder_path("dc-f1-child")).is_none(),
        "gone before its owner"
    );

    server
        .http()
        .delete(&format!("{}?labelSelector=set%3Dbackground", api.flunders()))
        .expect(200);
    api.wait_gone(&api.flunder_path("dc-b1-child"));
}

#[test]
fn dry_run_deletes_nothing_and_adds_no_finalizer() {
    let server = Server::start(&["wardle"]);
    let api = Api::new(&server, None);
    let owner = api.create(flunder("dry-owner", &[], &[]));
    api.create(flunder("dry-child", &[owner_ref(&owner, true)], &[]));
    for policy in ["Foreground", "Orphan", "Background"] {
        let reply = server.http().delete(&format!(
            "{}?dryRun=All&propagationPolicy={policy}",
            api.flunder_path("dry-owner")
        ));
        reply.expect(200);
    }
    server.kubectl_ok(&["delete", "flunder", "dry-owner", "--dry-run=server", "--cascade=orphan"]);
    api.collector_barrier("dry-barrier");
    let stored = api.get(&api.flunder_path("dry-owner")).expect("still there");
    assert!(stored.pointer("/metadata/deletionTimestamp").is_none(), "{stored:#}");
    assert!(finalizers(&stored).is_empty(), "{stored:#}");
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        owner["metadata"]["resourceVersion"]
    );
    let child = api.get(&api.flunder_path("dry-child")).expect("still there");
    assert_eq!(owner_uids(&child), [uid(&owner)]);
}

#[test]
fn a_tenant_collects_only_its_own_objects() {
    let server = Server::start(&["wardle", "t1/wardle", "t2/wardle"]);
    let t1 = Api::new(&server, Some("t1"));
    let t2 = Api::new(&server, Some("t2"));
    let owner = t1.create(flunder("owner", &[], &[]));
    t1.create(flunder("child", &[owner_ref(&owner, false)], &[]));
    // In t2, objects that name t1's owner's uid: a cluster-scoped fischer (which t2's own collector never
    // collects: it names a namespaced owner), and a flunder whose other owner lives in t2.
    let t2_fischer = t2.create(fischer("t2-owner", &[]));
    t2.create(fischer("kept", &[owner_ref(&owner, false)]));
    let t2_owner = t2.create(flunder("owner", &[], &[]));
    let mut same_uid = owner_ref(&t2_owner, false);
    same_uid["uid"] = owner["metadata"]["uid"].clone();
    // t2's collector drops the reference to the uid t2's "owner" does not have; the fischer's stays.
    let mixed = t2.create(flunder("mixed", &[owner_ref(&t2_fischer, false), same_uid], &[]));
    t2.wait_for(&t2.path_of(&mixed), "t2's dangling reference removed", |m| {
        owner_uids(m) == [uid(&t2_fischer)]
    });

    server.http().delete(&t1.flunder_path("owner")).expect(200);
    t1.wait_gone(&t1.flunder_path("child"));
    t2.collector_barrier("barrier");
    t1.collector_barrier("barrier");
    let kept = t2
        .get(&t2.fischer_path("kept"))
        .expect("t1's collection never reaches t2");
    assert_eq!(owner_uids(&kept), [uid(&owner)]);
    assert!(t2.get(&t2.flunder_path("owner")).is_some());
    assert!(t2.get(&t2.path_of(&mixed)).is_some());
}
