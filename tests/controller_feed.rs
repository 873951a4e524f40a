//! `ControllerFeed`: kube-runtime's `Controller` (and its stable `applier`)
//! driven from a subscription, against the fake API server.
#![cfg(feature = "kube-runtime")]

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::{
    collections::BTreeMap,
    convert::Infallible,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use informer_common::cm;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use kube_informer::{Informer, SubscribeOptions, controller_feed::ControllerFeed};
use kube_informer_testing::FakeApiServer;
use kube_runtime::{
    controller::{Action, Config, Controller},
    reflector::{ObjectRef, Store},
};

/// What the reconciler saw: per name, the resourceVersions it reconciled,
/// and whether each object was in the controller's store at the time.
#[derive(Default)]
struct Seen {
    versions: BTreeMap<String, Vec<String>>,
    missing_from_store: Vec<String>,
}

struct Ctx {
    store: Store<ConfigMap>,
    seen: Mutex<Seen>,
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let in_store = ctx.store.get(&ObjectRef::from_obj(&*cm)).is_some();
    let mut seen = ctx.seen.lock().unwrap();
    if !in_store {
        seen.missing_from_store.push(cm.name_any());
    }
    seen.versions
        .entry(cm.name_any())
        .or_default()
        .push(cm.resource_version().unwrap_or_default());
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<Ctx>) -> Action {
    Action::await_change()
}

/// Polls `condition` on the reconciler's record until it holds.
async fn until(ctx: &Ctx, what: &str, condition: impl Fn(&Seen) -> bool) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !condition(&ctx.seen.lock().unwrap()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for: {what}"));
}

/// A fake server holding ConfigMaps `names`, a running informer on it, and
/// a feed from one of its subscriptions with the context a reconciler
/// records into.
async fn started(
    names: &[&str],
) -> (
    FakeApiServer,
    Store<ConfigMap>,
    ControllerFeed<ConfigMap>,
    Arc<Ctx>,
) {
    let server = FakeApiServer::start().await;
    for name in names {
        server.create(&cm(name, "")).unwrap();
    }
    let informer = Informer::builder(Api::<ConfigMap>::default_namespaced(server.client()))
        .cache_from_env()
        .build();
    let (store, triggers) =
        ControllerFeed::new(informer.subscribe(SubscribeOptions::default()).unwrap());
    tokio::spawn(informer.run());
    let ctx = Arc::new(Ctx {
        store: store.clone(),
        seen: Mutex::default(),
    });
    (server, store, triggers, ctx)
}

#[tokio::test]
async fn controller_reconciles_the_initial_list_and_live_changes_from_its_own_store() {
    let (server, store, triggers, ctx) = started(&["a", "b", "c"]).await;
    let controller = Controller::for_shared_stream(triggers, store.clone())
        .run(reconcile, error_policy, Arc::clone(&ctx))
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    until(&ctx, "the initial list reconciled", |s| {
        s.versions.len() == 3
    })
    .await;
    assert_eq!(store.len(), 3);

    let d = server.create(&cm("d", "")).unwrap();
    let mut a = server
        .objects::<ConfigMap>()
        .into_iter()
        .find(|o| o.name_any() == "a")
        .unwrap();
    a.data = Some([("k".to_string(), "v".to_string())].into());
    let a = server.update(&a).unwrap();
    until(&ctx, "d added and a updated", |s| {
        s.versions
            .get("d")
            .is_some_and(|v| v.contains(&d.resource_version().unwrap()))
            && s.versions
                .get("a")
                .is_some_and(|v| v.contains(&a.resource_version().unwrap()))
    })
    .await;
    assert_eq!(
        store
            .get(&ObjectRef::new("a").within("default"))
            .unwrap()
            .data,
        a.data,
        "the controller's store holds the update it was triggered by"
    );

    server.delete::<ConfigMap>(Some("default"), "b").unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while store.get(&ObjectRef::new("b").within("default")).is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the deletion reaches the controller's store");
    assert_eq!(store.len(), 3);
    assert!(
        ctx.seen.lock().unwrap().missing_from_store.is_empty(),
        "every reconciled object was in the controller's store"
    );
    controller.abort();
}

#[tokio::test]
async fn the_store_turns_ready_when_an_empty_initial_list_syncs() {
    let server = FakeApiServer::start().await;
    let informer = Informer::builder(Api::<ConfigMap>::default_namespaced(server.client()))
        .cache_from_env()
        .build();
    let (store, triggers) =
        ControllerFeed::new(informer.subscribe(SubscribeOptions::default()).unwrap());
    assert!(store.is_empty());
    tokio::spawn(informer.run());
    tokio::spawn(triggers.for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(20), store.wait_until_ready())
        .await
        .expect("ready although the initial list yielded nothing")
        .unwrap();
}

// On the paused clock the wait below ends only once every task is idle, so
// the informer has had every chance to (wrongly) turn the store ready, however
// slowly the machine schedules it.
#[tokio::test(start_paused = true)]
async fn the_store_is_not_ready_before_the_subscription_synced() {
    // An informer whose source never lists: nothing syncs.
    let (_source, events) = informer_common::hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let (store, triggers) =
        ControllerFeed::new(informer.subscribe(SubscribeOptions::default()).unwrap());
    tokio::spawn(informer.run());
    tokio::spawn(triggers.for_each(|_| async {}));
    assert!(
        tokio::time::timeout(Duration::from_secs(60), store.wait_until_ready())
            .await
            .is_err(),
        "a controller must not reconcile on a store that has not synced"
    );
}

#[tokio::test]
async fn stable_applier_runs_on_object_refs_from_the_feed() {
    let (_server, store, triggers, ctx) = started(&["a", "b"]).await;
    let requests = triggers.map(|object| Ok::<_, Infallible>(ObjectRef::from_obj(&*object)));
    let applier = kube_runtime::applier(
        |cm, ctx| Box::pin(reconcile(cm, ctx)),
        error_policy,
        Arc::clone(&ctx),
        store,
        requests,
        Config::default(),
    )
    .for_each(|_| async {});
    let applier = tokio::spawn(applier);
    until(&ctx, "both objects reconciled", |s| s.versions.len() == 2).await;
    assert!(ctx.seen.lock().unwrap().missing_from_store.is_empty());
    applier.abort();
}
