//! Lag::Coalesce merge rules, one by one (L4), seen by a stalled subscriber
//! that is drained afterwards.

use crate::store_common;

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Notification,
    dispatch::{Lag, SubscribeOptions},
    unstable::dispatch::Distributor,
};
use store_common::*;
use tokio::{sync::watch, time::Instant};

/// Sends `ns` to one stalled Coalesce subscriber, due for resync so resync
/// updates reach it, and returns what it yields.
fn coalesced(ns: Vec<Notification<ConfigMap>>) -> Vec<String> {
    let (_tx, rx) = watch::channel(true);
    let mut d = Distributor::new(Duration::from_secs(1), rx);
    let options = SubscribeOptions::default()
        .lag(Lag::Coalesce)
        .resync(Duration::from_secs(1));
    let mut sub = d.subscribe(options, []);
    assert!(d.should_resync(Instant::now() + Duration::from_secs(1)));
    for n in ns {
        let k = key_of(n.object());
        d.distribute(&k, n).now_or_never().expect("never waits");
    }
    drain(&mut sub)
}

#[test]
fn l4_coalesce_added_then_updated_is_added_newest() {
    assert_eq!(
        coalesced(vec![
            added(cm("ns", "a", "1"), true),
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
            updated(cm("ns", "a", "2"), cm("ns", "a", "3")),
        ]),
        ["A ns/a@3*"]
    );
}

#[test]
fn l4_coalesce_updates_chain_to_first_old_and_last_new() {
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
            updated(cm("ns", "a", "2"), cm("ns", "a", "3")),
        ]),
        ["U ns/a@1->3"]
    );
}

#[test]
fn l4_coalesce_updated_then_deleted_is_deleted() {
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
            deleted(cm("ns", "a", "2")),
        ]),
        ["D ns/a@2"]
    );
}

#[test]
fn l4_coalesce_added_then_deleted_cancels_out() {
    assert!(
        coalesced(vec![
            added(cm("ns", "a", "1"), false),
            deleted(cm("ns", "a", "1"))
        ])
        .is_empty()
    );
}

#[test]
fn l4_coalesce_deleted_then_added_stays_two_entries() {
    assert_eq!(
        coalesced(vec![
            deleted(cm("ns", "a", "1")),
            added(cm("ns", "a", "5"), false),
            updated(cm("ns", "a", "5"), cm("ns", "a", "6")),
        ]),
        ["D ns/a@1", "A ns/a@6"]
    );
    // ...and a delete after the recreate folds back to one delete.
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "0"), cm("ns", "a", "1")),
            deleted(cm("ns", "a", "1")),
            added(cm("ns", "a", "5"), false),
            deleted(cm("ns", "a", "5")),
        ]),
        ["D ns/a@1"]
    );
}

#[test]
fn l4_coalesce_resync_merged_with_a_real_update_is_real() {
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "1"), cm("ns", "a", "1")),
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
        ]),
        ["U ns/a@1->2"]
    );
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
            updated(cm("ns", "a", "2"), cm("ns", "a", "2")),
        ]),
        ["U ns/a@1->2"]
    );
    // Two resyncs stay a resync.
    assert_eq!(
        coalesced(vec![
            updated(cm("ns", "a", "1"), cm("ns", "a", "1")),
            updated(cm("ns", "a", "1"), cm("ns", "a", "1")),
        ]),
        ["U ns/a@1->1*"]
    );
}

#[test]
fn l4_coalesce_a_key_keeps_the_place_it_first_got() {
    assert_eq!(
        coalesced(vec![
            added(cm("ns", "a", "1"), false),
            added(cm("ns", "b", "1"), false),
            updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
            added(cm("ns", "c", "1"), false),
            updated(cm("ns", "b", "1"), cm("ns", "b", "2")),
        ]),
        ["A ns/a@2", "A ns/b@2", "A ns/c@1"]
    );
}

#[test]
fn l4_coalesce_notifications_after_a_partial_drain_merge_with_what_is_left() {
    let (_tx, rx) = watch::channel(true);
    let mut d = Distributor::new(Duration::ZERO, rx);
    let mut sub = d.subscribe(SubscribeOptions::default().lag(Lag::Coalesce), []);
    let a = key("ns/a");
    for n in [
        deleted(cm("ns", "a", "1")),
        added(cm("ns", "a", "2"), false),
    ] {
        d.distribute(&a, n).now_or_never().unwrap();
    }
    assert_eq!(
        show(&sub.next().now_or_never().unwrap().unwrap()),
        "D ns/a@1"
    );
    d.distribute(&a, updated(cm("ns", "a", "2"), cm("ns", "a", "3")))
        .now_or_never()
        .unwrap();
    assert_eq!(drain(&mut sub), ["A ns/a@3"]);
}

#[test]
fn l2_coalesce_a_cancelled_initial_add_no_longer_blocks_sync() {
    let (_tx, rx) = watch::channel(true);
    let mut d = Distributor::new(Duration::ZERO, rx);
    let sub = d.subscribe(
        SubscribeOptions::default().lag(Lag::Coalesce),
        [(key("ns/a"), cm("ns", "a", "1"))],
    );
    assert!(!sub.sync_status().has_synced());
    d.distribute(&key("ns/a"), deleted(cm("ns", "a", "1")))
        .now_or_never()
        .unwrap();
    assert!(sub.sync_status().has_synced());
    assert_eq!(sub.stats().pending, 0);
}
