//! kube-rs, the client Rust controllers are written with, against the real server: a typed `Flunder` from
//! `#[derive(CustomResource)]` through `Api<Flunder>` (CRUD, merge patches, `/status`, server-side apply), paginated
//! lists, `kube::runtime::watcher` + `reflector` across bookmarks and a forced `410 Gone`, and a `Controller` whose
//! reconciler holds objects with a finalizer until its cleanup ran.
//!
//! Each test starts its own server and works in a namespace of its own. Tests are plain `#[test]`s that start the
//! server (the harness is blocking) and then run their async part on a tokio runtime of their own. Nothing sleeps
//! for synchronisation: waits poll a condition with a deadline, and the reflector is read until its store holds
//! what the server lists.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use e2e::Server;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Config, CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

/// How long any one expected state may take to arrive.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How often a polled condition is checked again.
const POLL: Duration = Duration::from_millis(50);
/// The watch cache window of the servers whose watchers must fall out of it: three events.
const TINY_WATCH_CACHE: &str = "flunders.wardle.example.com#3";

/// The v1beta1 Flunder of the wardle plugin, as a controller author would declare it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "wardle.example.com",
    version = "v1beta1",
    kind = "Flunder",
    namespaced,
    status = "FlunderStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct FlunderSpec {
    /// A name of another flunder, with `referenceType: Flunder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flunder_reference: Option<String>,
    /// A name of a fischer, with `referenceType: Fischer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fischer_reference: Option<String>,
    /// `Flunder` or `Fischer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_type: Option<String>,
    /// The desired number of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
}

/// What a controller reports about a Flunder, written through `/status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlunderStatus {
    /// The observed number of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// The generation the controller acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The label selector of the replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// A flunder referring to the flunder `reference`.
fn flunder(name: &str, reference: &str) -> Flunder {
    Flunder::new(
        name,
        FlunderSpec {
            flunder_reference: Some(reference.to_owned()),
            reference_type: Some("Flunder".to_owned()),
            ..FlunderSpec::default()
        },
    )
}

/// Runs a test's async part on a multi-threaded tokio runtime of its own; tasks it spawned end with it.
fn run(test: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(test);
}

/// A kube client for the server's insecure port, where every request is an administrator: no credentials.
fn client(server: &Server) -> Client {
    let config = Config::new(server.base_url().parse().expect("the server URL"));
    Client::try_from(config).expect("a kube client")
}

/// Creates the namespace `name` and returns the flunders in it.
async fn namespace(client: &Client, name: &str) -> Api<Flunder> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
    Api::namespaced(client.clone(), name)
}

/// The API status of a failed request; panics on success or on a failure that is not an API error.
fn status_of<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Polls `condition` until it holds or [`TIMEOUT`] has passed; returns whether it held.
async fn eventually<F: Future<Output = bool>>(mut condition: impl FnMut() -> F) -> bool {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return condition().await;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The sum of the samples of `/metrics` whose line starts with `series` (a name and the start of its labels).
async fn metric(server: &Server, series: &str) -> f64 {
    let text = reqwest::Client::new()
        .get(format!("{}/metrics", server.base_url()))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("the metrics text");
    text.lines()
        .filter(|line| line.starts_with(series))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Watches of flunders the server is serving.
const FLUNDER_WATCHERS: &str = r#"wasm_apiserver_watch_cache_watchers{group="wardle.example.com",resource="flunders"}"#;
/// Watch events (bookmarks included) sent to flunder watchers.
const FLUNDER_WATCH_EVENTS: &str =
    r#"apiserver_watch_events_total{group="wardle.example.com",version="v1beta1",kind="Flunder"}"#;
/// Watch requests for flunders the server has answered, whatever their code.
const FLUNDER_WATCH_REQUESTS: &str =
    r#"apiserver_request_total{verb="WATCH",group="wardle.example.com",version="v1beta1",resource="flunders","#;

/// `name → resourceVersion` of objects: what a reflector must hold to be in sync with a list.
fn versions<'a>(objects: impl IntoIterator<Item = &'a Flunder>) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .map(|f| (f.name_any(), f.resource_version().unwrap_or_default()))
        .collect()
}

/// `name → resourceVersion` of the flunders the server lists now.
async fn listed(api: &Api<Flunder>) -> BTreeMap<String, String> {
    let list = api.list(&ListParams::default()).await.expect("list flunders");
    versions(&list.items)
}

/// A `watcher` feeding a `reflector` store, read by the test itself: the stream advances only inside
/// [`Reflected::read_until`] and [`Reflected::read_while`], so a test can stop reading and let the server end the
/// watch while it writes.
struct Reflected {
    store: Store<Flunder>,
    stream: BoxStream<'static, Result<watcher::Event<Flunder>, watcher::Error>>,
    /// `Init` events: one for the first list, one more for each relist.
    inits: usize,
    /// The errors the watcher reported (it recovers from each by itself).
    errors: Vec<watcher::Error>,
}

impl Reflected {
    fn new(api: Api<Flunder>, config: watcher::Config) -> Reflected {
        let (store, writer) = reflector::store();
        let stream = watcher(api, config).default_backoff().reflect(writer).boxed();
        Reflected {
            store,
            stream,
            inits: 0,
            errors: Vec::new(),
        }
    }

    fn record(&mut self, item: Option<Result<watcher::Event<Flunder>, watcher::Error>>) {
        match item {
            Some(Ok(watcher::Event::Init)) => self.inits += 1,
            Some(Ok(_)) => {}
            Some(Err(error)) => self.errors.push(error),
            None => panic!("the watcher stream ended"),
        }
    }

    /// `name → resourceVersion` of the objects in the store.
    fn state(&self) -> BTreeMap<String, String> {
        versions(self.store.state().iter().map(|f| &**f))
    }

    /// Reads the watcher until `condition` holds for the store (checked before each event).
    async fn read_until(&mut self, what: &str, condition: impl Fn(&Store<Flunder>) -> bool) {
        let deadline = Instant::now() + TIMEOUT;
        while !condition(&self.store) {
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Ok(item) => self.record(item),
                Err(_) => panic!(
                    "timed out after {TIMEOUT:?} waiting for the reflector to hold {what}; it holds {:?}, \
                     {} inits, watcher errors: {:?}",
                    self.state(),
                    self.inits,
                    self.errors
                ),
            }
        }
    }

    /// Reads the watcher until its store holds exactly what the server lists now.
    async fn read_until_in_sync(&mut self, api: &Api<Flunder>) {
        let expected = listed(api).await;
        self.read_until(&format!("{expected:?}"), |store| {
            versions(store.state().iter().map(|f| &**f)) == expected
        })
        .await;
    }

    /// Keeps reading the watcher while `task` runs; returns its output.
    async fn read_while<T>(&mut self, task: impl Future<Output = T>) -> T {
        let mut task = std::pin::pin!(task);
        loop {
            tokio::select! {
                output = &mut task => return output,
                item = self.stream.next() => self.record(item),
            }
        }
    }
}

/// Whether the store holds a flunder `name` in `namespace` for which `check` holds.
fn holds(store: &Store<Flunder>, namespace: &str, name: &str, check: impl Fn(&Flunder) -> bool) -> bool {
    store
        .get(&ObjectRef::new(name).within(namespace))
        .is_some_and(|f| check(&f))
}

#[test]
fn typed_crud_through_api_of_a_custom_resource_type() {
    let server = Server::start(&["wardle"]);
    run(async {
        let client = client(&server);
        let api = namespace(&client, "crud").await;
        let pp = PostParams::default();

        let created = api.create(&pp, &flunder("crud", "other")).await.expect("create");
        assert_eq!(created.namespace().as_deref(), Some("crud"));
        assert!(created.uid().is_some(), "{created:?}");
        assert!(created.creation_timestamp().is_some(), "{created:?}");
        assert_eq!(created.meta().generation, Some(1));
        assert_eq!(created.spec, flunder("crud", "other").spec);

        let got = api.get("crud").await.expect("get");
        assert_eq!(got.spec, created.spec);
        assert_eq!(got.resource_version(), created.resource_version());

        let duplicate = status_of(api.create(&pp, &flunder("crud", "other")).await);
        assert!(duplicate.is_already_exists(), "{duplicate:?}");

        let list = api.list(&ListParams::default()).await.expect("list");
        assert_eq!(versions(&list.items), versions([&got]));
        assert!(list.metadata.resource_version.is_some(), "{:?}", list.metadata);

        // Replace at the read resourceVersion; a replace at a stale one is a conflict.
        let mut changed = got.clone();
        changed.spec.flunder_reference = Some("replaced".to_owned());
        let replaced = api.replace("crud", &pp, &changed).await.expect("replace");
        assert_eq!(replaced.spec.flunder_reference.as_deref(), Some("replaced"));
        assert_eq!(replaced.meta().generation, Some(2));
        assert_ne!(replaced.resource_version(), got.resource_version());
        let stale = status_of(api.replace("crud", &pp, &changed).await);
        assert!(stale.is_conflict(), "{stale:?}");

        // A JSON merge patch of labels and spec.
        let patch = json!({"metadata": {"labels": {"app": "kube-rs"}}, "spec": {"replicas": 3}});
        let patched = api
            .patch("crud", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("merge patch");
        assert_eq!(patched.labels().get("app").map(String::as_str), Some("kube-rs"));
        assert_eq!(patched.spec.replicas, Some(3));
        assert_eq!(patched.spec.flunder_reference.as_deref(), Some("replaced"));
        let selected = api
            .list(&ListParams::default().labels("app=kube-rs"))
            .await
            .expect("list by label");
        assert_eq!(versions(&selected.items), versions([&patched]));
        let none = api
            .list(&ListParams::default().labels("app=other"))
            .await
            .expect("list by another label");
        assert!(none.items.is_empty(), "{:?}", none.items);

        // Delete answers the deleted object or a success Status; the object is gone.
        let deleted = api.delete("crud", &DeleteParams::default()).await.expect("delete");
        match (deleted.as_ref().left(), deleted.as_ref().right()) {
            (Some(object), _) => assert_eq!(object.name_any(), "crud"),
            (_, Some(status)) => assert!(status.is_success(), "{status:?}"),
            _ => unreachable!(),
        }
        let gone = status_of(api.get("crud").await);
        assert!(gone.is_not_found(), "{gone:?}");
        assert!(api.get_opt("crud").await.expect("get_opt").is_none());
    });
}

#[test]
fn reflector_follows_changes_and_relists_after_a_forced_410() {
    // Three events of history: a watcher that stops reading while five writes happen cannot resume.
    let server = Server::start_with_args(&["wardle"], &["--watch-cache-sizes", TINY_WATCH_CACHE]);
    run(async {
        let client = client(&server);
        let ns = "reflected";
        let api = namespace(&client, ns).await;
        let pp = PostParams::default();
        for name in ["a", "b"] {
            api.create(&pp, &flunder(name, "x")).await.expect("create");
        }

        // The server ends each watch after a second; the watcher resumes it from the last resourceVersion it saw.
        let config = watcher::Config::default().timeout(1);
        assert!(config.bookmarks, "kube's watcher asks for bookmarks by default");
        let mut reflected = Reflected::new(api.clone(), config);
        reflected.read_until_in_sync(&api).await;
        assert_eq!(reflected.inits, 1);

        // Creates, updates and deletes reach the store.
        api.create(&pp, &flunder("c", "x")).await.expect("create c");
        reflected.read_until("c", |s| holds(s, ns, "c", |_| true)).await;
        let patch = Patch::Merge(json!({"spec": {"flunderReference": "changed"}}));
        api.patch("a", &PatchParams::default(), &patch).await.expect("patch a");
        reflected
            .read_until("a changed", |s| {
                holds(s, ns, "a", |f| f.spec.flunder_reference.as_deref() == Some("changed"))
            })
            .await;
        api.delete("b", &DeleteParams::default()).await.expect("delete b");
        reflected.read_until("no b", |s| !holds(s, ns, "b", |_| true)).await;
        reflected.read_until_in_sync(&api).await;

        // Stop reading; once the server has ended the watch, write more than its window holds.
        let ended = eventually(|| async { metric(&server, FLUNDER_WATCHERS).await == 0.0 }).await;
        assert!(
            ended,
            "the server did not end the watch of {TIMEOUT:?} after its timeoutSeconds"
        );
        let (inits, errors) = (reflected.inits, reflected.errors.len());
        assert_eq!(errors, 0, "{:?}", reflected.errors);
        for name in ["d", "e", "f"] {
            api.create(&pp, &flunder(name, "x")).await.expect("create");
        }
        api.patch("c", &PatchParams::default(), &patch).await.expect("patch c");
        api.delete("a", &DeleteParams::default()).await.expect("delete a");

        // The resume is answered 410 Gone; the watcher relists and the store ends in sync, deletions included.
        reflected.read_until_in_sync(&api).await;
        let gone = |e: &watcher::Error| matches!(e, watcher::Error::WatchError(status) if status.code == 410);
        assert!(
            !reflected.errors.is_empty() && reflected.errors.iter().all(gone),
            "the watcher should see one 410 Gone and nothing else: {:?}",
            reflected.errors
        );
        assert!(
            reflected.inits > inits,
            "no relist after the 410: {} inits",
            reflected.inits
        );
        assert_eq!(reflected.state().keys().collect::<Vec<_>>(), ["c", "d", "e", "f"]);

        // And it keeps following.
        api.create(&pp, &flunder("g", "x")).await.expect("create g");
        reflected.read_until("g", |s| holds(s, ns, "g", |_| true)).await;
    });
}

#[test]
fn bookmarks_keep_a_quiet_watcher_resumable() {
    // Three events of history and a bookmark every 200 ms: a watcher of a namespace without writes resumes from
    // the resourceVersion of its last bookmark, inside the window, instead of from its last event, far outside it.
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--watch-cache-sizes",
            TINY_WATCH_CACHE,
            "--watch-bookmark-interval",
            "200ms",
        ],
    );
    run(async {
        let client = client(&server);
        let quiet = namespace(&client, "quiet").await;
        let busy = namespace(&client, "busy").await;
        let pp = PostParams::default();
        quiet.create(&pp, &flunder("q0", "x")).await.expect("create q0");

        let config = watcher::Config::default().timeout(2);
        assert!(config.bookmarks);
        let mut reflected = Reflected::new(quiet.clone(), config);
        reflected.read_until_in_sync(&quiet).await;

        reflected
            .read_while(async {
                for i in 0..10 {
                    busy.create(&pp, &flunder(&format!("b{i}"), "x")).await.expect("create");
                }
                // Two bookmarks after the writes (the quiet watcher gets nothing else), then a resumed watch.
                let events = metric(&server, FLUNDER_WATCH_EVENTS).await;
                let bookmarked =
                    eventually(|| async { metric(&server, FLUNDER_WATCH_EVENTS).await >= events + 2.0 }).await;
                assert!(bookmarked, "no two bookmarks in {TIMEOUT:?}");
                let watches = metric(&server, FLUNDER_WATCH_REQUESTS).await;
                let resumed =
                    eventually(|| async { metric(&server, FLUNDER_WATCH_REQUESTS).await >= watches + 1.0 }).await;
                assert!(resumed, "the watcher did not resume its watch in {TIMEOUT:?}");
            })
            .await;

        // The resumed watch still delivers; no 410 and no relist came before it.
        quiet.create(&pp, &flunder("q1", "x")).await.expect("create q1");
        reflected.read_until("q1", |s| holds(s, "quiet", "q1", |_| true)).await;
        assert_eq!(reflected.inits, 1, "relisted; watcher errors: {:?}", reflected.errors);
        assert!(reflected.errors.is_empty(), "{:?}", reflected.errors);
        reflected.read_until_in_sync(&quiet).await;
    });
}

#[test]
fn a_list_of_a_thousand_comes_in_ten_pages_of_a_hundred() {
    let server = Server::start(&["wardle"]);
    run(async {
        let client = client(&server);
        let api = namespace(&client, "paged").await;
        let pp = PostParams::default();
        let created: Vec<Flunder> = futures::stream::iter(0..1000)
            .map(|i| {
                let (api, pp) = (&api, &pp);
                async move { api.create(pp, &flunder(&format!("f{i:04}"), "x")).await }
            })
            .buffer_unordered(16)
            .try_collect()
            .await
            .expect("create 1000 flunders");
        assert_eq!(created.len(), 1000);

        let mut names = BTreeSet::new();
        let mut pages = 0;
        let mut params = ListParams::default().limit(100);
        loop {
            let page = api.list(&params).await.expect("a page");
            pages += 1;
            assert_eq!(page.items.len(), 100, "page {pages}");
            names.extend(page.items.iter().map(ResourceExt::name_any));
            let remaining = page.metadata.remaining_item_count;
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => {
                    assert_eq!(remaining, Some(1000 - 100 * pages), "page {pages}");
                    params = params.continue_token(&token);
                }
                None => {
                    assert_eq!(remaining, None, "the last page");
                    break;
                }
            }
            assert!(pages < 10, "a continue token after 1000 objects");
        }
        assert_eq!(pages, 10);
        assert_eq!(names.len(), 1000);
        assert_eq!(names, created.iter().map(ResourceExt::name_any).collect());
    });
}

/// The finalizer the test controller puts on flunders.
const FINALIZER: &str = "wardle.example.com/cleanup";

/// What the test controller shares with the test.
struct Context {
    client: Client,
    /// `(name, deletion timestamp set)` of every cleanup the controller ran.
    cleaned: Mutex<Vec<(String, bool)>>,
    /// Reconcile errors, for diagnostics.
    errors: Mutex<Vec<String>>,
}

impl Context {
    /// How many reconciles failed, and the first failure.
    fn failures(&self) -> String {
        let errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        match errors.first() {
            Some(first) => format!("{} failed reconciles, the first: {first}", errors.len()),
            None => "no failed reconcile".to_owned(),
        }
    }
}

/// A controller's reconciler: holds each flunder with [`FINALIZER`]; on apply, reports the spec's replicas in the
/// status through `/status`; on deletion, records the cleanup, after which kube's `finalizer` removes the finalizer.
async fn reconcile(flunder: Arc<Flunder>, ctx: Arc<Context>) -> Result<Action, finalizer::Error<kube::Error>> {
    let namespace = flunder.namespace().unwrap_or_default();
    let api: Api<Flunder> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, flunder, |event| async {
        match event {
            finalizer::Event::Apply(flunder) => {
                let status = json!({"status": {
                    "replicas": flunder.spec.replicas.unwrap_or(0),
                    "observedGeneration": flunder.meta().generation,
                }});
                api.patch_status(&flunder.name_any(), &PatchParams::default(), &Patch::Merge(&status))
                    .await?;
                Ok(Action::await_change())
            }
            finalizer::Event::Cleanup(flunder) => {
                let deleting = flunder.meta().deletion_timestamp.is_some();
                ctx.cleaned.lock().unwrap().push((flunder.name_any(), deleting));
                Ok(Action::await_change())
            }
        }
    })
    .await
}

#[test]
fn a_controller_holds_objects_with_a_finalizer_until_its_cleanup_ran() {
    let server = Server::start(&["wardle"]);
    run(async {
        let client = client(&server);
        let api = namespace(&client, "finalized").await;
        let ctx = Arc::new(Context {
            client: client.clone(),
            cleaned: Mutex::default(),
            errors: Mutex::default(),
        });
        let controller = Controller::new(api.clone(), watcher::Config::default())
            .run(
                reconcile,
                |_, error, ctx: Arc<Context>| {
                    ctx.errors
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(error.to_string());
                    Action::requeue(Duration::from_millis(200))
                },
                ctx.clone(),
            )
            .for_each(|_| async {});
        tokio::spawn(controller);

        let mut held = flunder("held", "x");
        held.spec.replicas = Some(2);
        api.create(&PostParams::default(), &held).await.expect("create");
        let reconciled = eventually(|| async {
            let f = api.get("held").await.expect("get");
            f.finalizers() == [FINALIZER]
                && f.status.as_ref().and_then(|s| s.replicas) == Some(2)
                && f.status.as_ref().and_then(|s| s.observed_generation) == Some(1)
        })
        .await;
        assert!(
            reconciled,
            "no finalizer and status on {:?}; {}",
            api.get("held").await,
            ctx.failures()
        );
        assert!(ctx.cleaned.lock().unwrap().is_empty());

        // The delete marks the object; the controller cleans up and removes the finalizer; then it is gone.
        let marked = api.delete("held", &DeleteParams::default()).await.expect("delete");
        let marked = marked
            .left()
            .unwrap_or_else(|| panic!("deleted at once despite the finalizer"));
        assert!(marked.meta().deletion_timestamp.is_some(), "{marked:?}");
        let gone = eventually(|| async { api.get_opt("held").await.expect("get").is_none() }).await;
        assert!(gone, "still there: {:?}; {}", api.get("held").await, ctx.failures());
        let cleaned = ctx.cleaned.lock().unwrap().clone();
        assert!(!cleaned.is_empty(), "no cleanup ran; {}", ctx.failures());
        assert!(cleaned.iter().all(|c| c == &("held".to_owned(), true)), "{cleaned:?}");
    });
}

#[test]
fn status_is_written_through_its_subresource_and_spec_through_the_object() {
    let server = Server::start(&["wardle"]);
    run(async {
        let client = client(&server);
        let api = namespace(&client, "status").await;
        let pp = PostParams::default();
        let mut body = flunder("s", "x");
        body.spec.replicas = Some(1);
        body.status = Some(FlunderStatus {
            replicas: Some(7),
            ..FlunderStatus::default()
        });
        let created = api.create(&pp, &body).await.expect("create");
        assert_ne!(
            created.status.as_ref().and_then(|s| s.replicas),
            Some(7),
            "a create keeps no status: {created:?}"
        );

        // patch_status: the status changes, the spec and generation do not.
        let status = json!({"status": {"replicas": 1, "observedGeneration": 1, "selector": "app=s"}});
        let patched = api
            .patch_status("s", &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("patch_status");
        let expected = FlunderStatus {
            replicas: Some(1),
            observed_generation: Some(1),
            selector: Some("app=s".to_owned()),
        };
        assert_eq!(patched.status.as_ref(), Some(&expected));
        assert_eq!(patched.spec, created.spec);
        assert_eq!(patched.meta().generation, Some(1));

        // replace_status ignores the spec it is given.
        let mut replacement = patched.clone();
        replacement.status.as_mut().unwrap().replicas = Some(2);
        replacement.spec.replicas = Some(5);
        let replaced = api
            .replace_status("s", &pp, &replacement)
            .await
            .expect("replace_status");
        assert_eq!(replaced.status.as_ref().and_then(|s| s.replicas), Some(2));
        assert_eq!(replaced.spec.replicas, Some(1), "the spec is the stored one");
        assert_eq!(replaced.meta().generation, Some(1));
        assert_eq!(api.get_status("s").await.expect("get_status").status, replaced.status);

        // A spec change through the object keeps the status and bumps the generation; a status in the body is
        // ignored there.
        let patch = json!({"spec": {"replicas": 3}, "status": {"replicas": 9}});
        let respecced = api
            .patch("s", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch the spec");
        assert_eq!(respecced.spec.replicas, Some(3));
        assert_eq!(respecced.status, replaced.status);
        assert_eq!(respecced.meta().generation, Some(2));
        let mut replacement = respecced.clone();
        replacement.spec.replicas = Some(4);
        replacement.status.as_mut().unwrap().replicas = Some(9);
        let replaced = api.replace("s", &pp, &replacement).await.expect("replace");
        assert_eq!(replaced.spec.replicas, Some(4));
        assert_eq!(replaced.status, respecced.status);
        assert_eq!(replaced.meta().generation, Some(3));

        // The controller may now report the new generation.
        let observed = json!({"status": {"observedGeneration": 3}});
        let reported = api
            .patch_status("s", &PatchParams::default(), &Patch::Merge(&observed))
            .await
            .expect("patch_status");
        assert_eq!(reported.status.as_ref().and_then(|s| s.observed_generation), Some(3));
        assert_eq!(reported.status.as_ref().and_then(|s| s.replicas), Some(2));
    });
}

#[test]
fn server_side_apply_with_two_managers_and_a_conflict() {
    let server = Server::start(&["wardle"]);
    run(async {
        let client = client(&server);
        let api = namespace(&client, "applied").await;
        let applied = |replicas: i64| {
            json!({
                "apiVersion": "wardle.example.com/v1beta1",
                "kind": "Flunder",
                "metadata": {"name": "ssa"},
                "spec": {"flunderReference": "x", "referenceType": "Flunder", "replicas": replicas},
            })
        };

        // Manager a creates the object by applying it, and owns its fields.
        let by_a = api
            .patch("ssa", &PatchParams::apply("a"), &Patch::Apply(applied(1)))
            .await
            .expect("apply as a");
        assert_eq!(by_a.spec.replicas, Some(1));
        let managers: Vec<_> = by_a.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
        assert_eq!(managers, ["a"]);

        // Manager b applying another value for a field a owns is a conflict...
        let only_replicas = json!({
            "apiVersion": "wardle.example.com/v1beta1",
            "kind": "Flunder",
            "metadata": {"name": "ssa"},
            "spec": {"replicas": 2},
        });
        let conflict = status_of(
            api.patch("ssa", &PatchParams::apply("b"), &Patch::Apply(&only_replicas))
                .await,
        );
        assert_eq!(conflict.code, 409, "{conflict:?}");
        assert!(conflict.is_conflict(), "{conflict:?}");
        assert!(conflict.message.contains(".spec.replicas"), "{conflict:?}");
        assert_eq!(api.get("ssa").await.expect("get").spec.replicas, Some(1));

        // ...which b may force: b then owns the field, a keeps the others.
        let by_b = api
            .patch("ssa", &PatchParams::apply("b").force(), &Patch::Apply(&only_replicas))
            .await
            .expect("forced apply as b");
        assert_eq!(by_b.spec.replicas, Some(2));
        assert_eq!(by_b.spec.flunder_reference.as_deref(), Some("x"));
        let entries = by_b.managed_fields();
        let mut managers: Vec<_> = entries.iter().filter_map(|m| m.manager.clone()).collect();
        managers.sort();
        assert_eq!(managers, ["a", "b"], "{entries:?}");
        let fields_of = |manager: &str| {
            let entry = entries.iter().find(|m| m.manager.as_deref() == Some(manager)).unwrap();
            assert_eq!(entry.operation.as_deref(), Some("Apply"), "{entry:?}");
            serde_json::to_value(&entry.fields_v1).unwrap()
        };
        assert!(fields_of("b")["f:spec"].get("f:replicas").is_some(), "{entries:?}");
        assert!(fields_of("a")["f:spec"].get("f:replicas").is_none(), "{entries:?}");
        assert!(
            fields_of("a")["f:spec"].get("f:flunderReference").is_some(),
            "{entries:?}"
        );

        // A applying its old value again now conflicts with b.
        let again = status_of(
            api.patch("ssa", &PatchParams::apply("a"), &Patch::Apply(applied(1)))
                .await,
        );
        assert!(again.is_conflict(), "{again:?}");
    });
}
