//! L12: a stop takes effect between two batches. Whatever the writer was
//! handing out when the stop came reaches every subscriber, a full
//! `Lag::Bounded` one included (past its bound, rather than hold the stop
//! up), and then every subscription ends: folded, what each subscriber saw
//! is the store as the writer left it, the same for all of them.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer,
    dispatch::{EndReason, Lag, SubscribeOptions, Subscription},
    source::Event,
};
use proptest::prelude::*;
use tokio::{task::JoinHandle, time::timeout};

/// How long, on the paused clock, everything has to end after the stop.
const BOUND: Duration = Duration::from_secs(5);

/// `n` changes to `keys` keys after an empty initial list: mostly updates,
/// every seventh a delete.
fn burst(n: usize, keys: usize) -> Vec<Event<ConfigMap>> {
    let mut events = vec![
        Event::ListStart,
        Event::ListDone {
            resource_version: "1".into(),
        },
    ];
    for i in 0..n {
        let object = cm(&format!("k{}", i % keys), &(i + 2).to_string());
        events.push(if i % 7 == 6 {
            Event::Deleted(object)
        } else {
            Event::Modified(object)
        });
    }
    events
}

/// A subscriber's reader: the fold of what it read, and why it ended.
type Reader = JoinHandle<(Fold, Option<EndReason>)>;

/// Reads `subscription` to its end, yielding `pace` times after each
/// notification.
fn read(mut subscription: Subscription<ConfigMap>, pace: usize) -> Reader {
    tokio::spawn(async move {
        let mut fold = Fold::default();
        while let Some(notification) = subscription.next().await {
            fold.apply(&notification);
            for _ in 0..pace {
                tokio::task::yield_now().await;
            }
        }
        (fold, subscription.end_reason())
    })
}

/// Stops `informer` and waits for its `run` to resolve.
async fn stop(
    informer: &Informer<ConfigMap>,
    run: JoinHandle<Result<(), kube_informer::informer::Error>>,
) {
    informer.stop();
    timeout(BOUND, run)
        .await
        .expect("the stop ends the run")
        .unwrap()
        .unwrap();
}

/// Every subscriber's fold is the store as the writer left it, and each
/// ended as stopped.
async fn check_folds(informer: &Informer<ConfigMap>, readers: Vec<(String, Reader)>) {
    let store = store_state(&informer.store());
    for (name, reader) in readers {
        let (fold, reason) = timeout(BOUND, reader)
            .await
            .unwrap_or_else(|_| panic!("{name} did not end"))
            .unwrap();
        assert_eq!(fold.0, store, "{name} ended elsewhere than the store");
        assert_eq!(reason, Some(EndReason::Stopped), "{name}");
    }
}

// L12
#[tokio::test(start_paused = true)]
async fn l12_a_stop_while_a_bounded_subscriber_holds_a_batch_ends_every_subscriber_there() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    // The writer hands each notification to the subscribers in the order
    // they subscribed: the first two get a notification the full Bounded
    // one then holds up, the last does not.
    let subscribe = |lag| informer.subscribe(SubscribeOptions::default().lag(lag));
    let unbounded = read(subscribe(Lag::Unbounded).unwrap(), 0);
    let coalesce = read(subscribe(Lag::Coalesce).unwrap(), 0);
    let bounded = subscribe(Lag::Bounded(2)).unwrap();
    let last = read(subscribe(Lag::Unbounded).unwrap(), 0);
    let run = tokio::spawn(informer.run());
    // One change per key, so one notification per pop.
    for event in burst(200, 200) {
        send(&source, event);
    }

    // The paused clock moves only once every task waits: the writer then
    // waits for room in the Bounded queue, which holds two notifications,
    // with the third key applied to the store and handed to the first two
    // subscribers.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        informer.store().len(),
        3,
        "the writer waits in the third pop"
    );

    stop(&informer, run).await;
    assert_eq!(informer.store().len(), 3, "nothing popped after the stop");
    let bounded = read(bounded, 0);
    check_folds(
        &informer,
        vec![
            ("unbounded".into(), unbounded),
            ("coalesce".into(), coalesce),
            ("bounded".into(), bounded),
            ("last".into(), last),
        ],
    )
    .await;
}

/// A generated burst, subscribers of every lag reading at their own pace,
/// and a stop at a generated point.
#[derive(Debug, Clone)]
struct Case {
    events: usize,
    keys: usize,
    /// Per subscriber: its lag and how many yields it takes per read.
    subscribers: Vec<(Lag, usize)>,
    /// A `Bounded` subscriber that reads nothing until the stop.
    stalled: Option<usize>,
    /// Yields of the test task between sending the burst and the stop.
    stop_after: usize,
}

fn case() -> impl Strategy<Value = Case> {
    let lag = prop_oneof![
        Just(Lag::Unbounded),
        Just(Lag::Coalesce),
        (1..6usize).prop_map(Lag::Bounded),
    ];
    (
        1..300usize,
        1..30usize,
        proptest::collection::vec((lag, 0..4usize), 1..5),
        proptest::option::of(1..6usize),
        0..400usize,
    )
        .prop_map(|(events, keys, subscribers, stalled, stop_after)| Case {
            events,
            keys,
            subscribers,
            stalled,
            stop_after,
        })
}

async fn check(case: Case) {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut readers = Vec::new();
    for (i, (lag, pace)) in case.subscribers.iter().enumerate() {
        let subscription = informer
            .subscribe(SubscribeOptions::default().lag(*lag))
            .unwrap();
        readers.push((format!("{i}: {lag:?}"), read(subscription, *pace)));
    }
    let stalled = case.stalled.map(|cap| {
        informer
            .subscribe(SubscribeOptions::default().lag(Lag::Bounded(cap)))
            .unwrap()
    });
    let run = tokio::spawn(informer.run());
    for event in burst(case.events, case.keys) {
        send(&source, event);
    }
    for _ in 0..case.stop_after {
        tokio::task::yield_now().await;
    }
    stop(&informer, run).await;
    if let Some(stalled) = stalled {
        readers.push(("stalled".into(), read(stalled, 0)));
    }
    check_folds(&informer, readers).await;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    // L12: at any point of a burst, with subscribers of every lag, slow
    // Bounded ones holding the writer at generated moments.
    #[test]
    fn l12_a_stop_mid_burst_ends_every_subscriber_at_the_store(case in case()) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(check(case));
    }
}
