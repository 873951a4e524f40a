//! The whole pipeline against the fake API server, through
//! `Informer::builder(api)` and the `InformerFactory`.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::Api;
use kube_informer::{Informer, InformerFactory, Notification, dispatch::SubscribeOptions, source};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};

async fn next_description(subscription: &mut kube_informer::Subscription<ConfigMap>) -> String {
    let n = tokio::time::timeout(Duration::from_secs(60), subscription.next())
        .await
        .expect("no notification within 60 s")
        .expect("subscription ended");
    describe(&n)
}

fn rv_of(object: &ConfigMap) -> String {
    rv(object)
}

#[tokio::test]
async fn builder_api_lists_watches_and_notifies() {
    let server = FakeApiServer::start().await;
    let a = server.create(&cm("a", "")).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api).cache_from_env().build();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());

    assert_eq!(
        next_description(&mut subscription).await,
        format!("added a@{} initial=true", rv_of(&a))
    );
    informer.wait_until_synced().await.unwrap();
    assert!(subscription.sync_status().has_synced());

    let mut changed = a.clone();
    changed.data = Some([("k".to_string(), "v".to_string())].into());
    let changed = server.update(&changed).unwrap();
    assert_eq!(
        next_description(&mut subscription).await,
        format!("updated a@{}->{} resync=false", rv_of(&a), rv_of(&changed))
    );
    let b = server.create(&cm("b", "")).unwrap();
    assert_eq!(
        next_description(&mut subscription).await,
        format!("added b@{} initial=false", rv_of(&b))
    );
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    let deleted = next_description(&mut subscription).await;
    assert!(deleted.starts_with("deleted a@"), "{deleted}");
    assert!(deleted.ends_with("unknown=false"), "{deleted}");

    let store = informer.store();
    assert_eq!(store.len(), 1);
    assert!(store.get(&"default/b".parse().unwrap()).is_some());
    informer.stop();
    run.await.unwrap().unwrap();
    assert!(subscription.next().await.is_none());
}

// R9 through the real source: a failing list reaches errors(), the source
// retries and the informer syncs.
#[tokio::test(start_paused = true)]
async fn r9_api_errors_reach_the_user_and_the_informer_recovers() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "")).unwrap();
    server.fail_requests(
        RequestMatch::List,
        ApiStatus::new(500, "InternalError", "etcd is down"),
        2,
    );
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api).cache_from_env().build();
    let mut errors = informer.errors();
    let run = tokio::spawn(informer.run());
    let first = errors.next().await.unwrap();
    assert!(first.is_runtime(), "{first}");
    informer.wait_until_synced().await.unwrap();
    assert!(informer.metrics().errors >= 2);
    assert_eq!(informer.store().len(), 1);
    informer.stop();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn factory_shares_one_informer_per_key_and_syncs_them() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "")).unwrap();
    let mut node = Node::default();
    node.metadata.name = Some("node-1".into());
    server.create(&node).unwrap();

    let factory = InformerFactory::new(server.client());
    let in_default = || Api::<ConfigMap>::namespaced(server.client(), "default");
    let first = factory.build(in_default(), |b| b).unwrap();
    let second = factory.build(in_default(), |b| b).unwrap();
    let selected = factory
        .build(in_default(), |b| {
            b.source_config(source::Config::default().label_selector("app=web"))
        })
        .unwrap();
    let everywhere = factory
        .build(Api::<ConfigMap>::all(server.client()), |b| b)
        .unwrap();
    let nodes = factory
        .build(Api::<Node>::all(server.client()), |b| b)
        .unwrap();
    assert_eq!(factory.len(), 4);

    // Same informer: a subscription on one sees what the other caches.
    let mut subscription = second.subscribe(SubscribeOptions::default()).unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();
    assert_eq!(first.store().len(), 1);
    assert_eq!(selected.store().len(), 0);
    assert_eq!(everywhere.store().len(), 1);
    assert_eq!(nodes.store().len(), 1);
    assert!(matches!(
        subscription.next().await,
        Some(Notification::Added {
            in_initial_list: true,
            ..
        })
    ));

    factory.shutdown().await;
    assert!(first.is_stopped());
    assert!(subscription.next().await.is_none());
    let late = factory
        .build(
            Api::<ConfigMap>::namespaced(server.client(), "other"),
            |b| b,
        )
        .unwrap();
    assert!(late.is_stopped());
}

#[tokio::test]
async fn metadata_informer_caches_metadata_only() {
    let server = FakeApiServer::start().await;
    let mut a = cm("a", "");
    a.data = Some([("big".to_string(), "x".repeat(1000))].into());
    server.create(&a).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::metadata_builder(api).build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let cached = informer.store().list();
    assert_eq!(cached.len(), 1);
    assert_eq!(cached[0].metadata.name.as_deref(), Some("a"));
    let request = server.requests().into_iter().next().unwrap();
    assert!(request.path.ends_with("/configmaps"), "{}", request.path);
    informer.stop();
    run.await.unwrap().unwrap();
}
