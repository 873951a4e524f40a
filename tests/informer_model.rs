//! Property test: random source events (watch changes, relists where keys
//! vanish, errors) and random subscriber pacing, early and late
//! subscribers, `Unbounded` and `Coalesce`. Folding each subscriber's
//! notifications gives the store's final state, and the store equals the
//! fold of the source events.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::collections::BTreeMap;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer,
    dispatch::{Lag, SubscribeOptions, Subscription},
    source::Event,
};
use proptest::prelude::*;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

#[derive(Debug, Clone)]
enum Op {
    Add(usize),
    Modify(usize),
    Delete(usize),
    /// Relist holding these keys; `true` keeps the cached version.
    Relist(Vec<(usize, bool)>),
    Error,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES.len()).prop_map(Op::Add),
        4 => (0..NAMES.len()).prop_map(Op::Modify),
        2 => (0..NAMES.len()).prop_map(Op::Delete),
        1 => proptest::collection::vec((0..NAMES.len(), any::<bool>()), 0..NAMES.len()).prop_map(Op::Relist),
        1 => Just(Op::Error),
    ]
}

#[derive(Debug, Clone)]
struct Subscriber {
    coalesce: bool,
    /// Index of the source item after which it subscribes (0: before run).
    joins_at: usize,
    /// Yields between two reads, cycled.
    pacing: Vec<u8>,
}

fn subscriber() -> impl Strategy<Value = Subscriber> {
    (
        any::<bool>(),
        0..40usize,
        proptest::collection::vec(0..4u8, 1..6),
    )
        .prop_map(|(coalesce, joins_at, pacing)| Subscriber {
            coalesce,
            joins_at,
            pacing,
        })
}

/// The source items for `ops`: an initial relist, then the ops, each watch
/// event with a fresh resourceVersion.
fn items(ops: &[Op]) -> Vec<Result<Event<ConfigMap>, std::io::Error>> {
    let mut rv = 1u64;
    let mut current: BTreeMap<usize, String> = BTreeMap::new();
    let mut out = vec![
        Ok(Event::ListStart),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
    ];
    let fresh = |rv: &mut u64| {
        *rv += 1;
        rv.to_string()
    };
    for op in ops {
        match op {
            Op::Add(k) | Op::Modify(k) => {
                let version = fresh(&mut rv);
                current.insert(*k, version.clone());
                let object = cm(NAMES[*k], &version);
                out.push(Ok(if matches!(op, Op::Add(_)) {
                    Event::Added(object)
                } else {
                    Event::Modified(object)
                }));
            }
            Op::Delete(k) => {
                let version = fresh(&mut rv);
                current.remove(k);
                out.push(Ok(Event::Deleted(cm(NAMES[*k], &version))));
            }
            Op::Relist(keys) => {
                out.push(Ok(Event::ListStart));
                let mut listed = BTreeMap::new();
                for (k, keep) in keys {
                    let version = match (keep, current.get(k)) {
                        (true, Some(v)) => v.clone(),
                        _ => fresh(&mut rv),
                    };
                    listed.insert(*k, version);
                }
                for (k, version) in &listed {
                    out.push(Ok(Event::Listed(cm(NAMES[*k], version))));
                }
                current = listed;
                out.push(Ok(Event::ListDone {
                    resource_version: rv.to_string(),
                }));
            }
            Op::Error => out.push(Err(std::io::Error::other("injected"))),
        }
    }
    out
}

async fn consume(subscription: Subscription<ConfigMap>, pacing: Vec<u8>) -> Fold {
    let mut fold = Fold::default();
    let mut subscription = subscription;
    let mut i = 0;
    while let Some(n) = subscription.next().await {
        fold.apply(&n);
        for _ in 0..pacing[i % pacing.len()] {
            tokio::task::yield_now().await;
        }
        i += 1;
    }
    fold
}

async fn check(ops: Vec<Op>, subscribers: Vec<Subscriber>, source_pacing: Vec<u8>) {
    let items = items(&ops);
    let expected_errors = items.iter().filter(|i| i.is_err()).count() as u64;
    let events: Vec<Event<ConfigMap>> = items
        .iter()
        .filter_map(|i| i.as_ref().ok().cloned())
        .collect();
    let (source, stream) = hand_source();
    let informer = Informer::builder_from_stream(stream)
        .cache_from_env()
        .build();
    let options = |s: &Subscriber| {
        SubscribeOptions::default().lag(if s.coalesce {
            Lag::Coalesce
        } else {
            Lag::Unbounded
        })
    };
    let mut consumers = Vec::new();
    for s in subscribers.iter().filter(|s| s.joins_at == 0) {
        let subscription = informer.subscribe(options(s)).unwrap();
        consumers.push(tokio::spawn(consume(subscription, s.pacing.clone())));
    }
    let run = tokio::spawn(informer.run());
    for (index, item) in items.into_iter().enumerate() {
        source.unbounded_send(item).unwrap();
        for s in subscribers.iter().filter(|s| s.joins_at == index + 1) {
            let subscription = informer.subscribe(options(s)).unwrap();
            consumers.push(tokio::spawn(consume(subscription, s.pacing.clone())));
        }
        for _ in 0..source_pacing[index % source_pacing.len()] {
            tokio::task::yield_now().await;
        }
    }
    // Subscribers that join after the last item still join a running
    // informer.
    let late: Vec<_> = subscribers
        .iter()
        .filter(|s| s.joins_at > 0 && s.joins_at > events.len() + expected_errors as usize)
        .map(|s| informer.subscribe(options(s)).unwrap())
        .collect();
    for subscription in late {
        consumers.push(tokio::spawn(consume(subscription, vec![0])));
    }
    drop(source);
    run.await.unwrap().unwrap();

    let store = store_state(&informer.store());
    assert_eq!(store, fold_events(&events), "store differs from the source");
    for consumer in consumers {
        assert_eq!(
            consumer.await.unwrap().0,
            store,
            "a subscriber's fold differs"
        );
    }
    assert_eq!(informer.metrics().errors, expected_errors);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn folding_notifications_gives_the_store_and_the_store_follows_the_source(
        ops in proptest::collection::vec(op(), 0..40),
        subscribers in proptest::collection::vec(subscriber(), 1..4),
        source_pacing in proptest::collection::vec(0..3u8, 1..5),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(check(ops, subscribers, source_pacing));
    }
}
