//! Lists written from the stored bytes against the parsed path, for the same objects: the bytes must be those the
//! parsed list serializes to, for namespaced and cluster-scoped resources, pages, empty lists, converted versions,
//! objects with and without labels, annotations and managedFields, and objects not in the stored form.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::ListBody;
use registry::read::ReadAt;
use registry::store::{FieldValidation, ListParams, ResourceStore, WatchItem, WireItem, WriteOptions};
use registry::Registry;
use storage::embedded::EmbeddedStorage;
use storage::keys::object_key;
use storage::Storage;

const GADGETS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.shop.example.com
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const DIALS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dials.dial.example.com
spec:
  group: dial.example.com
  scope: Cluster
  names: {plural: dials, singular: dial, kind: Dial}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const KNOBS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: knobs.knob.example.com
spec:
  group: knob.example.com
  scope: Namespaced
  names: {plural: knobs, singular: knob, kind: Knob}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
"#;

const WRITE: WriteOptions = WriteOptions {
    dry_run: false,
    field_validation: FieldValidation::Warn,
};

/// A registry serving the three test resources on a fresh embedded store, with watch caches.
fn registry(dir: &tempfile::TempDir) -> (Arc<Registry>, Arc<dyn Storage>) {
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).expect("open the store"));
    let registry = Registry::new(storage.clone());
    let plugins = [("gadgets", GADGETS), ("dials", DIALS), ("knobs", KNOBS)]
        .map(|(name, crd)| Arc::new(builtin::crd::load(name, crd).expect("load the CRD")));
    registry.set_plugins(plugins.into());
    (registry, storage)
}

/// The store of `plural` in `version`, as a request in that version gets it.
fn store(registry: &Registry, group: &str, plural: &str, version: &str) -> ResourceStore {
    let mut store = registry.system_store(group, plural).expect("a served resource");
    store.version = version.to_owned();
    store
}

/// Waits until the resource's watch cache has listed, so that lists are served from it.
async fn cached(registry: &Registry, group: &str, plural: &str) {
    let cache = registry.cache(group, plural).expect("a watch cache");
    cache.ready(Duration::from_secs(10)).await.expect("the cache lists");
}

/// The list in JSON as the parsed path writes it (the list handler's envelope around `ResourceStore::list`).
async fn parsed_list(store: &ResourceStore, namespace: Option<&str>, params: &ListParams) -> Vec<u8> {
    let out = store.list(namespace, params).await.expect("list");
    let mut meta = json!({"resourceVersion": out.resource_version.to_string()});
    if let Some(c) = &out.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = out.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    let list = json!({
        "apiVersion": store.api_version(),
        "kind": format!("{}List", store.resource.kind),
        "metadata": meta,
        "items": out.items,
    });
    serde_json::to_vec(&list).expect("serialize")
}

/// The kinds of a wire list's items ("stored", "remembered", "encoded") and its body, with the number of frames.
async fn wire_list(
    store: &ResourceStore,
    namespace: Option<&str>,
    params: &ListParams,
) -> (Vec<&'static str>, Vec<u8>, usize) {
    let out = store
        .list_wire(namespace, params)
        .await
        .expect("list")
        .expect("written from the stored bytes");
    let kinds = out
        .items
        .iter()
        .map(|item| match item {
            WireItem::Stored { .. } => "stored",
            WireItem::Remembered(_) => "remembered",
            WireItem::Encoded(_) => "encoded",
        })
        .collect();
    let kind = format!("{}List", store.resource.kind);
    let mut body = ListBody::new(&store.api_version(), &kind, out);
    let size = hyper::body::Body::size_hint(&body).exact().expect("an exact size");
    let mut bytes = Vec::new();
    let mut frames = 0;
    while let Some(frame) = body.frame().await {
        bytes.extend_from_slice(&frame.expect("infallible").into_data().expect("data"));
        frames += 1;
    }
    assert_eq!(bytes.len() as u64, size, "the size announced");
    (kinds, bytes, frames)
}

/// Both lists for the same request, asserted equal (as bytes, and so as JSON); the wire list's item kinds.
async fn same_list(store: &ResourceStore, namespace: Option<&str>, params: &ListParams) -> (Vec<&'static str>, Value) {
    let (kinds, wire, _) = wire_list(store, namespace, params).await;
    let parsed = parsed_list(store, namespace, params).await;
    let wire_json: Value = serde_json::from_slice(&wire).expect("the wire list is JSON");
    let parsed_json: Value = serde_json::from_slice(&parsed).expect("the parsed list is JSON");
    assert_eq!(wire_json, parsed_json);
    assert_eq!(String::from_utf8_lossy(&wire), String::from_utf8_lossy(&parsed));
    (kinds, wire_json)
}

fn params(limit: usize, continue_token: Option<&str>, rv: Option<&str>) -> ListParams {
    ListParams {
        limit,
        continue_token: continue_token.map(str::to_owned),
        resource_version: rv.map(str::to_owned),
        ..ListParams::default()
    }
}

/// Creates gadgets in `ns`: with labels and annotations (some with characters JSON escapes), or with none.
async fn create_gadgets(store: &ResourceStore, ns: &str, count: usize) {
    for i in 0..count {
        let mut body = json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i}")}, "spec": {"size": i, "colour": "blue \"navy\" \\ é ✓"}});
        if i % 2 == 0 {
            body["metadata"]["labels"] = json!({"app": "shop", "i": i.to_string()});
            body["metadata"]["annotations"] = json!({"note": "}{\"resourceVersion\":\"1\"", "z": "\u{1}"});
        }
        store.create(Some(ns), body, WRITE).await.expect("create");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_equals_the_parsed_list_namespaced_and_paged() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 5).await;
    create_gadgets(&v1, "b", 2).await;
    cached(&registry, "shop.example.com", "gadgets").await;
    for rv in [Some("0"), None] {
        // The whole namespace, every namespace, and an empty one.
        let (kinds, list) = same_list(&v1, Some("a"), &params(0, None, rv)).await;
        assert_eq!(kinds, ["stored"; 5]);
        let item = &list["items"][0];
        assert!(item["metadata"]["managedFields"].is_array(), "{item}");
        assert!(item["metadata"]["resourceVersion"].is_string(), "{item}");
        let (kinds, _) = same_list(&v1, None, &params(0, None, rv)).await;
        assert_eq!(kinds, ["stored"; 7]);
        let (kinds, list) = same_list(&v1, Some("empty"), &params(0, None, rv)).await;
        assert!(kinds.is_empty());
        assert_eq!(list["items"], json!([]));
    }
    // Pages of two, followed by their continue tokens to the end.
    let mut token: Option<String> = None;
    let mut names = Vec::new();
    loop {
        let (kinds, list) = same_list(&v1, Some("a"), &params(2, token.as_deref(), None)).await;
        assert!(kinds.iter().all(|k| *k == "stored"));
        names.extend(
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].clone()),
        );
        match list["metadata"]["continue"].as_str() {
            Some(next) => {
                assert!(list["metadata"]["remainingItemCount"].is_u64(), "{list}");
                token = Some(next.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(names, ["g0", "g1", "g2", "g3", "g4"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_equals_the_parsed_list_cluster_scoped() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let dials = store(&registry, "dial.example.com", "dials", "v1");
    let (kinds, _) = same_list(&dials, None, &params(0, None, None)).await;
    assert!(kinds.is_empty());
    for i in 0..3 {
        let body = json!({"apiVersion": "dial.example.com/v1", "kind": "Dial", "metadata": {"name": format!("d{i}")}});
        dials.create(None, body, WRITE).await.expect("create");
    }
    cached(&registry, "dial.example.com", "dials").await;
    let (kinds, list) = same_list(&dials, None, &params(0, None, Some("0"))).await;
    assert_eq!(kinds, ["stored"; 3]);
    assert!(list["items"][0]["metadata"].get("namespace").is_none(), "{list}");
    let (kinds, _) = same_list(&dials, None, &params(2, None, Some("0"))).await;
    assert_eq!(kinds, ["stored"; 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_converted_items_come_from_the_conversion_memo() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 3).await;
    cached(&registry, "shop.example.com", "gadgets").await;
    let v2 = store(&registry, "shop.example.com", "gadgets", "v2");
    // The first list converts each object (and remembers it); the next ones write the remembered text.
    let (kinds, list) = same_list(&v2, Some("a"), &params(0, None, Some("0"))).await;
    assert_eq!(kinds, ["encoded"; 3]);
    assert_eq!(list["items"][0]["apiVersion"], "shop.example.com/v2");
    assert_eq!(list["apiVersion"], "shop.example.com/v2");
    let (kinds, _) = same_list(&v2, Some("a"), &params(0, None, Some("0"))).await;
    assert_eq!(kinds, ["remembered"; 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_objects_not_in_the_stored_form_are_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, storage) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 1).await;
    // Written by something else: whitespace, keys out of order, a resourceVersion already in the metadata.
    for (name, text) in [
        (
            "spaced",
            r#"{ "apiVersion": "shop.example.com/v1", "kind": "Gadget", "metadata": {"name": "spaced", "namespace": "a"} }"#,
        ),
        (
            "unordered",
            r#"{"kind":"Gadget","apiVersion":"shop.example.com/v1","metadata":{"namespace":"a","name":"unordered"}}"#,
        ),
        (
            "stale",
            r#"{"apiVersion":"shop.example.com/v1","kind":"Gadget","metadata":{"name":"stale","namespace":"a","resourceVersion":"1"}}"#,
        ),
    ] {
        let key = object_key("shop.example.com", "gadgets", Some("a"), name);
        storage.create(&key, text.as_bytes().to_vec()).await.expect("create");
    }
    cached(&registry, "shop.example.com", "gadgets").await;
    let (kinds, list) = same_list(&v1, Some("a"), &params(0, None, None)).await;
    assert_eq!(kinds, ["stored", "encoded", "encoded", "encoded"]);
    assert_ne!(list["items"][2]["metadata"]["resourceVersion"], "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_a_long_list_is_streamed_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    let big = "x".repeat(100 * 1024);
    for i in 0..6 {
        let body = json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i}"), "annotations": {"big": big}}});
        v1.create(Some("a"), body, WRITE).await.expect("create");
    }
    cached(&registry, "shop.example.com", "gadgets").await;
    let p = params(0, None, Some("0"));
    let (_, wire, frames) = wire_list(&v1, Some("a"), &p).await;
    assert!(frames >= 2, "{frames} frames");
    assert_eq!(wire, parsed_list(&v1, Some("a"), &p).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_falls_back_for_selectors_and_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    let selected = ListParams {
        labels: Some(apimachinery::labels::LabelSelector::parse("app=shop").unwrap()),
        ..ListParams::default()
    };
    assert!(v1.list_wire(Some("a"), &selected).await.unwrap().is_none());
    assert!(v1.list_wire(Some("a"), &ListParams::default()).await.unwrap().is_some());
    let knobs = store(&registry, "knob.example.com", "knobs", "v1");
    assert!(knobs
        .list_wire(Some("a"), &ListParams::default())
        .await
        .unwrap()
        .is_none());
}

/// The kind of a wire item ("stored", "remembered", "encoded").
fn kind_of(item: &WireItem) -> &'static str {
    match item {
        WireItem::Stored { .. } => "stored",
        WireItem::Remembered(_) => "remembered",
        WireItem::Encoded(_) => "encoded",
    }
}

/// A GET written from the stored bytes against the parsed GET (serialized as the GET handler does), asserted
/// equal as bytes; the wire item's kind.
async fn same_get(store: &ResourceStore, namespace: Option<&str>, name: &str, at: ReadAt) -> (&'static str, Value) {
    let item = store
        .get_wire(namespace, name, at)
        .await
        .expect("get")
        .expect("written from the stored bytes");
    let mut wire = Vec::new();
    item.write(&mut wire);
    assert_eq!(wire.len(), item.len(), "the length announced");
    let parsed = serde_json::to_vec(&store.get(namespace, name, at).await.expect("get")).expect("serialize");
    assert_eq!(String::from_utf8_lossy(&wire), String::from_utf8_lossy(&parsed));
    (kind_of(&item), serde_json::from_slice(&wire).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_get_equals_the_parsed_get() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, storage) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    // Before the cache has listed (read from storage) and after.
    create_gadgets(&v1, "a", 2).await;
    let (kind, got) = same_get(&v1, Some("a"), "g0", ReadAt::Latest).await;
    assert_eq!(kind, "stored");
    cached(&registry, "shop.example.com", "gadgets").await;
    let key = object_key("shop.example.com", "gadgets", Some("a"), "spaced");
    let spaced = r#"{ "apiVersion": "shop.example.com/v1", "kind": "Gadget", "metadata": {"name": "spaced", "namespace": "a"} }"#;
    let revision = storage
        .create(&key, spaced.as_bytes().to_vec())
        .await
        .expect("create")
        .mod_revision;
    let v2 = store(&registry, "shop.example.com", "gadgets", "v2");
    // The first read waits until the cache has the object written behind its back.
    for at in [ReadAt::NotOlderThan(revision), ReadAt::Latest, ReadAt::Any] {
        for name in ["g0", "g1"] {
            let (kind, got) = same_get(&v1, Some("a"), name, at).await;
            assert_eq!(kind, "stored");
            assert!(got["metadata"]["managedFields"].is_array(), "{got}");
            assert!(got["metadata"]["resourceVersion"].is_string(), "{got}");
        }
        // Not in the stored form (written by something else): parsed and serialized.
        assert_eq!(same_get(&v1, Some("a"), "spaced", at).await.0, "encoded");
    }
    assert_eq!(got["metadata"]["name"], "g0");
    // Converted: once, then from the conversion memo's text.
    let (kind, got) = same_get(&v2, Some("a"), "g1", ReadAt::Latest).await;
    assert_eq!(
        (kind, got["apiVersion"].as_str()),
        ("encoded", Some("shop.example.com/v2"))
    );
    assert_eq!(same_get(&v2, Some("a"), "g1", ReadAt::Any).await.0, "remembered");
    // A new revision is read as it is now, with its resourceVersion.
    let mut g0 = v1.get(Some("a"), "g0", ReadAt::Latest).await.expect("get");
    g0["spec"]["size"] = json!(42);
    let updated = v1.update(Some("a"), "g0", g0, WRITE).await.expect("update").object;
    let (_, got) = same_get(&v1, Some("a"), "g0", ReadAt::Latest).await;
    assert_eq!(got["spec"]["size"], 42);
    assert_eq!(
        got["metadata"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
    // Missing: 404, as the parsed GET.
    let missing = v1
        .get_wire(Some("a"), "nothing", ReadAt::Latest)
        .await
        .expect_err("missing");
    assert_eq!(missing.code, 404);
    // Defaults applied on read need the parsed object.
    let knobs = store(&registry, "knob.example.com", "knobs", "v1");
    let knob = json!({"apiVersion": "knob.example.com/v1", "kind": "Knob", "metadata": {"name": "k"}, "spec": {}});
    knobs.create(Some("a"), knob, WRITE).await.expect("create");
    assert!(knobs.get_wire(Some("a"), "k", ReadAt::Latest).await.unwrap().is_none());
}

/// The initial events' lines of a watch of namespace `a` (as the watch handler writes them), and their item kinds
/// ("object" for a parsed event).
async fn initial_lines(
    store: ResourceStore,
    params: ListParams,
    count: usize,
    wire: bool,
) -> (Vec<&'static str>, Vec<u8>) {
    let mut events = Arc::new(store)
        .watch(Some("a".to_owned()), params, None, wire)
        .await
        .expect("watch");
    let (mut kinds, mut lines) = (Vec::new(), Vec::new());
    for _ in 0..count {
        let line = match events.next().await.expect("an initial event") {
            WatchItem::Added(item) => {
                kinds.push(kind_of(&item));
                crate::watch::added_line(&item)
            }
            WatchItem::Object(ev) => {
                kinds.push("object");
                crate::watch::encode_line(crate::negotiate::Output::JSON, ev.kind, ev.object)
            }
            WatchItem::Stored(_) => panic!("a change among the initial events"),
        };
        lines.extend_from_slice(&line);
    }
    (kinds, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_watch_initial_events_equal_the_parsed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 4).await;
    create_gadgets(&v1, "b", 1).await;
    cached(&registry, "shop.example.com", "gadgets").await;
    let at_zero = || params(0, None, Some("0"));
    let initial_events = || ListParams {
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".to_owned()),
        allow_bookmarks: true,
        ..ListParams::default()
    };
    let makers: [fn() -> ListParams; 2] = [at_zero, initial_events];
    for version in ["v1", "v2", "v1"] {
        for make in makers {
            let gadgets = || store(&registry, "shop.example.com", "gadgets", version);
            let (kinds, wire) = initial_lines(gadgets(), make(), 4, true).await;
            assert!(kinds.iter().all(|k| *k != "object"), "{kinds:?}");
            let (kinds, parsed) = initial_lines(gadgets(), make(), 4, false).await;
            assert_eq!(kinds, ["object"; 4]);
            assert_eq!(String::from_utf8_lossy(&wire), String::from_utf8_lossy(&parsed));
            let first: Value = serde_json::from_slice(wire.split(|b| *b == b'\n').next().unwrap()).expect("JSON");
            assert_eq!(first["type"], "ADDED");
            assert_eq!(first["object"]["apiVersion"], format!("shop.example.com/{version}"));
            assert!(first["object"]["metadata"]["resourceVersion"].is_string(), "{first}");
        }
    }
    // A selector needs the parsed objects.
    let selected = ListParams {
        labels: Some(apimachinery::labels::LabelSelector::parse("app=shop").unwrap()),
        ..at_zero()
    };
    let (kinds, _) = initial_lines(store(&registry, "shop.example.com", "gadgets", "v1"), selected, 2, true).await;
    assert_eq!(kinds, ["object"; 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_watch_changes_are_written_as_the_parsed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, storage) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 2).await;
    cached(&registry, "shop.example.com", "gadgets").await;
    // Storage's revision after the creates, once the cache has it too (a read at it waits for that).
    let since = storage.current_revision().await.expect("a revision");
    v1.get(Some("a"), "g0", ReadAt::NotOlderThan(since)).await.expect("get");
    let since = since.to_string();
    let mut g0 = v1.get(Some("a"), "g0", ReadAt::Latest).await.expect("get");
    g0["spec"]["size"] = json!(7);
    v1.update(Some("a"), "g0", g0, WRITE).await.expect("update");
    v1.delete(Some("a"), "g1", None, None, false, None)
        .await
        .expect("delete");
    let g9 = json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget", "metadata": {"name": "g9"}});
    v1.create(Some("a"), g9, WRITE).await.expect("create");
    for version in ["v1", "v2"] {
        let gadgets = Arc::new(store(&registry, "shop.example.com", "gadgets", version));
        let mut events = gadgets
            .clone()
            .watch(Some("a".to_owned()), params(0, None, Some(since.as_str())), None, true)
            .await
            .expect("watch");
        let mut kinds = Vec::new();
        for _ in 0..3 {
            let Some(WatchItem::Stored(ev)) = events.next().await else {
                panic!("not a stored event");
            };
            kinds.push(ev.kind);
            let parsed = serde_json::to_vec(&ev.object(&gadgets).expect("object")).expect("serialize");
            // The first version's objects are stored in it; the second's conversions were remembered just above.
            let mut wire = Vec::new();
            assert!(ev.write_json(&gadgets, &mut wire), "{version} {}", ev.kind);
            assert_eq!(String::from_utf8_lossy(&wire), String::from_utf8_lossy(&parsed));
        }
        assert_eq!(kinds, ["MODIFIED", "DELETED", "ADDED"]);
    }
}

/// A Table's JSON with the age cells (columns of type date) replaced by "AGE", after checking they are strings: an
/// age may tick between two Tables.
fn without_ages(table: &[u8]) -> Value {
    let mut table: Value = serde_json::from_slice(table).expect("a Table in JSON");
    let ages: Vec<usize> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .enumerate()
        .filter(|(_, c)| c["type"] == "date")
        .map(|(i, _)| i)
        .collect();
    for row in table["rows"].as_array_mut().expect("rows") {
        for &i in &ages {
            assert!(row["cells"][i].is_string(), "{row}");
            row["cells"][i] = json!("AGE");
        }
    }
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_table_equals_the_parsed_table() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(&dir);
    let v1 = store(&registry, "shop.example.com", "gadgets", "v1");
    create_gadgets(&v1, "a", 3).await;
    cached(&registry, "shop.example.com", "gadgets").await;
    for version in ["v1", "v2"] {
        let gadgets = store(&registry, "shop.example.com", "gadgets", version);
        for (include, table_version) in [
            (crate::table::IncludeObject::Metadata, "v1"),
            (crate::table::IncludeObject::None, "v1beta1"),
            (crate::table::IncludeObject::Object, "v1"),
        ] {
            let t = crate::table::TableBuilder {
                plugin: &gadgets.plugin,
                resource: &gadgets.resource,
                version: &gadgets.version,
                table_version,
                include,
            };
            for (p, round) in [(params(0, None, Some("0")), 0), (params(2, None, None), 1)] {
                let page = gadgets.list_shared(Some("a"), &p).await.expect("list").expect("shared");
                let (wire, wired) = t.wire_table(&gadgets, &page).expect("table");
                // The first Table remembers the cells; the next ones write the rows from the stored bytes, unless
                // the whole object is asked for.
                let expected = match (include, round) {
                    (crate::table::IncludeObject::Object, _) => 0,
                    (crate::table::IncludeObject::Metadata, 0) => 0,
                    _ => page.list.items.len(),
                };
                assert_eq!(wired, expected, "{version} {include:?} round {round}");
                let out = gadgets.list(Some("a"), &p).await.expect("list");
                let mut meta = json!({"resourceVersion": out.resource_version.to_string()});
                if let Some(c) = &out.continue_token {
                    meta["continue"] = json!(c);
                }
                if let Some(r) = out.remaining {
                    meta["remainingItemCount"] = json!(r);
                }
                let rows = out
                    .items
                    .iter()
                    .map(|item| t.row(&gadgets.stored_form(item).unwrap(), Some(item)).unwrap())
                    .collect();
                let parsed = serde_json::to_vec(&t.table(rows, meta)).unwrap();
                assert_eq!(without_ages(&wire), without_ages(&parsed), "{version} {include:?}");
                let reserialized: Value = serde_json::from_slice(&wire).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&wire),
                    serde_json::to_string(&reserialized).unwrap(),
                    "the wire Table is not in compact, sorted form"
                );
            }
        }
    }
}
