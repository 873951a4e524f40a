//! Failure semantics: nothing ends silently, nothing stalls, nothing grows
//! without bound (L7–L11, ER1).

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer, Subscription,
    dispatch::{EndReason, Lag, SubscribeOptions},
    informer::{Callback, Error},
    source::{self, Event},
    store::Store,
};

// L7
#[tokio::test(start_paused = true)]
async fn l7_stop_before_run_ends_everything() {
    let (_source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let errors = informer.errors();
    informer.stop();
    assert!(subscription.next().await.is_none());
    assert_eq!(subscription.end_reason(), Some(EndReason::Stopped));
    assert!(errors.collect::<Vec<_>>().await.is_empty());
    assert!(informer.wait_until_synced().await.is_err());
    assert!(matches!(
        informer.subscribe(SubscribeOptions::default()),
        Err(Error::Stopped)
    ));
    assert!(informer.run().await.is_ok());
}

// L7
#[tokio::test(start_paused = true)]
async fn l7_a_cancelled_token_without_run_ends_waiting_streams() {
    let token = tokio_util::sync::CancellationToken::new();
    let (_source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .cancellation_token(token.clone())
        .build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let errors = informer.errors();
    let waiter = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_until_synced().await }
    });
    let sub_task = tokio::spawn(collect_all(subscription));
    let err_task = tokio::spawn(errors.collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(10)).await;
    token.cancel();
    let bound = Duration::from_secs(1);
    assert!(
        tokio::time::timeout(bound, waiter)
            .await
            .unwrap()
            .unwrap()
            .is_err()
    );
    assert!(
        tokio::time::timeout(bound, sub_task)
            .await
            .unwrap()
            .unwrap()
            .is_empty()
    );
    assert!(
        tokio::time::timeout(bound, err_task)
            .await
            .unwrap()
            .unwrap()
            .is_empty()
    );
}

/// What a helper that builds and spawns an informer might hand back: the
/// informer handle itself is dropped on return.
fn store_and_subscription(
    events: impl futures::Stream<Item = SourceItem> + Send + 'static,
) -> (Store<ConfigMap>, Subscription<ConfigMap>) {
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    tokio::spawn(informer.run());
    (informer.store(), subscription)
}

/// Waits, on the paused clock, until `done` holds; fails after `bound`.
async fn eventually(bound: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + bound;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

// L8
#[tokio::test(start_paused = true)]
async fn l8_a_held_store_keeps_the_informer_running() {
    let bound = Duration::from_secs(1);
    let (source, events) = hand_source();
    let (store, subscription) = store_and_subscription(events);
    // The store alone is left: the informer must keep running and syncing.
    drop(subscription);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(
        !source.is_closed(),
        "the informer stopped with a store held"
    );
    relist(&source, &[cm("a", "1")], "1");
    tokio::time::timeout(bound, store.wait_until_synced())
        .await
        .expect("a held store never synced")
        .unwrap();
    assert_eq!(store_state(&store).len(), 1);
    send(&source, Event::Added(cm("b", "1")));
    eventually(bound, "b never reached the store", || store.len() == 2).await;

    // A namespaced view of it is a store too.
    let in_default = store.clone().namespace("default");
    drop(store);
    send(&source, Event::Added(cm("c", "1")));
    eventually(bound, "c never reached the namespaced store", || {
        in_default.get("c").is_some()
    })
    .await;

    // Nothing can observe it any more: it stops and lets its source go.
    drop(in_default);
    eventually(bound, "the informer outlived its last store", || {
        source.is_closed()
    })
    .await;
}

// L9
#[tokio::test]
async fn l9_a_panicking_transform_skips_the_object_and_reports_it() {
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::ListStart),
        Ok(Event::Listed(cm("a", "1"))),
        Ok(Event::Listed(cm("boom", "1"))),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
    ]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .transform(|cm: ConfigMap| {
            assert!(
                cm.metadata.name.as_deref() != Some("boom"),
                "cannot transform boom"
            );
            Ok(cm)
        })
        .build();
    let errors = informer.errors();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();
    let errors: Vec<Error> = errors.collect().await;
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        &errors[0],
        Error::Panicked { callback: Callback::Transform, message } if message.contains("cannot transform boom")
    ));
    assert_eq!(informer.metrics().errors, 1);
    let seen: Vec<String> = collect_all(subscription)
        .await
        .iter()
        .map(describe)
        .collect();
    assert_eq!(seen, ["added a@1 initial=true"]);
    assert!(informer.has_synced());
}

// L9
#[tokio::test]
async fn l9_a_panicking_stream_stops_the_informer_with_the_reason() {
    let events = futures::stream::iter(0..3).map(|i| {
        assert!(i < 2, "stream broke");
        Ok::<_, std::io::Error>(Event::Added(cm(&format!("o{i}"), "1")))
    });
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let errors = informer.errors();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let result = informer.run().await;
    assert!(matches!(
        result,
        Err(Error::Panicked {
            callback: Callback::EventStream,
            ..
        })
    ));
    let mut seen = 0;
    while subscription.next().await.is_some() {
        seen += 1;
    }
    assert_eq!(seen, 2, "what was queued is still handed out");
    assert!(matches!(
        subscription.end_reason(),
        Some(EndReason::Panicked(message)) if message.contains("stream broke")
    ));
    assert_eq!(errors.collect::<Vec<_>>().await.len(), 1);
    assert_eq!(informer.metrics().errors, 1);
}

// L9
#[tokio::test]
async fn l9_a_panicking_on_error_still_reaches_error_streams() {
    let events = futures::stream::iter([Err::<Event<ConfigMap>, _>(std::io::Error::other("x"))]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .on_error(|_| panic!("callback broke"))
        .build();
    let errors = informer.errors();
    informer.run().await.unwrap();
    let errors: Vec<Error> = errors.collect().await;
    assert_eq!(errors.len(), 2);
    assert!(matches!(&errors[0], Error::Stream(_)));
    assert!(matches!(
        &errors[1],
        Error::Panicked {
            callback: Callback::OnError,
            ..
        }
    ));
    assert_eq!(informer.metrics().errors, 2);
}

// L10
#[tokio::test(start_paused = true)]
async fn l10_a_full_bounded_subscriber_stops_the_source_being_read() {
    const EVENTS: usize = 20_000;
    let events = futures::stream::iter(
        (0..EVENTS).map(|i| Ok::<_, std::io::Error>(Event::Modified(cm("a", &i.to_string())))),
    );
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let subscription = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)))
        .unwrap();
    let run = tokio::spawn(informer.run());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        informer.metrics().fifo.deltas <= 1100,
        "queued {}",
        informer.metrics().fifo.deltas
    );
    assert_eq!(subscription.stats().pending, 1);
    drop(subscription);
    run.await.unwrap().unwrap();
}

// L3
#[tokio::test(start_paused = true)]
async fn l3_resync_durations_too_long_for_the_clock_never_panic() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::MAX)
        .build();
    let subscription = informer
        .subscribe(SubscribeOptions::default().resync(Duration::MAX))
        .unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1")], "1");
    tokio::time::sleep(Duration::from_secs(3600)).await;
    drop(source);
    run.await.unwrap().unwrap();
    let seen: Vec<String> = collect_all(subscription)
        .await
        .iter()
        .map(describe)
        .collect();
    assert_eq!(seen, ["added a@1 initial=true"]);
}

// L11
#[tokio::test]
async fn l11_coalesce_frees_the_slot_of_a_cancelled_key() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let subscription = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Coalesce))
        .unwrap();
    relist(&source, &[], "1");
    for i in 0..100 {
        let name = format!("k{i}");
        send(&source, Event::Added(cm(&name, "2")));
        send(&source, Event::Deleted(cm(&name, "3")));
    }
    drop(source);
    informer.run().await.unwrap();
    assert_eq!(subscription.stats().pending, 0);
    assert_eq!(subscription.stats().pending_keys, 0);
}

// ER1
#[tokio::test]
async fn er1_a_403_prints_once_and_keeps_its_type() {
    let forbidden = source::Error::WatchEvent {
        resource: "configmaps in namespace default".into(),
        code: 403,
        reason: "Forbidden".into(),
        message: "configmaps is forbidden: cannot watch".into(),
    };
    let events = futures::stream::iter([Err::<Event<ConfigMap>, _>(forbidden)]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let errors = informer.errors();
    informer.run().await.unwrap();
    let errors: Vec<Error> = errors.collect().await;
    let error = &errors[0];
    let printed = format!("{:#}", anyhow::Error::from(error.clone()));
    assert_eq!(
        printed.matches("configmaps is forbidden").count(),
        1,
        "{printed}"
    );
    assert_eq!(error.status_code(), Some(403));
    assert!(
        matches!(error, Error::Source(e) if matches!(**e, source::Error::WatchEvent { code: 403, .. }))
    );
    let found = std::error::Error::source(error).and_then(|e| e.downcast_ref::<source::Error>());
    assert!(found.is_some());
}
