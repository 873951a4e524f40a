//! The informer's delta → store → notification rules, I1–I5.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, dispatch::SubscribeOptions, source::Event};

fn describe_all(ns: &[kube_informer::Notification<ConfigMap>]) -> Vec<String> {
    ns.iter().map(describe).collect()
}

/// Runs an informer over a finite list of events with one plain subscriber
/// and returns what it saw and the final store.
async fn observe(
    events: Vec<Event<ConfigMap>>,
) -> (Vec<String>, std::collections::BTreeMap<String, String>) {
    let informer = Informer::builder_from_stream(futures::stream::iter(
        events.into_iter().map(Ok::<_, std::io::Error>),
    ))
    .cache_from_env()
    .build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();
    let seen = collect_all(subscription).await;
    (describe_all(&seen), store_state(&informer.store()))
}

// I1
#[tokio::test]
async fn i1_absent_key_is_added_present_key_is_updated() {
    let (seen, store) = observe(vec![
        Event::ListStart,
        Event::Listed(cm("a", "1")),
        Event::ListDone {
            resource_version: "1".into(),
        },
        Event::Modified(cm("a", "2")),
        // An ADDED for a key the cache holds is an update of it.
        Event::Added(cm("a", "3")),
        Event::Added(cm("b", "4")),
        // A MODIFIED for a key the cache lacks is an add.
        Event::Modified(cm("c", "5")),
    ])
    .await;
    assert_eq!(
        seen,
        [
            "added a@1 initial=true",
            "updated a@1->2 resync=false",
            "updated a@2->3 resync=false",
            "added b@4 initial=false",
            "added c@5 initial=false",
        ]
    );
    assert_eq!(store.get("a").map(String::as_str), Some("3"));
    assert_eq!(store.len(), 3);
}

// I2
#[tokio::test]
async fn i2_deleted_carries_the_queued_object_and_tombstones_are_final_state_unknown() {
    let (seen, store) = observe(vec![
        Event::ListStart,
        Event::Listed(cm("a", "1")),
        Event::Listed(cm("b", "1")),
        Event::ListDone {
            resource_version: "1".into(),
        },
        // The watched delete carries the object's final state.
        Event::Deleted(cm("a", "2")),
        // b vanishes between two lists: its tombstone carries the last
        // state the cache knew.
        Event::ListStart,
        Event::ListDone {
            resource_version: "3".into(),
        },
    ])
    .await;
    // Each key's deltas come as one batch, oldest first (I5).
    assert_eq!(
        seen,
        [
            "added a@1 initial=true",
            "deleted a@2 unknown=false",
            "added b@1 initial=true",
            "deleted b@1 unknown=true",
        ]
    );
    assert!(store.is_empty());
}

// I3
#[tokio::test(start_paused = true)]
async fn i3_same_resource_version_is_a_resync_and_reaches_only_due_subscribers() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::from_secs(1))
        .build();
    let mut due = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))
        .unwrap();
    let mut never = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());

    relist(&source, &[cm("a", "1")], "1");
    assert_eq!(
        describe(&due.next().await.unwrap()),
        "added a@1 initial=true"
    );
    assert_eq!(
        describe(&never.next().await.unwrap()),
        "added a@1 initial=true"
    );

    // Before the first round every subscriber is due (client-go's new
    // listeners are all "syncing"), so an unchanged relist reaches both; a
    // watched MODIFIED with a new version is real news for all.
    relist(&source, &[cm("a", "1")], "1");
    send(&source, Event::Modified(cm("a", "2")));
    for subscription in [&mut due, &mut never] {
        assert_eq!(
            describe(&subscription.next().await.unwrap()),
            "updated a@1->1 resync=true"
        );
        assert_eq!(
            describe(&subscription.next().await.unwrap()),
            "updated a@1->2 resync=false"
        );
    }

    // A resync round: only the subscriber with a period gets it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        describe(&due.next().await.unwrap()),
        "updated a@2->2 resync=true"
    );
    assert!(ready(&mut never).is_empty());

    // Same version whatever the delta type: a MODIFIED that changed nothing
    // also counts as a resync (the due set of the last round still holds).
    send(&source, Event::Modified(cm("a", "2")));
    send(&source, Event::Modified(cm("a", "3")));
    assert_eq!(
        describe(&due.next().await.unwrap()),
        "updated a@2->2 resync=true"
    );
    assert_eq!(
        describe(&due.next().await.unwrap()),
        "updated a@2->3 resync=false"
    );
    assert_eq!(
        describe(&never.next().await.unwrap()),
        "updated a@2->3 resync=false"
    );

    drop(source);
    run.await.unwrap().unwrap();
}

// I4
#[tokio::test]
async fn i4_in_initial_list_only_before_the_fifo_synced() {
    let (seen, _) = observe(vec![
        Event::ListStart,
        Event::Listed(cm("a", "1")),
        Event::Listed(cm("b", "1")),
        Event::ListDone {
            resource_version: "1".into(),
        },
        Event::Added(cm("c", "2")),
        // New keys of a later relist are not part of the initial list.
        Event::ListStart,
        Event::Listed(cm("a", "1")),
        Event::Listed(cm("b", "1")),
        Event::Listed(cm("c", "2")),
        Event::Listed(cm("d", "3")),
        Event::ListDone {
            resource_version: "3".into(),
        },
    ])
    .await;
    let added: Vec<_> = seen
        .into_iter()
        .filter(|s| s.starts_with("added"))
        .collect();
    assert_eq!(
        added,
        [
            "added a@1 initial=true",
            "added b@1 initial=true",
            "added c@2 initial=false",
            "added d@3 initial=false",
        ]
    );
}

// I4: an empty initial list syncs the informer with nothing to pop.
#[tokio::test]
async fn i4_empty_initial_list_syncs() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let run = tokio::spawn(informer.run());
    relist(&source, &[], "1");
    informer.wait_until_synced().await.unwrap();
    assert!(informer.store().is_empty());
    drop(source);
    run.await.unwrap().unwrap();
}

// I5
#[tokio::test]
async fn i5_one_keys_deltas_apply_oldest_first_without_interleaving() {
    let (source, events) = hand_source();
    // Queue everything before the informer runs, so keys hold several deltas
    // when popped.
    for event in [
        Event::ListStart,
        Event::ListDone {
            resource_version: "0".into(),
        },
        Event::Added(cm("a", "1")),
        Event::Added(cm("b", "1")),
        Event::Modified(cm("a", "2")),
        Event::Modified(cm("b", "2")),
        Event::Modified(cm("a", "3")),
        Event::Deleted(cm("b", "4")),
    ] {
        send(&source, event);
    }
    drop(source);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();
    assert_eq!(
        describe_all(&collect_all(subscription).await),
        [
            "added a@1 initial=false",
            "updated a@1->2 resync=false",
            "updated a@2->3 resync=false",
            "added b@1 initial=false",
            "updated b@1->2 resync=false",
            "deleted b@4 unknown=false",
        ]
    );
    assert_eq!(
        store_state(&informer.store())
            .into_iter()
            .collect::<Vec<_>>(),
        [("a".to_string(), "3".to_string())]
    );
}

// L3: as client-go's reflector restarts its resync timer after every list,
// the first round after a relist comes one check period after the relist,
// not one period after the informer started.
#[tokio::test(start_paused = true)]
async fn l3_resync_check_period_starts_over_after_a_relist() {
    let start = tokio::time::Instant::now();
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::from_secs(10))
        .build();
    let mut sub = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(10)))
        .unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1")], "1");
    assert_eq!(
        describe(&sub.next().await.unwrap()),
        "added a@1 initial=true"
    );

    tokio::time::advance(Duration::from_secs(6)).await;
    relist(&source, &[cm("a", "2")], "2");
    assert_eq!(
        describe(&sub.next().await.unwrap()),
        "updated a@1->2 resync=false"
    );
    // The paused clock jumps to the next timer: the round is 10 s after
    // the relist (t = 16 s), not 10 s after the start.
    assert_eq!(
        describe(&sub.next().await.unwrap()),
        "updated a@2->2 resync=true"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(16));

    drop(source);
    run.await.unwrap().unwrap();
}
