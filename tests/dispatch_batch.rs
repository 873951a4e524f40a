//! Batched wakes: a subscriber waiting for its next notification is woken
//! once per batch (`distribute_batched` … `end_batch`), never left asleep
//! with notifications queued once the batch ends, and never left asleep by
//! a distributor waiting for room in its queue.

use crate::store_common;

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::Context,
    time::Duration,
};

use futures::{
    Stream, StreamExt,
    task::{ArcWake, waker},
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Notification,
    dispatch::{Lag, SubscribeOptions, Subscription},
    unstable::dispatch::Distributor,
};
use store_common::*;
use tokio::sync::watch;

/// A waker that counts how often it was woken.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl ArcWake for Wakes {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Wakes {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Polls `sub` once with a counting waker: it must be waiting.
fn park(sub: &mut Subscription<ConfigMap>) -> Arc<Wakes> {
    let wakes = Arc::new(Wakes::default());
    let waker = waker(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(sub).poll_next(&mut cx).is_pending());
    wakes
}

fn distributor() -> (watch::Sender<bool>, Distributor<ConfigMap>) {
    let (tx, rx) = watch::channel(true);
    (tx, Distributor::new(Duration::ZERO, rx))
}

fn update(name: &str, from: &str, to: &str) -> Notification<ConfigMap> {
    updated(cm("ns", name, from), cm("ns", name, to))
}

#[tokio::test]
async fn a_batch_wakes_a_waiting_subscriber_once_when_it_ends() {
    let (_synced, mut d) = distributor();
    let mut sub = d.subscribe(SubscribeOptions::default(), []);
    let other = d.subscribe(SubscribeOptions::default(), []);
    let wakes = park(&mut sub);
    for i in 0..5 {
        let n = update("a", &i.to_string(), &(i + 1).to_string());
        d.distribute_batched(&key("ns/a"), n).await;
    }
    assert_eq!(wakes.count(), 0, "no wake before the batch ends");
    assert_eq!(sub.stats().pending, 5, "but everything is queued");
    assert_eq!(other.stats().pending, 5);
    d.end_batch();
    assert_eq!(wakes.count(), 1, "one wake for the whole batch");
    d.end_batch();
    assert_eq!(wakes.count(), 1, "an empty batch wakes nobody");
    assert_eq!(
        drain(&mut sub),
        [
            "U ns/a@0->1",
            "U ns/a@1->2",
            "U ns/a@2->3",
            "U ns/a@3->4",
            "U ns/a@4->5"
        ]
    );
}

#[tokio::test]
async fn distribute_wakes_at_once() {
    let (_synced, mut d) = distributor();
    let mut sub = d.subscribe(SubscribeOptions::default(), []);
    let wakes = park(&mut sub);
    d.distribute(&key("ns/a"), update("a", "1", "2")).await;
    assert_eq!(wakes.count(), 1);
}

#[tokio::test]
async fn a_subscriber_parked_again_mid_batch_is_woken_again() {
    let (_synced, mut d) = distributor();
    let mut sub = d.subscribe(SubscribeOptions::default(), []);
    let first = park(&mut sub);
    d.distribute_batched(&key("ns/a"), update("a", "1", "2"))
        .await;
    // It ran meanwhile (on another thread, say), drained and parked again.
    assert_eq!(drain(&mut sub), ["U ns/a@1->2"]);
    let second = park(&mut sub);
    d.distribute_batched(&key("ns/a"), update("a", "2", "3"))
        .await;
    d.end_batch();
    assert_eq!((first.count(), second.count()), (1, 1));
    assert_eq!(drain(&mut sub), ["U ns/a@2->3"]);
}

#[tokio::test]
async fn closing_wakes_what_a_batch_held() {
    let (_synced, mut d) = distributor();
    let mut sub = d.subscribe(SubscribeOptions::default(), []);
    let wakes = park(&mut sub);
    d.distribute_batched(&key("ns/a"), update("a", "1", "2"))
        .await;
    d.close();
    assert!(wakes.count() >= 1);
    assert_eq!(drain(&mut sub), ["U ns/a@1->2"]);
    assert!(sub.next().await.is_none());
}

/// A full `Bounded` subscriber whose wake is held would never make room:
/// the distributor hands out its held wakes before it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bounded_subscriber_is_woken_before_the_distributor_waits() {
    let (_synced, mut d) = distributor();
    let sub = d.subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)), []);
    let consumer = tokio::spawn(sub.take(20).count());
    let batch = async {
        for i in 0..20 {
            let n = update("a", &i.to_string(), &(i + 1).to_string());
            d.distribute_batched(&key("ns/a"), n).await;
        }
        d.end_batch();
    };
    tokio::time::timeout(Duration::from_secs(60), batch)
        .await
        .expect("the batch completes: the full subscriber was woken");
    assert_eq!(consumer.await.unwrap(), 20);
}
