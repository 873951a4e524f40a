//! Subscriptions through a running informer: L1, L2, L3, L5, L6.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use kube_informer::{
    Informer, Notification,
    dispatch::{Lag, SubscribeOptions},
    informer::Error,
    source::Event,
};

// L1: a subscriber joining during a burst of writes first gets the whole
// cache as initial-list adds, then live notifications, nothing interleaved
// and nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l1_late_subscriber_during_a_burst_gets_replay_then_live() {
    const KEYS: usize = 50;
    const ROUNDS: usize = 40;
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let run = tokio::spawn(informer.run());
    relist(&source, &[], "0");
    informer.wait_until_synced().await.unwrap();

    let writer = tokio::spawn(async move {
        let mut rv = 0;
        for _ in 0..ROUNDS {
            for key in 0..KEYS {
                rv += 1;
                let event = if rv <= KEYS {
                    Event::Added(cm(&format!("k{key}"), &rv.to_string()))
                } else {
                    Event::Modified(cm(&format!("k{key}"), &rv.to_string()))
                };
                send(&source, event);
            }
            tokio::task::yield_now().await;
        }
        // Dropping the source ends the informer once everything is applied.
    });

    // Join somewhere in the middle of the burst.
    while informer.store().len() < KEYS / 2 {
        tokio::task::yield_now().await;
    }
    let late = informer.subscribe(SubscribeOptions::default()).unwrap();
    writer.await.unwrap();
    run.await.unwrap().unwrap();

    let seen = collect_all(late).await;
    let replayed = seen
        .iter()
        .take_while(|n| {
            matches!(
                n,
                Notification::Added {
                    in_initial_list: true,
                    ..
                }
            )
        })
        .count();
    assert!(replayed > 0, "the late subscriber saw no replay");
    assert!(
        seen[replayed..].iter().all(|n| !matches!(
            n,
            Notification::Added {
                in_initial_list: true,
                ..
            }
        )),
        "an initial-list add came after a live notification"
    );
    let mut fold = Fold::default();
    for n in &seen {
        fold.apply(n);
    }
    assert_eq!(fold.0, store_state(&informer.store()));
    assert_eq!(fold.0.len(), KEYS);
    assert!(
        fold.0
            .values()
            .all(|rv| rv.parse::<usize>().unwrap() > KEYS * (ROUNDS - 1))
    );
}

// L2: a subscription has synced once the informer synced and it has been
// handed every initial-list item.
#[tokio::test]
async fn l2_subscription_syncs_after_its_initial_items_are_read() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut early = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
    informer.wait_until_synced().await.unwrap();

    assert!(!early.sync_status().has_synced());
    early.next().await.unwrap();
    assert!(!early.sync_status().has_synced());
    early.next().await.unwrap();
    assert!(early.sync_status().has_synced());

    // A late subscriber must read its replay first.
    let mut late = informer.subscribe(SubscribeOptions::default()).unwrap();
    assert!(!late.sync_status().has_synced());
    late.next().await.unwrap();
    late.next().await.unwrap();
    assert!(late.sync_status().has_synced());

    drop(source);
    run.await.unwrap().unwrap();
}

fn resyncs(ns: &[Notification<k8s_openapi::api::core::v1::ConfigMap>]) -> usize {
    ns.iter().filter(|n| n.is_resync()).count()
}

// L3: per-subscriber periods on a paused clock; only due subscribers get the
// resync updates of a round.
#[tokio::test(start_paused = true)]
async fn l3_only_due_subscribers_get_resyncs() {
    let (source, events) = hand_source();
    // The 2 s subscriber lowers the 60 s check period before the start.
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::from_secs(60))
        .build();
    let mut every_2s = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(2)))
        .unwrap();
    let mut every_5s = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(5)))
        .unwrap();
    let mut never = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
    informer.wait_until_synced().await.unwrap();
    // Asked for after the start, 300 ms is raised to the 2 s check period
    // (it was first raised to the 1 s minimum).
    let mut late_fast = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_millis(300)))
        .unwrap();
    tokio::task::yield_now().await;
    for s in [&mut every_2s, &mut every_5s, &mut never, &mut late_fast] {
        assert_eq!(ready(s).len(), 2);
    }

    // t ≈ 2.1 s: one round, the 2 s subscribers are due.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(resyncs(&ready(&mut every_2s)), 2);
    assert_eq!(resyncs(&ready(&mut late_fast)), 2);
    assert!(ready(&mut every_5s).is_empty());
    assert!(ready(&mut never).is_empty());

    // t ≈ 6.1 s: rounds at 4 s and 6 s; the 5 s subscriber was due at 6 s.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(resyncs(&ready(&mut every_2s)), 4);
    assert_eq!(resyncs(&ready(&mut every_5s)), 2);
    assert!(ready(&mut never).is_empty());

    drop(source);
    run.await.unwrap().unwrap();
}

// L3: a zero resync check period turns resync off for everyone.
#[tokio::test(start_paused = true)]
async fn l3_zero_check_period_never_resyncs() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::ZERO)
        .build();
    let mut s = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))
        .unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1")], "1");
    informer.wait_until_synced().await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(ready(&mut s).len(), 1);
    drop(source);
    run.await.unwrap().unwrap();
}

// L5: dropping a subscription unsubscribes it; the informer and the other
// subscribers go on.
#[tokio::test]
async fn l5_dropped_subscription_does_not_stop_the_informer() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let dropped = informer.subscribe(SubscribeOptions::default()).unwrap();
    let mut kept = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1")], "1");
    assert_eq!(
        describe(&kept.next().await.unwrap()),
        "added a@1 initial=true"
    );
    drop(dropped);
    send(&source, Event::Modified(cm("a", "2")));
    assert_eq!(
        describe(&kept.next().await.unwrap()),
        "updated a@1->2 resync=false"
    );
    assert!(!informer.is_stopped());
    drop(source);
    run.await.unwrap().unwrap();
    assert!(kept.next().await.is_none());
}

// L6: after the informer stopped, subscribing is refused; open
// subscriptions end after what was queued for them.
#[tokio::test]
async fn l6_subscribe_after_stop_is_an_error() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let open = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Coalesce))
        .unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
    informer.wait_until_synced().await.unwrap();
    informer.stop();
    run.await.unwrap().unwrap();
    assert!(informer.is_stopped());
    assert!(matches!(
        informer.subscribe(SubscribeOptions::default()),
        Err(Error::Stopped)
    ));
    assert_eq!(collect_all(open).await.len(), 2);
    drop(source);
}

// L6: a subscription asked for while the informer runs, then stopped before
// the writer registered it, ends instead of hanging.
#[tokio::test]
async fn l6_pending_subscription_ends_when_the_informer_stops() {
    let (_source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let run = informer.run();
    let mut run = Box::pin(run);
    // Start it: the writer now waits for events.
    assert!(futures::poll!(run.as_mut()).is_pending());
    let pending = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.stop();
    drop(run);
    assert!(collect_all(pending).await.is_empty());
}

// Dropping every handle stops the informer; the spawned run future holds
// none.
#[tokio::test]
async fn l8_the_informer_runs_while_anything_can_observe_it() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let errors = informer.errors();
    let run = tokio::spawn(informer.run());
    let clone = informer.clone();
    drop(informer);
    drop(clone);
    // A subscription (and an error stream) still observe it: it runs.
    send(&source, Event::Added(cm("a", "1")));
    let first = subscription.next().await.unwrap();
    assert_eq!(describe(&first), "added a@1 initial=false");
    assert!(!run.is_finished());
    drop(errors);
    tokio::task::yield_now().await;
    assert!(!run.is_finished());
    drop(subscription);
    // Nothing can observe it any more: it stops.
    run.await.unwrap().unwrap();
}

// A cancellation token given to the builder stops the informer; `run` runs
// once.
#[tokio::test]
async fn cancellation_token_stops_and_run_runs_once() {
    let token = tokio_util::sync::CancellationToken::new();
    let (_source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .cancellation_token(token.clone())
        .build();
    let run = tokio::spawn(informer.run());
    tokio::task::yield_now().await;
    assert!(matches!(informer.run().await, Err(Error::AlreadyRunning)));
    token.cancel();
    run.await.unwrap().unwrap();
    assert!(informer.wait_until_synced().await.is_err());
}

// A run future dropped before its first poll started nothing: the informer
// can still run. One dropped after it started stops the informer.
#[tokio::test]
async fn dropping_the_run_future_before_or_after_it_started() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    drop(informer.run());
    let mut run = Box::pin(informer.run());
    assert!(futures::poll!(run.as_mut()).is_pending());
    relist(&source, &[cm("a", "1")], "1");
    tokio::select! {
        _ = &mut run => panic!("run ended on its own"),
        synced = informer.wait_until_synced() => synced.unwrap(),
    }
    drop(run);
    assert!(informer.is_stopped());
    assert!(matches!(
        informer.subscribe(SubscribeOptions::default()),
        Err(Error::Stopped)
    ));
}
