//! Property test (L6, L7, L10): a stop at any point ends everything in
//! bounded time. The informer gets an initial list and then live changes
//! from a hand-fed source; `stop()` (or its cancellation token) comes at a
//! random point: before `run`, during the initial list, after it, while a
//! `Lag::Bounded` subscriber that does not read holds the writer up. On
//! tokio's paused clock every subscription then ends with
//! `EndReason::Stopped` after what was queued for it, every error stream
//! ends, every `wait_until_synced` returns (`Ok` exactly when the store
//! synced), `run` resolves, the source is let go and late subscriptions are
//! refused, all within a bound.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer,
    dispatch::{EndReason, Lag, SubscribeOptions, Subscription},
    informer::Error,
    source::Event,
};
use proptest::prelude::*;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

/// How long, on the paused clock, everything has to end after the stop.
const BOUND: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
enum How {
    Stop,
    Token,
}

#[derive(Debug, Clone)]
struct Case {
    /// Objects in the initial list.
    listed: usize,
    /// Live changes after the initial list (on `keys` keys).
    live: usize,
    keys: usize,
    /// Source items sent before the stop (clamped to what there is).
    stop_after: usize,
    /// Whether `run` is spawned before the stop; if not, after it.
    run_before_stop: bool,
    how: How,
    /// A `Lag::Bounded(n)` subscriber that reads nothing until the stop.
    bounded_stalled: Option<usize>,
    /// Subscribers that read as items come: `true` for `Coalesce`.
    readers: Vec<bool>,
    /// An error stream that is only read after the stop.
    stalled_errors: bool,
    /// Source errors among the live changes, every `n`th item.
    error_every: Option<usize>,
    /// Yields after each item sent, cycled.
    pacing: Vec<u8>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (0..40usize, 0..200usize, 1..20usize, 0..260usize),
        (
            any::<bool>(),
            prop_oneof![Just(How::Stop), Just(How::Token)],
        ),
        (
            proptest::option::of(1..4usize),
            proptest::collection::vec(any::<bool>(), 0..3),
            any::<bool>(),
            proptest::option::of(3..20usize),
        ),
        proptest::collection::vec(0..4u8, 1..5),
    )
        .prop_map(
            |(
                (listed, live, keys, stop_after),
                (run_before_stop, how),
                (bounded_stalled, readers, stalled_errors, error_every),
                pacing,
            )| Case {
                listed,
                live,
                keys,
                stop_after,
                run_before_stop,
                how,
                bounded_stalled,
                readers,
                stalled_errors,
                error_every,
                pacing,
            },
        )
}

fn items(case: &Case) -> Vec<SourceItem> {
    let mut out = vec![Ok(Event::ListStart)];
    for i in 0..case.listed {
        out.push(Ok(Event::Listed(cm(&format!("l{i}"), "1"))));
    }
    out.push(Ok(Event::ListDone {
        resource_version: "1".into(),
    }));
    for i in 0..case.live {
        if case.error_every.is_some_and(|n| i % n == n - 1) {
            out.push(Err(std::io::Error::other("injected")));
            continue;
        }
        let object = cm(&format!("k{}", i % case.keys), &(i + 2).to_string());
        out.push(Ok(if i % 7 == 6 {
            Event::Deleted(object)
        } else {
            Event::Modified(object)
        }));
    }
    out
}

/// Reads a subscription to its end; `None` if it does not end in time.
async fn drain(mut subscription: Subscription<ConfigMap>) -> Option<Subscription<ConfigMap>> {
    timeout(BOUND, async {
        while subscription.next().await.is_some() {}
    })
    .await
    .ok()
    .map(|()| subscription)
}

async fn check(case: Case) -> Result<(), TestCaseError> {
    let items = items(&case);
    let stop_after = case.stop_after.min(items.len());
    let (source, events) = hand_source();
    let token = CancellationToken::new();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .cancellation_token(token.clone())
        .build();

    let bounded = case
        .bounded_stalled
        .map(|n| informer.subscribe(SubscribeOptions::default().lag(Lag::Bounded(n))))
        .transpose()
        .unwrap();
    let mut readers = Vec::new();
    for &coalesce in &case.readers {
        let lag = if coalesce {
            Lag::Coalesce
        } else {
            Lag::Unbounded
        };
        let subscription = informer
            .subscribe(SubscribeOptions::default().lag(lag))
            .unwrap();
        readers.push(tokio::spawn(drain(subscription)));
    }
    let stalled_errors = case.stalled_errors.then(|| informer.errors());
    let read_errors = tokio::spawn(timeout(BOUND, informer.errors().count()));
    let waiter = tokio::spawn({
        let informer = informer.clone();
        async move { timeout(BOUND, informer.wait_until_synced()).await }
    });

    let mut run = case.run_before_stop.then(|| tokio::spawn(informer.run()));
    for (index, item) in items.into_iter().take(stop_after).enumerate() {
        source.unbounded_send(item).unwrap();
        for _ in 0..case.pacing[index % case.pacing.len()] {
            tokio::task::yield_now().await;
        }
    }
    match case.how {
        How::Stop => informer.stop(),
        How::Token => token.cancel(),
    }
    let stopped_at = tokio::time::Instant::now();
    if run.is_none() {
        run = Some(tokio::spawn(informer.run()));
    }

    // `run` resolves and lets the source go.
    let ran = timeout(BOUND, run.unwrap()).await;
    prop_assert!(ran.is_ok(), "run did not resolve after the stop");
    prop_assert!(ran.unwrap().unwrap().is_ok());
    prop_assert!(source.is_closed(), "the source was not let go");

    // Every subscription ends, after what was queued for it, saying why.
    if let Some(bounded) = bounded {
        let ended = drain(bounded).await;
        prop_assert!(
            ended.is_some(),
            "the stalled Bounded subscription did not end"
        );
        prop_assert_eq!(ended.unwrap().end_reason(), Some(EndReason::Stopped));
    }
    for reader in readers {
        let ended = reader.await.unwrap();
        prop_assert!(ended.is_some(), "a reading subscription did not end");
        prop_assert_eq!(ended.unwrap().end_reason(), Some(EndReason::Stopped));
    }

    // Every error stream ends.
    if let Some(errors) = stalled_errors {
        let count = timeout(BOUND, errors.count()).await;
        prop_assert!(count.is_ok(), "an unread error stream did not end");
    }
    prop_assert!(
        read_errors.await.unwrap().is_ok(),
        "an error stream did not end"
    );

    // Sync waiters return, saying whether the store synced.
    let synced = waiter.await.unwrap();
    prop_assert!(synced.is_ok(), "wait_until_synced did not return");
    prop_assert_eq!(synced.unwrap().is_ok(), informer.has_synced());
    prop_assert_eq!(
        informer.wait_until_synced().await.is_ok(),
        informer.has_synced()
    );

    // Later subscriptions are refused.
    prop_assert!(matches!(
        informer.subscribe(SubscribeOptions::default()),
        Err(Error::Stopped)
    ));
    prop_assert!(
        stopped_at.elapsed() <= BOUND,
        "ending took {:?} of paused time",
        stopped_at.elapsed()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_stop_at_any_point_ends_every_stream_and_waiter_in_bounded_time(case in case()) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(check(case))?;
    }
}
