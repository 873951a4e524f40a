//! An informer with the compact cache: notifications, relists and resyncs
//! as in the default mode (CM1, CM5), and the factory comparing the option
//! (CM7).

use crate::informer_common;

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube_informer::{
    Informer, InformerFactory, Notification, SubscribeOptions, informer::Error, source::Event,
    store::CompactCache,
};
use kube_informer_testing::FakeApiServer;

/// CM1, CM5: subscribers get Added, Updated with the replaced version, a
/// relist's deletions and Deleted as in the default mode; the store's
/// objects equal what the notifications carried.
#[tokio::test]
async fn cm5_notifications_carry_the_new_object_and_the_replaced_version() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .compact_cache(CompactCache::default().hot_objects(1))
        .build();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.clone().run());

    relist(&source, &[cm("a", "1"), cm("b", "1"), cm("c", "1")], "1");
    informer.wait_until_synced().await.unwrap();
    // `a` hot (read twice), `b` cold: both updates carry their old version.
    for _ in 0..2 {
        informer.store().get_by(Some("default"), "a");
    }
    send(&source, Event::Modified(cm("a", "2")));
    send(&source, Event::Modified(cm("b", "2")));
    send(&source, Event::Deleted(cm("a", "2")));
    // A relist without `c` deletes it with its last known state.
    relist(&source, &[cm("b", "2")], "5");
    drop(source);
    run.await.unwrap().unwrap();

    let seen: Vec<String> = subscription.by_ref().map(|n| describe(&n)).collect().await;
    let mut expected: Vec<String> = Vec::new();
    for n in [
        Notification::Added {
            object: Arc::new(cm("a", "1")),
            in_initial_list: true,
        },
        Notification::Added {
            object: Arc::new(cm("b", "1")),
            in_initial_list: true,
        },
        Notification::Added {
            object: Arc::new(cm("c", "1")),
            in_initial_list: true,
        },
        Notification::Updated {
            old: Arc::new(cm("a", "1")),
            new: Arc::new(cm("a", "2")),
            resync: false,
        },
        Notification::Updated {
            old: Arc::new(cm("b", "1")),
            new: Arc::new(cm("b", "2")),
            resync: false,
        },
        Notification::Deleted {
            object: Arc::new(cm("a", "2")),
            final_state_unknown: false,
        },
    ] {
        expected.push(describe(&n));
    }
    // The FIFO pops by key, so `a`'s deletion may come before `b`'s update.
    let mut first: Vec<String> = seen[..6].to_vec();
    first.sort();
    expected.sort();
    assert_eq!(first, expected);
    let rest: Vec<&String> = seen[6..].iter().collect();
    assert!(
        rest.iter()
            .any(|d| d.contains("default/c") || d.contains("c@1")),
        "the relist deletes c: {seen:?}"
    );
    let store = informer.store();
    assert_eq!(store_state(&store).len(), 1);
    assert_eq!(*store.get_by(Some("default"), "b").unwrap(), cm("b", "2"));
    let stats = store.compact_stats().unwrap();
    assert_eq!((stats.encoded_objects, stats.decode_failures), (1, 0));
}

/// CM8: without a subscriber, an update decodes none of the versions it
/// replaces; with one, each is decoded for its `Updated`. The store ends
/// the same either way.
#[tokio::test]
async fn cm8_without_subscribers_no_replaced_version_is_decoded() {
    for subscribed in [false, true] {
        let (source, events) = hand_source();
        let informer = Informer::builder_from_stream(events)
            .compact_cache(CompactCache::default().hot_objects(0))
            .build();
        let subscription =
            subscribed.then(|| informer.subscribe(SubscribeOptions::default()).unwrap());
        let run = tokio::spawn(informer.clone().run());
        relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
        send(&source, Event::Modified(cm("a", "2")));
        send(&source, Event::Modified(cm("b", "2")));
        send(&source, Event::Modified(cm("a", "3")));
        drop(source);
        run.await.unwrap().unwrap();

        let store = informer.store();
        // Before any read: reads decode too.
        let stats = store.compact_stats().unwrap();
        assert_eq!(
            (stats.decodes, stats.encoded_objects),
            (if subscribed { 3 } else { 0 }, 2),
            "subscribed: {subscribed}"
        );
        assert_eq!(*store.get_by(Some("default"), "a").unwrap(), cm("a", "3"));
        assert_eq!(*store.get_by(Some("default"), "b").unwrap(), cm("b", "2"));
        if let Some(subscription) = subscription {
            let updates: Vec<String> = subscription
                .map(|n| describe(&n))
                .filter(|d| std::future::ready(d.starts_with("updated")))
                .collect()
                .await;
            assert_eq!(updates.len(), 3, "{updates:?}");
        }
    }
}

/// CM1: resyncs re-deliver every object, decoded, as `Updated` with
/// `resync` set, the same in both modes.
#[tokio::test(start_paused = true)]
async fn cm1_resyncs_deliver_the_stored_objects() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .compact_cache(CompactCache::default())
        .resync_check_period(Duration::from_secs(1))
        .build();
    let mut subscription = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))
        .unwrap();
    tokio::spawn(informer.clone().run());
    relist(&source, &[cm("a", "1"), cm("b", "7")], "7");
    informer.wait_until_synced().await.unwrap();
    let mut resynced = Vec::new();
    while resynced.len() < 2 {
        match subscription.next().await.unwrap() {
            Notification::Updated {
                old,
                new,
                resync: true,
            } => {
                assert_eq!(old, new);
                resynced.push((name(&new), rv(&new)));
            }
            Notification::Added { .. } => {}
            other => panic!("unexpected {}", describe(&other)),
        }
    }
    resynced.sort();
    assert_eq!(
        resynced,
        [("a".into(), "1".into()), ("b".into(), "7".into())]
    );
    drop(source);
}

/// CM7: the compact cache, with its bound, is an option a factory
/// compares: a request that differs is refused.
#[tokio::test]
async fn cm7_the_factory_compares_the_compact_cache() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::default_namespaced(server.client());
    let compact = factory
        .build(api(), |b| b.compact_cache(CompactCache::default()))
        .unwrap();
    assert!(compact.store().compact_stats().is_some());
    assert!(
        factory
            .build(api(), |b| b.compact_cache(CompactCache::default()))
            .is_ok()
    );
    let error = factory
        .build(api(), |b| {
            b.compact_cache(CompactCache::default().hot_objects(1))
        })
        .unwrap_err();
    assert!(matches!(error, Error::OptionsDiffer { .. }), "{error:?}");
    assert!(format!("{error}").contains("compact_cache"), "{error}");
    assert!(factory.build(api(), |b| b).is_err());
}
