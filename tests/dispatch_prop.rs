//! Property: whatever the notifications and however each subscriber is
//! paced, folding what a subscriber yields ends at the state folding the
//! input gives (L4), and a Coalesce queue stays bounded by the number of
//! keys.

use crate::store_common;

use std::{collections::HashMap, time::Duration};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Notification, Subscription,
    dispatch::{Lag, SubscribeOptions},
    unstable::dispatch::Distributor,
};
use proptest::prelude::*;
use store_common::*;
use tokio::{sync::watch, time::Instant};

const KEYS: usize = 5;

#[derive(Debug, Clone)]
enum Step {
    /// Change key `0`: add if absent; else update (`1` = 0), resync (`1` = 1)
    /// or delete (`1` = 2).
    Write(usize, u8),
    /// Subscriber `0` takes up to `1` notifications.
    Take(usize, usize),
    /// A resync round.
    ResyncRound,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..KEYS, 0u8..3).prop_map(|(k, w)| Step::Write(k, w)),
        2 => (0usize..3, 0usize..6).prop_map(|(s, n)| Step::Take(s, n)),
        1 => Just(Step::ResyncRound),
    ]
}

fn lag() -> impl Strategy<Value = Lag> {
    prop_oneof![Just(Lag::Unbounded), Just(Lag::Coalesce)]
}

/// A subscriber's view, checked as it folds: adds only for absent keys,
/// updates and deletes only for present ones, updates starting from what it
/// holds.
fn fold(view: &mut HashMap<String, String>, n: &Notification<ConfigMap>) {
    let k = key_of(n.object()).to_string();
    let rv = |o: &ConfigMap| o.metadata.resource_version.clone().unwrap();
    match n {
        Notification::Added { object, .. } => {
            assert!(view.insert(k, rv(object)).is_none(), "added a present key");
        }
        Notification::Updated { old, new, .. } => {
            let held = view.insert(k, rv(new));
            assert_eq!(
                held,
                Some(rv(old)),
                "update does not start from the held state"
            );
        }
        Notification::Deleted { .. } => {
            assert!(view.remove(&k).is_some(), "deleted an absent key");
        }
    }
}

fn take(sub: &mut Subscription<ConfigMap>, view: &mut HashMap<String, String>, max: usize) {
    for _ in 0..max {
        match sub.next().now_or_never() {
            Some(Some(n)) => fold(view, &n),
            _ => break,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn l4_folding_each_subscriber_gives_the_input_state(
        lags in prop::collection::vec(lag(), 3),
        resyncs in prop::collection::vec(prop::bool::ANY, 3),
        steps in prop::collection::vec(step(), 0..120),
    ) {
        let (_synced, upstream) = watch::channel(true);
        let mut d = Distributor::new(Duration::from_secs(1), upstream);
        let mut subs: Vec<_> = lags
            .iter()
            .zip(&resyncs)
            .map(|(lag, resync)| {
                let period = if *resync { Duration::from_secs(1) } else { Duration::ZERO };
                d.subscribe(SubscribeOptions::default().lag(*lag).resync(period), [])
            })
            .collect();
        let mut views = vec![HashMap::new(); subs.len()];
        let mut truth: HashMap<String, String> = HashMap::new();
        let mut rv = 0u64;
        let mut now = Instant::now();

        for step in steps {
            match step {
                Step::Write(k, what) => {
                    let name = format!("k{k}");
                    let full = format!("ns/{name}");
                    let n = match truth.get(&full).cloned() {
                        None => {
                            rv += 1;
                            truth.insert(full.clone(), rv.to_string());
                            added(cm("ns", &name, &rv.to_string()), false)
                        }
                        Some(held) => match what {
                            0 => {
                                rv += 1;
                                truth.insert(full.clone(), rv.to_string());
                                updated(cm("ns", &name, &held), cm("ns", &name, &rv.to_string()))
                            }
                            1 => updated(cm("ns", &name, &held), cm("ns", &name, &held)),
                            _ => {
                                truth.remove(&full);
                                deleted(cm("ns", &name, &held))
                            }
                        },
                    };
                    d.distribute(&key(&full), n)
                        .now_or_never()
                        .expect("Unbounded and Coalesce never make the distributor wait");
                }
                Step::Take(s, max) => take(&mut subs[s], &mut views[s], max),
                Step::ResyncRound => {
                    now += Duration::from_secs(1);
                    d.should_resync(now);
                }
            }
            for sub in &subs {
                if sub.lag() == Lag::Coalesce {
                    prop_assert!(sub.stats().pending_keys <= KEYS);
                    prop_assert!(sub.stats().pending <= 2 * KEYS);
                }
            }
        }

        d.close();
        for (sub, view) in subs.iter_mut().zip(views.iter_mut()) {
            take(sub, view, usize::MAX);
            prop_assert!(matches!(sub.next().now_or_never(), Some(None)), "ends after close");
            prop_assert_eq!(&*view, &truth);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// L1 with a real store: subscribers registered at random points of a
    /// burst of writes (replay = the store snapshot) fold to the store.
    #[test]
    fn l1_late_subscribers_during_a_burst_fold_to_the_store(
        writes in prop::collection::vec((0..KEYS, 0u8..3), 0..80),
        joins in prop::collection::vec((0usize..80, lag()), 1..4),
    ) {
        use kube_informer::store::Indexers;
        use kube_informer::unstable::store::Writer;

        let writer = Writer::new(Indexers::<ConfigMap>::new());
        let store = writer.reader();
        let (_synced, synced_rx) = tokio::sync::watch::channel(true);
        let mut d = Distributor::new(Duration::ZERO, synced_rx);
        let mut subs = Vec::new();
        let mut rv = 0u64;
        for (at, (k, what)) in writes.iter().enumerate() {
            for (_, lag) in joins.iter().filter(|(j, _)| *j == at) {
                subs.push(d.subscribe(SubscribeOptions::default().lag(*lag), store.snapshot()));
            }
            let name = format!("k{k}");
            let full = key(&format!("ns/{name}"));
            rv += 1;
            let n = match (store.get(&full), what) {
                (Some(old), 2) => {
                    writer.apply_delete(&full);
                    deleted(old)
                }
                (_, _) => {
                    let new = cm("ns", &name, &rv.to_string());
                    match writer.apply_upsert(full.clone(), new.clone()).unwrap() {
                        Some(old) => updated(old, new),
                        None => added(new, false),
                    }
                }
            };
            d.distribute(&full, n).now_or_never().expect("never waits");
        }
        let truth: HashMap<String, String> = store
            .snapshot()
            .into_iter()
            .map(|(k, o)| (k.to_string(), o.metadata.resource_version.clone().unwrap()))
            .collect();
        d.close();
        for sub in &mut subs {
            let mut view = HashMap::new();
            take(sub, &mut view, usize::MAX);
            prop_assert!(sub.sync_status().has_synced());
            prop_assert_eq!(&view, &truth);
        }
    }
}
