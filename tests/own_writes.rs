//! Reading one's own writes: comparing resourceVersions (RW1–RW3 in
//! `src/resource_version.rs`), waiting for a store to show a write (RW4 in
//! `src/store/mod.rs`), recording writes (RW5, RW6 in
//! `src/own_writes/mod.rs`), recording a write that deleted (RW9) and the controller's gate (RW7, RW8 in
//! `src/controller/mod.rs`), the gate proven on the fake API server with
//! lagging watches, on tokio's paused clock.

use crate::cache_mode_common::CacheModeExt;
use std::{
    cmp::Ordering,
    future::Future,
    pin::pin,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering},
    },
    task::{Context, Poll},
    time::Duration,
};

use futures::{StreamExt, task::ArcWake};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Secret},
};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kube_informer::metrics::MetricsReader;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    Informer, InformerFactory, ObjectKey, Store,
    controller::Controller,
    metrics::ControllerMetrics,
    own_writes::{RecordedWrite, WriteLog},
    resource_version::{Written, compare},
    runner::Action,
    source::Event,
    store::Indexers,
};
use kube_informer_testing::{FakeApiServer, RequestMatch};
use tokio_util::sync::CancellationToken;

fn cm(name: &str, version: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: (!version.is_empty()).then(|| version.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("default"), name).unwrap()
}

fn version(v: &str) -> Written {
    Written::Version(v.into())
}

fn upsert(writer: &Writer<ConfigMap>, name: &str, version: &str) {
    writer
        .apply_upsert(key(name), Arc::new(cm(name, version)))
        .unwrap();
}

/// Counts the wake-ups of a hand-polled future.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl ArcWake for Wakes {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, AtomicOrdering::SeqCst);
    }
}

impl Wakes {
    fn count(&self) -> usize {
        self.0.load(AtomicOrdering::SeqCst)
    }
}

#[test]
fn rw1_versions_compare_as_integers_of_any_length() {
    assert_eq!(compare("9", "10"), Some(Ordering::Less));
    assert_eq!(compare("100", "99"), Some(Ordering::Greater));
    assert_eq!(compare("0", "0"), Some(Ordering::Equal));
    assert_eq!(
        compare(
            "340282366920938463463374607431768211456",
            "18446744073709551616"
        ),
        Some(Ordering::Greater)
    );
    for (a, b) in [
        ("", "1"),
        ("01", "1"),
        ("1", "-1"),
        ("1.5", "2"),
        ("a", "a"),
    ] {
        assert_eq!(compare(a, b), None, "{a:?} vs {b:?}");
    }
    assert!(version("10").seen_in(Some("10")));
    assert!(version("10").seen_in(Some("11")));
    assert!(!version("10").seen_in(Some("9")));
    assert!(!version("10").seen_in(None));
}

#[test]
fn rw2_opaque_versions_are_caught_up_by_the_very_version_only() {
    let written = version("opaque-b");
    assert!(written.seen_in(Some("opaque-b")));
    // Nothing says whether another opaque version is older or newer.
    assert!(!written.seen_in(Some("opaque-a")));
    assert!(!written.seen_in(Some("opaque-c")));
    // One side canonical, the other not: not comparable either.
    assert!(!version("12").seen_in(Some("x13")));
    assert!(!version("012").seen_in(Some("13")));
}

#[test]
fn rw3_a_deletion_is_caught_up_once_the_key_is_gone() {
    assert!(Written::Deleted.seen_in(None));
    assert!(!Written::Deleted.seen_in(Some("5")));
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let store = writer.reader();
    upsert(&writer, "a", "5");
    assert!(!store.caught_up(&key("a"), &Written::Deleted));
    writer.apply_delete(&key("a"));
    assert!(store.caught_up(&key("a"), &Written::Deleted));
    // A write that left the object is not caught up by its absence.
    assert!(!store.caught_up(&key("a"), &version("5")));
}

#[tokio::test(start_paused = true)]
async fn rw1_wait_for_resolves_at_or_after_the_version() {
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let store = writer.reader();
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { store.wait_for(&key("a"), &version("10")).await }
    });
    upsert(&writer, "a", "9");
    upsert(&writer, "b", "11"); // another key
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!waiting.is_finished(), "version 9 is before 10");
    upsert(&writer, "a", "12"); // a later version than the one written
    assert!(waiting.await.unwrap());
    // Already caught up: at once.
    assert!(store.wait_for(&key("a"), &version("10")).await);
    assert!(store.wait_for(&key("a"), &version("12")).await);
}

#[test]
fn rw4_wait_for_is_woken_by_writes_not_by_timers() {
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let store = writer.reader();
    let wakes = Arc::new(Wakes::default());
    let waker = futures::task::waker(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    let written = version("3");
    let a = key("a");
    let mut wait = pin!(store.wait_for(&a, &written));
    // No runtime and no clock: only a write can wake it.
    assert_eq!(wait.as_mut().poll(&mut cx), Poll::Pending);
    assert_eq!(wakes.count(), 0);
    upsert(&writer, "other", "2");
    assert_eq!(
        wakes.count(),
        1,
        "every write wakes the waiter, which looks"
    );
    assert_eq!(wait.as_mut().poll(&mut cx), Poll::Pending);
    upsert(&writer, "a", "3");
    assert_eq!(wakes.count(), 2);
    assert_eq!(wait.as_mut().poll(&mut cx), Poll::Ready(true));
}

#[test]
fn rw4_a_write_between_the_look_and_the_wait_is_not_missed() {
    // The waiter listens before it looks: a write that lands after its
    // first poll, before any other, wakes it.
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let store = writer.reader();
    let wakes = Arc::new(Wakes::default());
    let waker = futures::task::waker(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    let (a, written) = (key("a"), Written::Deleted);
    upsert(&writer, "a", "1");
    let mut wait = pin!(store.wait_for(&a, &written));
    assert_eq!(wait.as_mut().poll(&mut cx), Poll::Pending);
    writer.apply_delete(&a);
    assert_eq!(wakes.count(), 1);
    assert_eq!(wait.as_mut().poll(&mut cx), Poll::Ready(true));
}

#[tokio::test(start_paused = true)]
async fn rw4_wait_for_returns_when_the_informer_stops() {
    let informer = Informer::<ConfigMap>::builder_from_stream(futures::stream::pending::<
        Result<Event<ConfigMap>, std::io::Error>,
    >())
    .cache_from_env()
    .build();
    let store: Store<ConfigMap> = informer.store();
    let waiting = tokio::spawn(async move { store.wait_for(&key("a"), &version("1")).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiting.is_finished());
    informer.stop();
    assert!(
        !waiting.await.unwrap(),
        "stopped without the write: not caught up"
    );
}

#[tokio::test]
async fn rw5_recorded_api_records_what_each_accepted_write_returned() {
    let server = FakeApiServer::start().await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let log = WriteLog::new();
    let parent = key("parent");
    let recorded = log.api(api.clone(), parent.clone());

    let created = recorded
        .create(&PostParams::default(), &cm("a", ""))
        .await
        .unwrap();
    let mut generated = cm("", "");
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let generated = recorded
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let writes = log.take(&parent);
    let expected = |name: &str, object: &ConfigMap| {
        RecordedWrite::new(
            &api,
            key(name),
            version(object.metadata.resource_version.as_deref().unwrap()),
        )
    };
    let generated_name = generated.metadata.name.clone().unwrap();
    assert_eq!(
        writes,
        [
            expected("a", &created),
            // Keyed by the name the server gave.
            expected(&generated_name, &generated),
        ]
    );
    assert_eq!(
        (writes[0].group.as_str(), writes[0].resource.as_str()),
        ("", "configmaps")
    );

    // Each later write to one object replaces its record.
    let replaced = recorded
        .replace("a", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(log.take(&parent), [expected("a", &replaced)]);
    let patch = serde_json::json!({"data": {"k": "v"}});
    let patched = recorded
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_ne!(
        patched.metadata.resource_version,
        replaced.metadata.resource_version
    );
    assert_eq!(log.take(&parent), [expected("a", &patched)]);

    // Status writes, recorded as the object's writes are.
    let deployments = Api::<Deployment>::namespaced(server.client(), "default");
    let recorded_deployments = log.api(deployments.clone(), parent.clone());
    let web: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
    }))
    .unwrap();
    let web = recorded_deployments
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    let status = serde_json::json!({"status": {"replicas": 3}});
    let status_patched = recorded_deployments
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let status_replaced = recorded_deployments
        .replace_status("web", &PostParams::default(), &status_patched)
        .await
        .unwrap();
    assert_ne!(
        web.metadata.resource_version,
        status_replaced.metadata.resource_version
    );
    let writes = log.take(&parent);
    assert_eq!(
        writes,
        [RecordedWrite::new(
            &deployments,
            key("web"),
            version(
                status_replaced
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap()
            )
        )]
    );
    assert_eq!(
        (writes[0].group.as_str(), writes[0].resource.as_str()),
        ("apps", "deployments")
    );

    // A refused write records nothing: `a` exists.
    assert!(
        recorded
            .create(&PostParams::default(), &cm("a", ""))
            .await
            .is_err()
    );
    assert!(log.take(&parent).is_empty());

    // A delete answered with a Status: the object is gone.
    recorded
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        log.take(&parent),
        [RecordedWrite::new(&api, key("a"), Written::Deleted)]
    );
    assert!(
        recorded
            .delete("a", &DeleteParams::default())
            .await
            .is_err()
    );
    assert_eq!(log.parents(), 0);
}

#[tokio::test]
async fn rw6_take_forgets_that_parent_only() {
    let server = FakeApiServer::start().await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let log = WriteLog::new();
    let (first, second) = (key("first"), key("second"));
    let write = |name: &str, v: &str| RecordedWrite::new(&api, key(name), version(v));
    log.record(&first, write("a", "1"));
    log.record(&first, write("b", "2"));
    log.record(&first, write("a", "3")); // replaces a@1, keeps its place
    log.record(&second, write("a", "4"));
    assert_eq!(log.parents(), 2);
    assert_eq!(log.take(&first), [write("a", "3"), write("b", "2")]);
    assert!(log.take(&first).is_empty());
    assert_eq!(log.take(&second), [write("a", "4")]);
    assert_eq!(log.parents(), 0);
    // One name in two resources is two objects.
    let secrets = Api::<Secret>::namespaced(server.client(), "default");
    log.record(&first, write("a", "5"));
    log.record(&first, RecordedWrite::new(&secrets, key("a"), version("6")));
    assert_eq!(log.take(&first).len(), 2);
}

/// RW9: the update that empties the finalizers of an object being deleted
/// deletes it, and is recorded as the deletion; an update that leaves a
/// finalizer is recorded at its version.
#[tokio::test]
async fn rw9_a_write_that_let_the_object_go_is_recorded_as_its_deletion() {
    let server = FakeApiServer::start().await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let log = WriteLog::new();
    let parent = key("parent");
    let recorded = log.api(api.clone(), parent.clone());
    let mut held = cm("a", "");
    held.metadata.finalizers = Some(vec!["a.io/x".into(), "b.io/y".into()]);
    server.create(&held).unwrap();
    let marked = match recorded
        .delete("a", &DeleteParams::default())
        .await
        .unwrap()
    {
        either::Either::Left(marked) => marked,
        either::Either::Right(status) => panic!("deleted at once: {status:?}"),
    };
    assert_eq!(
        log.take(&parent)[0].written,
        version(marked.metadata.resource_version.as_deref().unwrap())
    );

    let one_left = Patch::Merge(serde_json::json!({"metadata": {"finalizers": ["b.io/y"]}}));
    let patched = recorded
        .patch("a", &PatchParams::default(), &one_left)
        .await
        .unwrap();
    assert_eq!(
        log.take(&parent)[0].written,
        version(patched.metadata.resource_version.as_deref().unwrap())
    );

    let none_left = Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}}));
    let last = recorded
        .patch("a", &PatchParams::default(), &none_left)
        .await
        .unwrap();
    assert!(last.metadata.deletion_timestamp.is_some());
    assert!(api.get_opt("a").await.unwrap().is_none());
    let writes = log.take(&parent);
    assert_eq!((writes.len(), &writes[0].key), (1, &key("a")));
    assert_eq!(writes[0].written, Written::Deleted);
}

/// What the child-making reconciler did.
#[derive(Debug, Default)]
struct Tally {
    /// Creates the server accepted.
    created: AtomicU64,
    /// Creates refused with 409 AlreadyExists: the cache had not shown a
    /// child this reconciler had already made.
    duplicates: AtomicU64,
}

struct Children {
    writes: WriteLog,
    secrets: Api<Secret>,
    cache: Store<Secret>,
    tally: Tally,
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Makes `{parent}-child` if the cache has no such Secret, and asks to run
/// again 100 ms later: a reconciler triggered again well before a lagging
/// watch delivers what it wrote.
async fn make_child(parent: Arc<ConfigMap>, ctx: Arc<Children>) -> Result<Action, kube::Error> {
    let parent_key = ObjectKey::from_object(&*parent).expect("cached objects have keys");
    let child = format!("{}-child", parent_key.name());
    if ctx.cache.get(&key(&child)).is_none() {
        let secrets = ctx.writes.api(ctx.secrets.clone(), parent_key);
        match secrets
            .create(&PostParams::default(), &secret(&child))
            .await
        {
            Ok(_) => ctx.tally.created.fetch_add(1, AtomicOrdering::SeqCst),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                ctx.tally.duplicates.fetch_add(1, AtomicOrdering::SeqCst)
            }
            Err(error) => return Err(error),
        };
    }
    Ok(Action::requeue(Duration::from_millis(100)))
}

const PARENTS: [&str; 3] = ["p1", "p2", "p3"];

/// Runs `make_child` over [`PARENTS`] for 5 s of virtual time, every
/// watch `lag` late, with the gate and its deadline when `gate` is some.
async fn run_make_child(
    gate: Option<Duration>,
    lag: Duration,
) -> (Arc<Children>, ControllerMetrics) {
    let server = FakeApiServer::start().await;
    for parent in PARENTS {
        server.create(&cm(parent, "")).unwrap();
    }
    server.lag_watches(RequestMatch::Watch, lag, usize::MAX);
    let client = server.in_process_client();
    let factory = InformerFactory::new(client.clone());
    let children = factory
        .build(Api::<Secret>::all(client.clone()), |builder| builder)
        .unwrap();
    let writes = WriteLog::new();
    let ctx = Arc::new(Children {
        writes: writes.clone(),
        secrets: Api::namespaced(client.clone(), "default"),
        cache: children.store(),
        tally: Tally::default(),
    });
    let mut controller = Controller::with_factory(&factory, Api::<ConfigMap>::all(client.clone()))
        .unwrap()
        .owns(Api::<Secret>::all(client))
        // One worker per parent: each parent's hold is its own.
        .with_config(kube_informer::controller::Config {
            concurrency: PARENTS.len(),
            ..Default::default()
        });
    if let Some(deadline) = gate {
        controller = controller.read_own_writes(writes.clone(), deadline);
    }
    let metrics = MetricsReader::<ControllerMetrics>::from(&controller);
    let stop = CancellationToken::new();
    let outcomes = controller
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(make_child, |_, _, _| Action::backoff(), ctx.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        stop.cancel();
    });
    outcomes
        .for_each(|outcome| async move {
            outcome.expect("every reconcile succeeds");
        })
        .await;
    factory.shutdown().await;
    (ctx, metrics.read().expect("the controller's metrics"))
}

#[tokio::test(start_paused = true)]
async fn rw7_without_the_gate_a_lagging_cache_makes_duplicate_creates() {
    let (ctx, metrics) = run_make_child(None, Duration::from_secs(1)).await;
    assert_eq!(ctx.tally.created.load(AtomicOrdering::SeqCst), 3);
    let duplicates = ctx.tally.duplicates.load(AtomicOrdering::SeqCst);
    // Reconciled every 100 ms for the second the watch lags: several
    // creates of a child that exists, for each parent.
    assert!(duplicates >= 3 * 5, "only {duplicates} duplicate creates");
    assert_eq!(metrics.own_write_holds, 0);
}

#[tokio::test(start_paused = true)]
async fn rw7_rw8_with_the_gate_a_lagging_cache_makes_no_duplicate() {
    let (ctx, metrics) = run_make_child(Some(Duration::from_secs(5)), Duration::from_secs(1)).await;
    assert_eq!(ctx.tally.created.load(AtomicOrdering::SeqCst), 3);
    assert_eq!(ctx.tally.duplicates.load(AtomicOrdering::SeqCst), 0);
    // Each parent's second reconcile waited for its child, once; the
    // reconciles after it wrote nothing, so nothing held them.
    assert_eq!(metrics.own_write_holds, 3);
    assert_eq!(metrics.own_write_expiries, 0);
    assert_eq!(metrics.own_write_hold_time.count, 3);
    // Each hold lasted until the lagging watch delivered the child: under
    // the 1 s lag, well over none.
    let held = metrics.own_write_hold_time.sum;
    assert!(
        held >= Duration::from_millis(3 * 800) && held <= Duration::from_secs(3),
        "held {held:?}"
    );
    // Many reconciles still ran in the 5 s: holds delayed them, no more.
    assert!(
        metrics.reconciles.total() >= 3 * 20,
        "{:?}",
        metrics.reconciles
    );
}

#[tokio::test(start_paused = true)]
async fn rw7_rw8_a_hold_ends_at_its_deadline_and_counts_an_expiry() {
    // The deadline (300 ms) is shorter than the lag (1 s): the hold
    // expires, the reconcile runs on the stale cache and creates again.
    let (ctx, metrics) =
        run_make_child(Some(Duration::from_millis(300)), Duration::from_secs(1)).await;
    assert_eq!(ctx.tally.created.load(AtomicOrdering::SeqCst), 3);
    assert!(ctx.tally.duplicates.load(AtomicOrdering::SeqCst) > 0);
    // A refused create records nothing, so only the first create of each
    // child held (and expired).
    assert_eq!(metrics.own_write_holds, 3);
    assert_eq!(metrics.own_write_expiries, 3);
    assert_eq!(metrics.own_write_hold_time.count, 3);
    assert_eq!(metrics.own_write_hold_time.sum, Duration::from_millis(900));
}

#[tokio::test(start_paused = true)]
async fn rw7_a_write_to_a_resource_no_cache_holds_is_not_waited_for() {
    let server = FakeApiServer::start().await;
    server.create(&cm("p", "")).unwrap();
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(1), usize::MAX);
    let client = server.in_process_client();
    let writes = WriteLog::new();
    let runs = Arc::new(AtomicU64::new(0));
    let controller = Controller::new(Api::<ConfigMap>::all(client.clone()))
        .read_own_writes(writes.clone(), Duration::from_secs(5));
    let metrics = MetricsReader::<ControllerMetrics>::from(&controller);
    let stop = CancellationToken::new();
    let outcomes = controller
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            {
                let (runs, writes) = (runs.clone(), writes.clone());
                move |parent: Arc<ConfigMap>, _ctx: Arc<()>| {
                    let (runs, writes, client) = (runs.clone(), writes.clone(), client.clone());
                    async move {
                        let n = runs.fetch_add(1, AtomicOrdering::SeqCst);
                        // A Secret each time: the controller caches no Secrets.
                        let parent = ObjectKey::from_object(&*parent).unwrap();
                        writes
                            .api(Api::<Secret>::namespaced(client, "default"), parent)
                            .create(&PostParams::default(), &secret(&format!("s{n}")))
                            .await?;
                        Ok::<_, kube::Error>(Action::requeue(Duration::from_millis(100)))
                    }
                }
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.cancel();
    });
    outcomes
        .for_each(|outcome| async move {
            outcome.unwrap();
        })
        .await;
    let metrics = metrics.read().unwrap();
    assert_eq!(metrics.own_write_holds, 0);
    // Every 100 ms for a second, nothing held.
    assert!(runs.load(AtomicOrdering::SeqCst) >= 10);
}

/// Counts the parent up to [`COUNT_TO`] through its own data, one step per
/// reconcile, from the count its cache shows, and asks to run again
/// 100 ms later; returns the counts it wrote, in order.
async fn count_up(gate: bool) -> Vec<u32> {
    let server = FakeApiServer::start().await;
    server.create(&cm("counter", "")).unwrap();
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(1), usize::MAX);
    let client = server.in_process_client();
    let writes = WriteLog::new();
    let written = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut controller = Controller::new(Api::<ConfigMap>::namespaced(client.clone(), "default"));
    if gate {
        controller = controller.read_own_writes(writes.clone(), Duration::from_secs(5));
    }
    let stop = CancellationToken::new();
    let reconcile = {
        let written = written.clone();
        move |counter: Arc<ConfigMap>, _ctx: Arc<()>| {
            let (writes, client, written) = (writes.clone(), client.clone(), written.clone());
            async move {
                let seen: u32 = counter
                    .data
                    .as_ref()
                    .and_then(|data| data.get("n"))
                    .map_or(0, |n| n.parse().unwrap());
                if seen >= COUNT_TO {
                    return Ok(Action::await_change());
                }
                let parent = ObjectKey::from_object(&*counter).unwrap();
                let next = seen + 1;
                let patch = serde_json::json!({"data": {"n": next.to_string()}});
                writes
                    .api(Api::<ConfigMap>::namespaced(client, "default"), parent)
                    .patch("counter", &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                written.lock().push(next);
                Ok::<_, kube::Error>(Action::requeue(Duration::from_millis(100)))
            }
        }
    };
    let outcomes = controller
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(reconcile, |_, _, _| Action::backoff(), Arc::new(()));
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        stop.cancel();
    });
    outcomes
        .for_each(|outcome| async move {
            outcome.unwrap();
        })
        .await;
    written.lock().clone()
}

const COUNT_TO: u32 = 5;

#[tokio::test(start_paused = true)]
async fn rw7_without_the_gate_a_stale_object_is_written_back() {
    let counts = count_up(false).await;
    // The same step written again and again from a cache that had not
    // shown it: writes computed from a stale object.
    assert!(counts.len() > COUNT_TO as usize, "{counts:?}");
    assert_eq!(counts[..2], [1, 1]);
}

#[tokio::test(start_paused = true)]
async fn rw7_with_the_gate_each_reconcile_reads_its_last_write() {
    // The object is read after the hold: each step starts from the last.
    assert_eq!(count_up(true).await, (1..=COUNT_TO).collect::<Vec<_>>());
}
