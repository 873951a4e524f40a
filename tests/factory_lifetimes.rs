//! How long the factory's informers live (FA2–FA4 in `src/factory/mod.rs`):
//! `release` lets one go, dropping the factory lets go of all of them, and
//! neither stops an informer a user still holds (L8).

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, api::ObjectMeta};
use kube_informer::InformerFactory;
use kube_informer_testing::FakeApiServer;

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

async fn eventually(what: &str, condition: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[tokio::test(start_paused = true)]
async fn fa2_release_stops_an_informer_nothing_else_holds() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::all(factory.client());
    let informer = factory.build(api(), |b| b).unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();
    eventually("a watch", || server.open_watches() == 1).await;

    assert!(factory.release(informer), "nothing else held it");
    assert_eq!(factory.len(), 0);
    eventually("the watch to close", || server.open_watches() == 0).await;
    // Nothing left to wait for.
    factory.wait_until_synced().await.unwrap();

    let next = factory.build(api(), |b| b).unwrap();
    assert!(!next.has_synced() && !next.is_stopped(), "a new informer");
    assert_eq!(factory.len(), 1);
    factory.start();
    next.wait_until_synced().await.unwrap();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn fa2_a_released_informer_runs_while_held_and_is_handed_out_again() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::all(factory.client());
    let informer = factory.build(api(), |b| b).unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();
    let store = informer.store();
    assert!(!factory.release(informer), "the store holds it");
    assert_eq!(factory.len(), 0);

    server.create(&cm("a")).unwrap();
    eventually("the store to fill", || store.len() == 1).await;

    // The same running informer, not a second watch.
    let again = factory.build(api(), |b| b).unwrap();
    assert!(again.has_synced());
    assert_eq!(again.store().len(), 1);
    assert_eq!(factory.len(), 1);
    assert_eq!(server.open_watches(), 1);

    assert!(!factory.release(again), "the store still holds it");
    drop(store);
    eventually("the watch to close", || server.open_watches() == 0).await;
    // Released twice or not the factory's: only dropped.
    let other = InformerFactory::new(server.client())
        .build(api(), |b| b)
        .unwrap();
    assert!(factory.release(other));
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn fa3_dropping_the_factory_stops_only_what_nobody_holds() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let configmaps = factory
        .build(Api::<ConfigMap>::all(server.client()), |b| b)
        .unwrap();
    let secrets = factory
        .build(Api::<Secret>::all(server.client()), |b| b)
        .unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();
    eventually("two watches", || server.open_watches() == 2).await;
    drop(secrets);

    drop(factory);
    eventually("the unheld informer's watch to close", || {
        server.open_watches() == 1
    })
    .await;
    assert!(!configmaps.is_stopped(), "L8: its user still holds it");
    server.create(&cm("a")).unwrap();
    eventually("the held informer to go on", || {
        configmaps.store().len() == 1
    })
    .await;
    configmaps.stop();
    eventually("its watch to close", || server.open_watches() == 0).await;
}

#[tokio::test(start_paused = true)]
async fn fa4_shutdown_stops_a_released_informer_that_still_runs() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let informer = factory
        .build(Api::<ConfigMap>::all(server.client()), |b| b)
        .unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();
    let mut subscription = informer
        .subscribe(kube_informer::dispatch::SubscribeOptions::default())
        .unwrap();
    assert!(!factory.release(informer));
    factory.shutdown().await;
    // The subscription ends: its informer stopped.
    tokio::time::timeout(Duration::from_secs(60), async {
        use futures::StreamExt;
        while subscription.next().await.is_some() {}
    })
    .await
    .expect("the subscription ends");
    assert_eq!(server.open_watches(), 0);
}
