//! A `Lag::Coalesce` subscriber that stalls while 10,000 updates flow
//! through the informer (L4 with DESIGN's Coalesce rules).

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use futures::StreamExt;
use informer_common::*;
use kube_informer::{
    Informer,
    dispatch::{Lag, SubscribeOptions},
    source::Event,
};

#[tokio::test]
async fn coalesce_subscriber_stalled_during_10k_updates_stays_bounded_and_converges() {
    const KEYS: usize = 100;
    const UPDATES: usize = 10_000;
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let stalled = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Coalesce))
        .unwrap();
    let reader = informer.subscribe(SubscribeOptions::default()).unwrap();
    // The reader keeps up all along: a stalled subscriber delays nobody.
    let reader = tokio::spawn(async move {
        let mut fold = Fold::default();
        let mut reader = reader;
        while let Some(n) = reader.next().await {
            fold.apply(&n);
        }
        fold
    });
    let run = tokio::spawn(informer.run());

    let initial: Vec<_> = (0..KEYS).map(|k| cm(&format!("k{k}"), "0")).collect();
    relist(&source, &initial, "0");
    let mut max_pending = 0;
    for update in 1..=UPDATES {
        let key = format!("k{}", update % KEYS);
        send(&source, Event::Modified(cm(&key, &update.to_string())));
        if update % 500 == 0 {
            // Let the informer apply what was sent, then look at the queue.
            let store = informer.store();
            while store
                .get(&format!("default/{key}").parse().unwrap())
                .map(|o| rv(&o))
                != Some(update.to_string())
            {
                tokio::task::yield_now().await;
            }
            max_pending = max_pending.max(stalled.stats().pending);
            assert!(
                stalled.stats().pending <= KEYS,
                "pending {}",
                stalled.stats().pending
            );
            assert!(stalled.stats().pending_keys <= KEYS);
        }
    }
    assert!(max_pending > 0, "the subscriber never lagged");
    drop(source);
    run.await.unwrap().unwrap();

    // Resumed: what it reads folds to the store.
    let store = store_state(&informer.store());
    let mut fold = Fold::default();
    let seen = collect_all(stalled).await;
    assert!(seen.len() <= 2 * KEYS, "{} notifications", seen.len());
    for n in &seen {
        fold.apply(n);
    }
    assert_eq!(fold.0, store);
    assert_eq!(reader.await.unwrap().0, store);
}
