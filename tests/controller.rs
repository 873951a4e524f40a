//! The controller's rules (C1–C14 in `src/controller/mod.rs`) on the fake
//! API server, on tokio's paused clock.

use crate::cache_mode_common::CacheModeExt;
use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{Stream, StreamExt};
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::ConfigMap},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{Api, api::ObjectMeta};
use kube_informer::metrics::{ControllerMetrics, MetricsReader, WorkQueueMetrics};
use kube_informer::{
    InformerFactory, ObjectKey,
    controller::{Controller, Error, Observed},
    ext::changed,
    informer::SyncError,
    runner::Action,
    shard::{KeyGate, Ownership},
    unstable::shard::{Member, MemberId, MemberSet},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use tokio_util::sync::CancellationToken;

/// One item of a controller's stream.
type Outcome<E> = Result<(ObjectKey, Action), Error<E>>;

fn cm(name: &str, data: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), data.to_string())])),
        ..Default::default()
    }
}

fn deployment(name: &str) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A ConfigMap controlled by the Deployment `owner`, its owner reference
/// written under `api_version`.
fn child(name: &str, owner: &str, api_version: &str) -> ConfigMap {
    let mut child = cm(name, "x");
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: api_version.into(),
        kind: "Deployment".into(),
        name: owner.into(),
        uid: "u".into(),
        controller: Some(true),
        ..Default::default()
    }]);
    child
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("default"), name).unwrap()
}

/// The keys a reconciler was called with, in order.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<String>>>);

impl Calls {
    fn record(&self, key: String) {
        self.0.lock().unwrap().push(key);
    }
    fn get(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    /// A reconciler that records the name of each object it is handed and
    /// succeeds.
    fn reconciler<K: kube::Resource + Send + Sync + 'static>(
        &self,
    ) -> impl Fn(Arc<K>, Arc<()>) -> std::future::Ready<Result<Action, std::convert::Infallible>>
    + Send
    + Sync
    + 'static {
        let calls = self.clone();
        move |object, _ctx| {
            calls.record(name_of(&*object));
            std::future::ready(Ok(Action::await_change()))
        }
    }
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// Polls `outcomes` until `done` holds of what was yielded so far (at most
/// a minute of paused time).
async fn collect_until<E: std::fmt::Debug>(
    outcomes: &mut (impl Stream<Item = Outcome<E>> + Unpin),
    mut done: impl FnMut(&[Outcome<E>]) -> bool,
) -> Vec<Outcome<E>> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while !done(&seen) {
            match outcomes.next().await {
                Some(outcome) => seen.push(outcome),
                None => break,
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; seen {seen:?}"));
    seen
}

#[tokio::test(start_paused = true)]
async fn c2_c4_a_change_reconciles_the_cached_object() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let calls = Calls::default();
    let seen = calls.clone();
    let stop = CancellationToken::new();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                let seen = seen.clone();
                async move {
                    let data = cm.data.as_ref().unwrap()["k"].clone();
                    seen.record(format!("{}={data}", name_of(&*cm)));
                    Ok::<_, std::convert::Infallible>(Action::await_change())
                }
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    let first = collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(first[0].as_ref().unwrap(), &(key("a"), Action::AwaitChange));
    server.update(&cm("a", "2")).unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    // The reconcile reads the cache when it starts: the newest state.
    assert_eq!(calls.get(), ["a=1", "a=2"]);
    stop.cancel();
    assert!(
        outcomes.next().await.is_none(),
        "C7: ends after a graceful shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn c2_an_owned_object_reconciles_its_owner_across_served_versions() {
    let server = FakeApiServer::start().await;
    server.create(&deployment("web")).unwrap();
    server.create(&cm("unrelated", "x")).unwrap();
    let calls = Calls::default();
    let client = server.client();
    let outcomes = Controller::new(Api::<Deployment>::all(client.clone()))
        .owns(Api::<ConfigMap>::all(client.clone()))
        .run(
            calls.reconciler::<Deployment>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(calls.get(), ["web"]);
    // A child whose owner reference names another served version of the
    // owner's group and kind still maps to it.
    server
        .create(&child("web-config", "web", "apps/v1beta2"))
        .unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(calls.get(), ["web", "web"]);
}

#[tokio::test(start_paused = true)]
async fn c2_watches_maps_any_object_and_a_stream_names_keys() {
    let server = FakeApiServer::start().await;
    server.create(&cm("target", "1")).unwrap();
    server.create(&deployment("trigger")).unwrap();
    let calls = Calls::default();
    let client = server.client();
    let (poke, pokes) = futures::channel::mpsc::unbounded();
    let outcomes = Controller::new(Api::<ConfigMap>::all(client.clone()))
        .watches(Api::<Deployment>::all(client.clone()), |_d: &Deployment| {
            Some(key("target"))
        })
        .reconcile_on(pokes)
        .with_config(kube_informer::controller::Config {
            concurrency: 1,
            ..Default::default()
        })
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    let before = calls.get().len();
    server
        .update(&{
            let mut d = deployment("trigger");
            d.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
            d
        })
        .unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    poke.unbounded_send(key("target")).unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert!(calls.get().len() >= before + 2, "{:?}", calls.get());
    assert!(calls.get().iter().all(|name| name == "target"));
    // A stream naming a key with no object: nothing reconciled (C4).
    poke.unbounded_send(key("nothing-here")).unwrap();
    let missing = collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert!(
        matches!(&missing[0], Err(Error::ObjectNotFound { key: k }) if *k == key("nothing-here"))
    );
}

#[tokio::test(start_paused = true)]
async fn c2_reconcile_all_on_queues_every_cached_key() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b", "c"] {
        server.create(&cm(name, "1")).unwrap();
    }
    let calls = Calls::default();
    let (tick, ticks) = futures::channel::mpsc::unbounded::<()>();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .reconcile_all_on(ticks)
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == 3).await;
    tick.unbounded_send(()).unwrap();
    collect_until(&mut outcomes, |seen| seen.len() == 3).await;
    let mut names = calls.get();
    names.sort();
    assert_eq!(names, ["a", "a", "b", "b", "c", "c"]);
}

#[tokio::test(start_paused = true)]
async fn c2_a_predicate_drops_changes_it_does_not_pass() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let calls = Calls::default();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .filter_changes(changed::labels())
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    // A data change: labels unchanged, dropped.
    server.update(&cm("a", "2")).unwrap();
    // A label change: passes.
    let mut labelled = cm("a", "2");
    labelled.metadata.labels = Some(BTreeMap::from([("tier".into(), "web".into())]));
    server.update(&labelled).unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        calls.get(),
        ["a", "a"],
        "only the addition and the label change"
    );
}

#[tokio::test(start_paused = true)]
async fn c1_two_controllers_on_one_factory_share_one_informer() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::all(factory.client());
    let first = Controller::with_factory(&factory, api()).unwrap();
    let second = Controller::with_factory(&factory, api())
        .unwrap()
        .owns(Api::<Deployment>::all(factory.client()));
    assert_eq!(
        factory.len(),
        2,
        "one ConfigMap informer, one Deployment informer"
    );
    let run = |controller: Controller<ConfigMap>| {
        controller.run(
            |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async {
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        )
    };
    let (mut first, mut second) = (Box::pin(run(first)), Box::pin(run(second)));
    collect_until(&mut first, |seen| !seen.is_empty()).await;
    collect_until(&mut second, |seen| !seen.is_empty()).await;
    // One list of ConfigMaps served both.
    let lists = server
        .requests()
        .iter()
        .filter(|r| r.is_list() && r.path.contains("configmaps"))
        .count();
    assert_eq!(lists, 1);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn c3_a_forbidden_source_fails_the_sync_at_once() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), usize::MAX);
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client())).run(
        |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async {
            Ok::<_, std::convert::Infallible>(Action::await_change())
        },
        |_, _, _| Action::backoff(),
        Arc::new(()),
    );
    let started = tokio::time::Instant::now();
    let all: Vec<_> = outcomes.collect().await;
    assert_eq!(all.len(), 1, "{all:?}");
    match &all[0] {
        Err(Error::Sync(SyncError::Refused { status, .. })) => assert_eq!(*status, 403),
        other => panic!("expected a refused sync, got {other:?}"),
    }
    let Err(Error::Sync(refused)) = &all[0] else {
        unreachable!()
    };
    let cause = refused.to_string();
    assert!(
        cause.contains("configmaps") && cause.contains("forbidden"),
        "names the resource: {cause}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "fails fast");
}

#[tokio::test(start_paused = true)]
async fn c3_a_source_that_never_lists_times_out() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .with_config(kube_informer::controller::Config {
            sync_timeout: Duration::from_secs(30),
            ..Default::default()
        })
        .run(
            |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async {
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let started = tokio::time::Instant::now();
    let all: Vec<_> = outcomes.collect().await;
    assert!(
        matches!(&all[..], [Err(Error::Sync(SyncError::TimedOut { .. }))]),
        "{all:?}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(40),
        "{waited:?}"
    );
}

/// Runs a controller that reconciles nothing and collects its stream.
async fn outcomes_of<K: kube_informer::source::Watchable>(
    controller: Controller<K>,
) -> Vec<Outcome<std::convert::Infallible>> {
    controller
        .run(
            |_object: Arc<K>, _ctx: Arc<()>| async { Ok(Action::await_change()) },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        )
        .collect()
        .await
}

/// C3, C12: a custom resource whose CRD is not installed ends the stream
/// with one error whose plain message says so, on one line: the resource
/// and the 404, and what to install.
#[tokio::test(start_paused = true)]
async fn c3_c12_an_unserved_resource_ends_the_stream_with_its_cause() {
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    let server = FakeApiServer::start().await;
    let gvk = GroupVersionKind::gvk("nullable.se", "v1", "ConfigMapGenerator");
    let generators = ApiResource::from_gvk_with_plural(&gvk, "configmapgenerators");
    let api = Api::<DynamicObject>::all_with(server.client(), &generators);
    let started = tokio::time::Instant::now();
    let all = outcomes_of(Controller::new_with(api, generators)).await;
    assert!(started.elapsed() < Duration::from_secs(5), "fails fast");
    let [Err(error @ Error::Sync(SyncError::NotFound { .. }))] = &all[..] else {
        panic!("expected one sync error, got {all:?}");
    };
    let message = error.to_string();
    for says in [
        "the controller's caches did not sync",
        "configmapgenerators",
        "nullable.se",
        "is not served by the API server (404)",
        "install the CustomResourceDefinition",
    ] {
        assert!(message.contains(says), "{says:?} missing from {message:?}");
    }
    assert!(!message.contains('\n'), "one line: {message:?}");
    // Nothing more to say: no source repeats it.
    assert!(std::error::Error::source(error).is_none());
}

/// C12: a sync that timed out says so in its message, and its source is
/// the last list error, which the message does not repeat.
#[tokio::test(start_paused = true)]
async fn c12_a_timed_out_sync_names_its_last_error_once_in_the_chain() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(
        kube_informer::controller::Config {
            sync_timeout: Duration::from_secs(30),
            ..Default::default()
        },
    );
    let all = outcomes_of(controller).await;
    let [Err(error @ Error::Sync(SyncError::TimedOut { .. }))] = &all[..] else {
        panic!("expected a timed-out sync, got {all:?}");
    };
    let message = error.to_string();
    assert!(
        message.contains("configmaps did not sync within 30s"),
        "{message}"
    );
    let cause = std::error::Error::source(error)
        .expect("the last list error")
        .to_string();
    assert!(!message.contains(&cause), "{message:?} repeats {cause:?}");
}

/// C12: a controller that cannot be set up says why in its message.
#[tokio::test(start_paused = true)]
async fn c12_a_refused_setup_names_its_cause() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    factory
        .build(Api::<ConfigMap>::all(server.client()), |b| {
            b.strip_managed_fields()
        })
        .unwrap();
    let controller = Controller::with_factory(&factory, Api::<Deployment>::all(server.client()))
        .unwrap()
        .owns(Api::<ConfigMap>::all(server.client()));
    let all = outcomes_of(controller).await;
    let [Err(error @ Error::Setup(_))] = &all[..] else {
        panic!("expected a setup error, got {all:?}");
    };
    let message = error.to_string();
    assert!(
        message.starts_with("the controller could not be set up: an informer for")
            && message.contains("configmaps")
            && message.contains("other options"),
        "{message}"
    );
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn c4_a_deleted_object_is_reconciled_with_its_last_state() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "last")).unwrap();
    let calls = Calls::default();
    let seen = calls.clone();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client())).run_with_deletions(
        move |observed: Observed<ConfigMap>, _ctx: Arc<()>| {
            let data = observed.object().data.as_ref().unwrap()["k"].clone();
            seen.record(format!(
                "{}:{data}",
                if observed.is_deleted() {
                    "deleted"
                } else {
                    "present"
                }
            ));
            async { Ok::<_, std::convert::Infallible>(Action::await_change()) }
        },
        |_, _, _| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(calls.get(), ["present:last", "deleted:last"]);
}

#[tokio::test(start_paused = true)]
async fn c4_run_skips_a_deleted_object() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client())).run(
        |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async {
            Ok::<_, std::convert::Infallible>(Action::await_change())
        },
        |_, _, _| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    let after = collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert!(matches!(&after[0], Err(Error::ObjectNotFound { key: k }) if *k == key("a")));
}

#[tokio::test(start_paused = true)]
async fn c4_run_by_key_hands_every_key_with_what_is_known_of_its_object() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let calls = Calls::default();
    let (seen, policy_saw) = (calls.clone(), calls.clone());
    let (poke, pokes) = futures::channel::mpsc::unbounded::<ObjectKey>();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .reconcile_on(pokes)
        .run_by_key(
            move |key: ObjectKey, observed: Option<Observed<ConfigMap>>, _ctx: Arc<()>| {
                let state = match &observed {
                    Some(Observed::Present(cm)) => {
                        format!("present:{}", cm.data.as_ref().unwrap()["k"])
                    }
                    Some(Observed::Deleted(cm)) => {
                        format!("deleted:{}", cm.data.as_ref().unwrap()["k"])
                    }
                    None => "unknown".to_owned(),
                };
                seen.record(format!("{}={state}", key.name()));
                let fail = observed.is_none() && key.name() == "failing";
                async move {
                    if fail {
                        Err(Failure("cannot clean up"))
                    } else {
                        Ok(Action::await_change())
                    }
                }
            },
            move |key, error: &Failure, _ctx| {
                policy_saw.record(format!("policy {}: {error}", key.name()));
                Action::await_change()
            },
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    // Deleted while the controller runs: its last state.
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    // Never seen (deleted before the process started): the key alone.
    poke.unbounded_send(key("never-seen")).unwrap();
    let unknown = collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(
        unknown[0].as_ref().unwrap(),
        &(key("never-seen"), Action::AwaitChange)
    );
    // A failure of an unknown key goes to the error policy, with the key.
    poke.unbounded_send(key("failing")).unwrap();
    let failed = collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert!(matches!(&failed[0], Err(Error::Reconcile { key: k, .. }) if *k == key("failing")));
    assert_eq!(
        calls.get(),
        [
            "a=present:1",
            "a=deleted:1",
            "never-seen=unknown",
            "failing=unknown",
            "policy failing: cannot clean up"
        ]
    );
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failure(&'static str);

#[tokio::test(start_paused = true)]
async fn c5_the_error_policy_decides_the_next_turn() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let calls = Calls::default();
    let seen = calls.clone();
    let controller = Controller::new(Api::<ConfigMap>::all(server.client()));
    let queue = MetricsReader::<WorkQueueMetrics>::from(&controller);
    let outcomes = controller.run(
        move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
            seen.record(name_of(&*cm));
            async { Err::<Action, _>(Failure("always")) }
        },
        |_cm, _error: &Failure, _ctx| Action::requeue(Duration::from_secs(10)),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    let started = tokio::time::Instant::now();
    let failures = collect_until(&mut outcomes, |seen| seen.len() == 3).await;
    assert!(
        failures
            .iter()
            .all(|o| matches!(o, Err(Error::Reconcile { .. })))
    );
    // Three calls, ten seconds apart: the policy's delay, not the rate limiter's.
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(20) && took < Duration::from_secs(21),
        "{took:?}"
    );
    assert_eq!(
        queue.read().unwrap().retries,
        0,
        "RequeueAfter is not a rate-limited retry"
    );
}

#[tokio::test(start_paused = true)]
async fn c5_by_default_a_failure_backs_off_per_key() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let controller = Controller::new(Api::<ConfigMap>::all(server.client()));
    let queue = MetricsReader::<WorkQueueMetrics>::from(&controller);
    let outcomes = controller.run(
        |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async { Err::<Action, _>(Failure("no")) },
        |_cm, _error, _ctx| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == 4).await;
    assert!(queue.read().unwrap().retries >= 4);
}

#[tokio::test(start_paused = true)]
async fn c6_a_panicking_reconcile_is_caught_counted_and_retried() {
    let server = FakeApiServer::start().await;
    server.create(&cm("boom", "1")).unwrap();
    server.create(&cm("fine", "1")).unwrap();
    let calls = Calls::default();
    let seen = calls.clone();
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(
        kube_informer::controller::Config {
            concurrency: 2,
            ..Default::default()
        },
    );
    let metrics = MetricsReader::<ControllerMetrics>::from(&controller);
    let outcomes = controller.run(
        move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
            let name = name_of(&*cm);
            seen.record(name.clone());
            async move {
                if name == "boom" && cm.data.as_ref().unwrap()["k"] == "1" {
                    panic!("cannot handle {name}");
                }
                Ok::<_, std::convert::Infallible>(Action::await_change())
            }
        },
        |_, _, _| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    let first = collect_until(&mut outcomes, |seen| {
        seen.iter()
            .any(|o| matches!(o, Err(Error::Panicked { .. })))
            && seen.iter().any(|o| o.is_ok())
    })
    .await;
    let panicked = first
        .iter()
        .find_map(|o| match o {
            Err(Error::Panicked { key, message }) => Some((key.clone(), message.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(panicked.0, key("boom"));
    assert!(panicked.1.contains("cannot handle boom"));
    // It is retried (with backoff) and the other key went on.
    collect_until(&mut outcomes, |seen| {
        seen.iter()
            .any(|o| matches!(o, Err(Error::Panicked { .. })))
    })
    .await;
    let counts = metrics.read().unwrap();
    assert!(
        counts.panics >= 2 && counts.errors >= counts.panics,
        "{counts:?}"
    );
    assert_eq!(counts.reconciles.success, 1);
    assert!(calls.get().iter().filter(|n| *n == "boom").count() >= 2);
}

#[tokio::test(start_paused = true)]
async fn c7_a_graceful_shutdown_lets_running_reconciles_finish() {
    let server = FakeApiServer::start().await;
    server.create(&cm("slow", "1")).unwrap();
    let stop = CancellationToken::new();
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            move |_cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                let started_tx = started_tx.clone();
                async move {
                    if let Some(tx) = started_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok::<_, std::convert::Infallible>(Action::await_change())
                }
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let collected = tokio::spawn(outcomes.collect::<Vec<_>>());
    started.await.unwrap();
    stop.cancel();
    // A change after the stop: not taken.
    server.update(&cm("slow", "2")).unwrap();
    let all = collected.await.unwrap();
    assert_eq!(
        all.len(),
        1,
        "the running reconcile finished and was reported: {all:?}"
    );
    assert!(all[0].is_ok());
}

#[tokio::test(start_paused = true)]
async fn c8_reconcile_metrics_count_results_workers_and_time() {
    let server = FakeApiServer::start().await;
    for name in ["done", "later", "again", "fails"] {
        server.create(&cm(name, "1")).unwrap();
    }
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(
        kube_informer::controller::Config {
            concurrency: 3,
            ..Default::default()
        },
    );
    let metrics = MetricsReader::<ControllerMetrics>::from(&controller);
    assert_eq!(metrics.read().unwrap().max_concurrent_reconciles, 3);
    let outcomes = controller.run(
        |cm: Arc<ConfigMap>, _ctx: Arc<()>| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match name_of(&*cm).as_str() {
                "done" => Ok(Action::await_change()),
                "later" => Ok(Action::requeue(Duration::from_secs(3600))),
                "again" => Ok(Action::backoff()),
                _ => Err(Failure("no")),
            }
        },
        |_cm, _error, _ctx| Action::requeue(Duration::from_secs(3600)),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    // "again" backs off and comes back; wait for the first four.
    collect_until(&mut outcomes, |seen| seen.len() >= 4).await;
    let read = metrics.read().unwrap();
    let counts = read.reconciles;
    assert_eq!(
        (counts.success, counts.requeue_after, counts.error),
        (1, 1, 1)
    );
    assert!(counts.requeue >= 1);
    assert_eq!(read.errors, 1);
    assert_eq!(read.reconcile_time.count, counts.total());
    assert!(read.reconcile_time.sum >= Duration::from_millis(20) * counts.total() as u32);
    assert!(
        read.active_workers <= 1,
        "at most the backing-off key runs now"
    );
}

#[tokio::test(start_paused = true)]
async fn c9_a_sharded_controller_reconciles_only_owned_keys() {
    let server = FakeApiServer::start().await;
    let names: Vec<String> = (0..20).map(|i| format!("cm-{i}")).collect();
    for name in &names {
        server.create(&cm(name, "1")).unwrap();
    }
    let members = MemberSet::new([Member::new("a", "1"), Member::new("b", "1")]);
    let gate = KeyGate::new(Ownership::of(MemberId::new("a"), [members]));
    let calls = Calls::default();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .shard(gate.clone())
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let owned: Vec<&String> = names.iter().filter(|n| gate.owns(&key(n))).collect();
    assert!(!owned.is_empty() && owned.len() < names.len());
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == owned.len()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut reconciled = calls.get();
    reconciled.sort();
    let mut expected: Vec<String> = owned.into_iter().cloned().collect();
    expected.sort();
    assert_eq!(reconciled, expected);
}

#[tokio::test(start_paused = true)]
async fn c7_when_every_trigger_ends_what_is_queued_is_reconciled_then_the_stream_ends() {
    use kube_informer::{Informer, source::Event};
    let events = futures::stream::iter(
        [
            Event::ListStart,
            Event::Listed(cm("a", "1")),
            Event::Listed(cm("b", "1")),
            Event::ListDone {
                resource_version: "1".into(),
            },
        ]
        .map(Ok::<_, std::io::Error>),
    );
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let controller = Controller::for_informer(&informer);
    let run = tokio::spawn(informer.run());
    let outcomes: Vec<_> = controller
        .run(
            |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async {
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        )
        .collect()
        .await;
    let mut keys: Vec<ObjectKey> = outcomes.into_iter().map(|o| o.unwrap().0).collect();
    keys.sort();
    assert_eq!(keys, [key("a"), key("b")]);
    run.await.unwrap().unwrap();
}

/// C2: a relist that finds the objects as the caches hold them (what an
/// expired watch or an apiserver restart brings) triggers no reconcile,
/// through the controller's own objects or the objects they own: its
/// notifications are resyncs (I3), which say nothing changed.
#[tokio::test(start_paused = true)]
async fn c2_a_relist_of_unchanged_objects_reconciles_nothing() {
    let server = FakeApiServer::start().await;
    server.create(&deployment("web")).unwrap();
    server
        .create(&child("web-config", "web", "apps/v1"))
        .unwrap();
    let calls = Calls::default();
    let client = server.client();
    let outcomes = Controller::new(Api::<Deployment>::all(client.clone()))
        .owns(Api::<ConfigMap>::all(client.clone()))
        .run(
            calls.reconciler::<Deployment>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    let quiet = tokio::time::timeout(Duration::from_secs(5), outcomes.next()).await;
    assert!(
        quiet.is_err(),
        "settled after the first reconcile: {quiet:?}"
    );
    assert_eq!(calls.get(), ["web"]);

    // Both watches end and their next watch is refused as expired: each
    // informer lists again and finds what it holds.
    server.clear_requests();
    server.fail_requests(RequestMatch::Watch, ApiStatus::expired(), 2);
    server.close_watches();
    server
        .wait_until(|requests, open| {
            let listed = |plural: &str| {
                requests
                    .iter()
                    .any(|r| r.is_list() && r.path.ends_with(plural))
            };
            listed("/deployments") && listed("/configmaps") && open >= 2
        })
        .await;
    let after = tokio::time::timeout(Duration::from_secs(5), outcomes.next()).await;
    assert!(
        after.is_err(),
        "a relist of unchanged objects reconciled: {after:?}"
    );
    assert_eq!(calls.get(), ["web"]);

    // A change after the relists still reconciles.
    let mut labelled = deployment("web");
    labelled.metadata.labels = Some(BTreeMap::from([("tier".to_string(), "web".to_string())]));
    server.update(&labelled).unwrap();
    collect_until(&mut outcomes, |seen| !seen.is_empty()).await;
    assert_eq!(calls.get(), ["web", "web"]);
}

/// A reconcile's future, boxed.
type Reconciled = futures::future::BoxFuture<'static, Result<Action, std::convert::Infallible>>;

/// The held call of a [`holding_reconciler`]: `started` says it began,
/// `release` lets it end.
struct Held {
    started: tokio::sync::oneshot::Receiver<()>,
    release: Arc<tokio::sync::Notify>,
}

/// A reconciler that records the name of each object and holds its call
/// number `held` (from 0) until released.
fn holding_reconciler(
    calls: &Calls,
    held: usize,
) -> (
    impl Fn(Arc<ConfigMap>, Arc<()>) -> Reconciled + Send + Sync + 'static,
    Held,
) {
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let release = Arc::new(tokio::sync::Notify::new());
    let (calls, gate) = (calls.clone(), release.clone());
    let reconcile = move |cm: Arc<ConfigMap>, _ctx: Arc<()>| -> Reconciled {
        let (calls, started_tx, gate) = (calls.clone(), started_tx.clone(), gate.clone());
        let call = calls.get().len();
        calls.record(name_of(&*cm));
        Box::pin(async move {
            if call == held {
                if let Some(tx) = started_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                gate.notified().await;
            }
            Ok(Action::await_change())
        })
    };
    (reconcile, Held { started, release })
}

/// Waits (on the paused clock) until `queue` holds `len` keys.
async fn until_queued(
    queue: &kube_informer::metrics::MetricsReader<kube_informer::metrics::WorkQueueMetrics>,
    len: usize,
) {
    let depth = || queue.read().map_or(0, |metrics| metrics.depth);
    tokio::time::timeout(Duration::from_secs(60), async {
        while depth() != len {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} keys queued, not {len}", depth()));
}

/// C10: ten listed ConfigMaps; while the first reconcile is held and the
/// other nine wait, "live" is created; the order of all eleven reconciles.
async fn order_of_a_change_made_while_listed_keys_wait(priorities: bool) -> Vec<String> {
    let server = FakeApiServer::start().await;
    for i in 0..10 {
        server.create(&cm(&format!("listed-{i}"), "1")).unwrap();
    }
    let calls = Calls::default();
    let (reconcile, Held { started, release }) = holding_reconciler(&calls, 0);
    // One reconcile at a time, so the others wait in the queue.
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(
        kube_informer::controller::Config {
            concurrency: 1,
            queue: kube_informer::queue::QueueConfig {
                priorities,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let queue = MetricsReader::<WorkQueueMetrics>::from(&controller);
    let outcomes = controller.run(reconcile, |_, _, _| Action::backoff(), Arc::new(()));
    let collected = tokio::spawn(outcomes.take(11).collect::<Vec<_>>());
    started.await.unwrap();
    until_queued(&queue, 9).await;
    server.create(&cm("live", "1")).unwrap();
    until_queued(&queue, 10).await;
    release.notify_one();
    let outcomes = collected.await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    calls.get()
}

#[tokio::test(start_paused = true)]
async fn c10_with_priorities_a_change_is_reconciled_before_the_listed_keys_that_wait() {
    let order = order_of_a_change_made_while_listed_keys_wait(true).await;
    assert_eq!(order.len(), 11);
    assert_eq!(order[1], "live", "W14: before the listed keys: {order:?}");
    let order = order_of_a_change_made_while_listed_keys_wait(false).await;
    assert_eq!(
        order[10], "live",
        "off by default: one FIFO, behind every listed key: {order:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn c10_with_priorities_the_keys_of_a_reconcile_all_on_tick_wait_behind_a_change() {
    let server = FakeApiServer::start().await;
    for i in 0..5 {
        server.create(&cm(&format!("listed-{i}"), "1")).unwrap();
    }
    let calls = Calls::default();
    // The first key of the tick is held: the initial list is 5 calls.
    let (reconcile, Held { started, release }) = holding_reconciler(&calls, 5);
    let (tick, ticks) = futures::channel::mpsc::unbounded::<()>();
    let controller = Controller::new(Api::<ConfigMap>::all(server.client()))
        .reconcile_all_on(ticks)
        .with_config(kube_informer::controller::Config {
            concurrency: 1,
            queue: kube_informer::queue::QueueConfig {
                priorities: true,
                ..Default::default()
            },
            ..Default::default()
        });
    let queue = MetricsReader::<WorkQueueMetrics>::from(&controller);
    let outcomes = controller.run(reconcile, |_, _, _| Action::backoff(), Arc::new(()));
    let collected = tokio::spawn(outcomes.take(11).collect::<Vec<_>>());
    while calls.get().len() < 5 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    until_queued(&queue, 0).await;
    tick.unbounded_send(()).unwrap();
    started.await.unwrap();
    until_queued(&queue, 4).await;
    server.create(&cm("live", "1")).unwrap();
    until_queued(&queue, 5).await;
    release.notify_one();
    let outcomes = collected.await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let order = calls.get();
    assert_eq!(order.len(), 11);
    assert_eq!(
        order[6], "live",
        "a tick's keys are low (C10): the change goes first: {order:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn c11_resync_reconciles_every_cached_object_each_period() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b", "c"] {
        server.create(&cm(name, "1")).unwrap();
    }
    let calls = Calls::default();
    // Shorter than the informer's resync check period (30 s), so the
    // controller's subscription, made before the informer runs, lowers it
    // to 20 s (L3): a round every 20 s.
    let period = Duration::from_secs(20);
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .resync(period)
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == 3).await;
    let synced = tokio::time::Instant::now();
    for round in 1..=2u32 {
        collect_until(&mut outcomes, |seen| seen.len() == 3).await;
        let elapsed = synced.elapsed();
        let due = period * round;
        assert!(
            elapsed + Duration::from_secs(1) >= due && elapsed <= due + Duration::from_secs(1),
            "round {round} came after {elapsed:?}"
        );
    }
    let mut names = calls.get();
    names.sort();
    assert_eq!(names, ["a", "a", "a", "b", "b", "b", "c", "c", "c"]);
}

/// C14: triggers of one key within the debounce move its turn later; the
/// key is reconciled once, a full period after its last trigger.
#[tokio::test(start_paused = true)]
async fn c14_a_key_is_reconciled_once_its_triggers_are_quiet_for_the_debounce() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let calls = Calls::default();
    let (poke, pokes) = futures::channel::mpsc::unbounded();
    let listed = tokio::time::Instant::now();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .reconcile_on(pokes)
        .with_config(kube_informer::controller::Config {
            debounce: Duration::from_secs(10),
            ..Default::default()
        })
        .run(
            calls.reconciler::<ConfigMap>(),
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    // The initial list's key, too, waits out the period.
    collect_until(&mut outcomes, |seen| seen.len() == 1).await;
    assert!(listed.elapsed() >= Duration::from_secs(10));
    for _ in 0..3 {
        poke.unbounded_send(key("a")).unwrap();
        tokio::time::sleep(Duration::from_secs(6)).await;
    }
    let last = tokio::time::Instant::now() - Duration::from_secs(6);
    let once = collect_until(&mut outcomes, |seen| seen.len() == 1).await;
    assert!(once[0].is_ok(), "{once:?}");
    let after = tokio::time::Instant::now() - last;
    assert!(
        after >= Duration::from_secs(10) && after < Duration::from_secs(11),
        "{after:?} after the last trigger"
    );
    assert_eq!(calls.get(), ["a", "a"]);
    // Nothing more comes: three triggers, one reconcile.
    assert!(
        tokio::time::timeout(Duration::from_secs(60), outcomes.next())
            .await
            .is_err()
    );
}

/// C14: a requeue the reconcile asks for is not debounced.
#[tokio::test(start_paused = true)]
async fn c14_a_requeue_is_not_delayed_by_the_debounce() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "1")).unwrap();
    let times = Arc::new(Mutex::new(Vec::new()));
    let seen = times.clone();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
        .with_config(kube_informer::controller::Config {
            debounce: Duration::from_secs(10),
            ..Default::default()
        })
        .run(
            move |_cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                seen.lock().unwrap().push(tokio::time::Instant::now());
                async { Ok::<_, std::convert::Infallible>(Action::requeue(Duration::from_secs(1))) }
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == 3).await;
    let times = times.lock().unwrap().clone();
    assert_eq!(times[1] - times[0], Duration::from_secs(1));
    assert_eq!(times[2] - times[1], Duration::from_secs(1));
}

/// C6: with no bound, the default, every queued key runs at once, still
/// never two reconciles of one key.
#[tokio::test(start_paused = true)]
async fn c6_by_default_reconciles_are_not_bounded() {
    let server = FakeApiServer::start().await;
    for i in 0..8 {
        server.create(&cm(&format!("cm-{i}"), "1")).unwrap();
    }
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (running2, most2) = (running.clone(), most.clone());
    let controller = Controller::new(Api::<ConfigMap>::all(server.client()));
    assert_eq!(controller.metrics().max_concurrent_reconciles, 0);
    let outcomes = controller.run(
        move |_cm: Arc<ConfigMap>, _ctx: Arc<()>| {
            let (running, most) = (running2.clone(), most2.clone());
            async move {
                use std::sync::atomic::Ordering::SeqCst;
                let now = running.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                tokio::time::sleep(Duration::from_secs(1)).await;
                running.fetch_sub(1, SeqCst);
                Ok::<_, std::convert::Infallible>(Action::await_change())
            }
        },
        |_, _, _| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    collect_until(&mut outcomes, |seen| seen.len() == 8).await;
    assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 8);
}
