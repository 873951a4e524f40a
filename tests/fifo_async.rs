//! Async behaviour of the DeltaFifo: wakeups, cancel safety, several
//! producers and consumers on the multi-thread runtime (F9).

use crate::fifo_common;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use fifo_common::{cm, key, rv};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    fifo::{Coalesce, DeltaFifo, FifoOptions},
    store::Error,
};
use rand::{Rng, SeedableRng, rngs::StdRng};

fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(FifoOptions::default())
}

/// A waker that counts its wakeups.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker::default());
    (counter.clone(), Waker::from(counter))
}

#[test]
fn public_types_are_send_sync_and_the_stream_is_unpin() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    fn send_sync_unpin<T: Send + Sync + Unpin>(_: &T) {}
    send_sync::<DeltaFifo<ConfigMap>>();
    send_sync::<Error>();
    let f = fifo();
    send_sync_unpin(&f.stream());
    send(&f.pop());
}

// F9
#[test]
fn waiting_pop_is_woken_once_per_new_key_and_not_by_updates_of_queued_keys() {
    let f = fifo();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut pop = Box::pin(f.pop());
    assert!(pop.as_mut().poll(&mut cx).is_pending());
    assert_eq!(count.0.load(Ordering::SeqCst), 0, "waiting costs nothing");
    f.add(cm("a", "1")).unwrap();
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    match pop.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(d)) => assert_eq!(d.key(), &key("a")),
        other => panic!("expected an item, got {other:?}"),
    }
}

// F9: cancel safety of pop
#[test]
fn dropping_a_woken_pop_passes_the_wakeup_on_and_loses_nothing() {
    let f = fifo();
    let (count1, waker1) = counting();
    let (count2, waker2) = counting();
    let mut p1 = Box::pin(f.pop());
    let mut p2 = Box::pin(f.pop());
    assert!(
        p1.as_mut()
            .poll(&mut Context::from_waker(&waker1))
            .is_pending()
    );
    assert!(
        p2.as_mut()
            .poll(&mut Context::from_waker(&waker2))
            .is_pending()
    );
    f.add(cm("a", "1")).unwrap();
    assert_eq!(count1.0.load(Ordering::SeqCst), 1, "first waiter woken");
    assert_eq!(count2.0.load(Ordering::SeqCst), 0);
    drop(p1); // cancelled after being woken, before taking the item
    assert_eq!(count2.0.load(Ordering::SeqCst), 1, "wakeup passed on");
    match p2.as_mut().poll(&mut Context::from_waker(&waker2)) {
        Poll::Ready(Ok(d)) => assert_eq!(d.key(), &key("a")),
        other => panic!("expected an item, got {other:?}"),
    }
}

// F9: cancel safety of the stream
#[test]
fn dropping_a_stream_between_polls_loses_nothing() {
    let f = fifo();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut stream = f.stream();
    assert!(Pin::new(&mut stream).poll_next(&mut cx).is_pending());
    f.add(cm("a", "1")).unwrap();
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    drop(stream);
    let mut other = f.stream();
    match Pin::new(&mut other).poll_next(&mut cx) {
        Poll::Ready(Some(d)) => assert_eq!(d.key(), &key("a")),
        other => panic!("expected an item, got {other:?}"),
    }
}

// F9: a stream that yielded an item must not stay registered, or it would
// swallow a wakeup meant for another consumer while nobody polls it
#[test]
fn a_stream_that_is_not_polled_does_not_steal_wakeups() {
    let f = fifo();
    let (pop_wakes, pop_waker) = counting();
    let (_, stream_waker) = counting();
    let mut pop = Box::pin(f.pop());
    let mut stream = f.stream();
    assert!(
        pop.as_mut()
            .poll(&mut Context::from_waker(&pop_waker))
            .is_pending()
    );
    assert!(
        Pin::new(&mut stream)
            .poll_next(&mut Context::from_waker(&stream_waker))
            .is_pending()
    );
    f.add(cm("a", "1")).unwrap();
    assert_eq!(pop_wakes.0.load(Ordering::SeqCst), 1, "oldest waiter woken");
    // The stream is polled first (say, by a select! loop) and takes the item.
    assert!(matches!(
        Pin::new(&mut stream).poll_next(&mut Context::from_waker(&stream_waker)),
        Poll::Ready(Some(_))
    ));
    assert!(
        pop.as_mut()
            .poll(&mut Context::from_waker(&pop_waker))
            .is_pending()
    );
    // Now the stream is held but not polled; the next item must wake the pop.
    f.add(cm("b", "1")).unwrap();
    assert_eq!(
        pop_wakes.0.load(Ordering::SeqCst),
        2,
        "the waiting pop is woken"
    );
    assert!(
        pop.as_mut()
            .poll(&mut Context::from_waker(&pop_waker))
            .is_ready()
    );
}

/// Polls `fut` at most `polls` times, yielding in between; drops it if it is
/// still pending.
async fn poll_at_most<F: Future>(fut: F, polls: usize) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    for _ in 0..polls {
        if let Poll::Ready(out) = futures::poll!(fut.as_mut()) {
            return Some(out);
        }
        tokio::task::yield_now().await;
    }
    None
}

// F9: cancel safety under concurrency
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn consumers_cancelling_pops_at_random_points_lose_and_duplicate_nothing() {
    const KEYS: usize = 2_000;
    let f = fifo();
    let consumers: Vec<_> = (0..4)
        .map(|seed| {
            let f = f.clone();
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(seed);
                let mut got = Vec::new();
                loop {
                    let polls = rng.random_range(1..4);
                    match poll_at_most(f.pop(), polls).await {
                        Some(Ok(d)) => got.push(d.key().to_string()),
                        Some(Err(Error::Closed)) => return got,
                        Some(Err(e)) => panic!("{e}"),
                        None => {} // cancelled while pending
                    }
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let f = f.clone();
            tokio::spawn(async move {
                for i in 0..KEYS / 2 {
                    f.add(cm(&format!("p{p}-{i}"), "1")).unwrap();
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    f.close();
    let mut all = Vec::new();
    for c in consumers {
        all.extend(c.await.unwrap());
    }
    let distinct: BTreeSet<_> = all.iter().collect();
    assert_eq!(all.len(), KEYS, "every key popped exactly once");
    assert_eq!(distinct.len(), KEYS);
}

async fn newest_per_key_matches_last_write(coalesce: Coalesce) {
    const PRODUCERS: usize = 4;
    const KEYS_EACH: usize = 25;
    const VERSIONS: usize = 200;
    let f = DeltaFifo::new(FifoOptions::default().coalesce(coalesce));
    let consumer = tokio::spawn({
        let f = f.clone();
        async move {
            let mut newest: BTreeMap<String, u64> = BTreeMap::new();
            let mut stream = f.stream();
            while let Some(deltas) = stream.next().await {
                for d in &deltas {
                    let v: u64 = rv(d.object.object()).parse().unwrap();
                    let slot = newest.entry(deltas.key().to_string()).or_default();
                    assert!(v > *slot, "a key's versions arrive in order");
                    *slot = v;
                }
            }
            newest
        }
    });
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let f = f.clone();
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(p as u64);
                let mut next = [1u64; KEYS_EACH];
                while next.iter().any(|&v| v <= VERSIONS as u64) {
                    let k = rng.random_range(0..KEYS_EACH);
                    if next[k] > VERSIONS as u64 {
                        continue;
                    }
                    f.update(cm(&format!("p{p}-k{k}"), &next[k].to_string()))
                        .unwrap();
                    next[k] += 1;
                    if rng.random_ratio(1, 32) {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    f.close();
    let newest = consumer.await.unwrap();
    assert_eq!(newest.len(), PRODUCERS * KEYS_EACH);
    assert!(newest.values().all(|&v| v == VERSIONS as u64), "{newest:?}");
}

// F3 F9 under concurrency
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn multi_producer_consumer_sees_the_last_write_of_every_key() {
    newest_per_key_matches_last_write(Coalesce::KeepAll).await;
}

// F12 under concurrency
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn multi_producer_latest_consumer_sees_the_last_write_of_every_key() {
    newest_per_key_matches_last_write(Coalesce::Latest).await;
}
