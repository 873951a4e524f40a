//! The work queue rules W1–W12 (see `kube_informer::queue`), one or more
//! tests per rule, named after it. Time runs on tokio's paused clock.

use std::{sync::Arc, task::Poll, time::Duration};

use futures::{StreamExt, poll};
use kube_informer::queue::{
    RateLimiter, WorkQueue, default_rate_limiter, item_exponential, token_bucket,
};
use tokio::time::{Instant, advance};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Takes every queued item without waiting, releasing each at once.
fn drain<T: std::hash::Hash + Eq + Clone + Send + 'static>(queue: &WorkQueue<T>) -> Vec<T> {
    std::iter::from_fn(|| queue.try_next().map(|item| item.item().clone())).collect()
}

#[tokio::test]
async fn w1_add_of_a_waiting_item_is_deduplicated() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    assert_eq!(queue.len(), 2);
    assert_eq!(drain(&queue), ["a", "b"]);
    assert!(queue.try_next().is_none());
}

#[tokio::test]
async fn w2_items_come_out_in_the_order_they_joined() {
    let queue = WorkQueue::new();
    for i in [3, 1, 2, 1, 3] {
        queue.add(i);
    }
    assert_eq!(drain(&queue), [3, 1, 2]);
}

#[tokio::test]
async fn w3_an_item_added_while_processing_waits_for_its_guard() {
    let queue = WorkQueue::new();
    queue.add("a");
    let held = queue.next().await.unwrap();
    queue.add("a");
    queue.add("a");
    queue.add("b");
    // "a" is dirty but not queued: nobody else can take it.
    assert_eq!(queue.len(), 1);
    let b = queue.try_next().unwrap();
    assert_eq!(*b, "b");
    assert!(queue.try_next().is_none());
    drop(held);
    // Once released it joins the tail, exactly once.
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.try_next().unwrap(), "a");
    assert!(queue.try_next().is_none());
}

#[tokio::test]
async fn w3_a_waiting_consumer_gets_the_item_when_its_holder_releases_it() {
    let queue = WorkQueue::new();
    queue.add(1);
    let held = queue.next().await.unwrap();
    queue.add(1);
    let mut next = Box::pin(queue.next());
    assert!(matches!(poll!(next.as_mut()), Poll::Pending));
    drop(held);
    match poll!(next.as_mut()) {
        Poll::Ready(Some(item)) => assert_eq!(*item, 1),
        other => panic!("expected the released item, got {other:?}"),
    }
}

#[tokio::test]
async fn w4_dropping_the_guard_ends_processing() {
    let queue = WorkQueue::new();
    queue.add("a");
    let item = queue.next().await.unwrap();
    assert_eq!(queue.processing(), 1);
    drop(item);
    assert_eq!(queue.processing(), 0);
    assert!(queue.is_empty());
    // A worker that fails half-way (here: panics) still releases its key.
    queue.add("b");
    let q = queue.clone();
    let worker = tokio::spawn(async move {
        let _item = q.next().await.unwrap();
        panic!("reconcile bug");
    });
    assert!(worker.await.is_err());
    assert_eq!(queue.processing(), 0);
    queue.add("b");
    assert_eq!(drain(&queue), ["b"]);
}

#[tokio::test(start_paused = true)]
async fn w5_add_after_adds_when_the_delay_has_passed() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("a", ms(50));
    assert_eq!(queue.len(), 0);
    advance(ms(49)).await;
    assert_eq!(queue.len(), 0);
    advance(ms(1)).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.next().await.unwrap(), "a");
    assert_eq!(start.elapsed(), ms(50));
}

#[tokio::test(start_paused = true)]
async fn w5_a_zero_delay_adds_at_once() {
    let queue = WorkQueue::new();
    queue.add_after("a", Duration::ZERO);
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn w5_the_earlier_deadline_wins() {
    let queue = WorkQueue::new();
    queue.add_after("a", ms(100));
    queue.add_after("a", ms(30));
    queue.add_after("a", ms(60));
    advance(ms(30)).await;
    assert_eq!(drain(&queue), ["a"]);
    // The later deadlines were dropped, not kept as extra adds.
    advance(ms(200)).await;
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn w5_a_sleeping_consumer_wakes_for_a_new_earlier_deadline() {
    let queue = WorkQueue::new();
    queue.add_after("late", Duration::from_secs(60));
    let q = queue.clone();
    let consumer = tokio::spawn(async move {
        let item = q.next().await.unwrap();
        (*item, Instant::now())
    });
    tokio::task::yield_now().await;
    let start = Instant::now();
    queue.add_after("early", ms(10));
    let (item, at) = consumer.await.unwrap();
    assert_eq!(item, "early");
    assert_eq!(at - start, ms(10));
}

#[tokio::test(start_paused = true)]
async fn w5_a_delayed_add_is_independent_of_the_queue() {
    let queue = WorkQueue::new();
    queue.add_after("a", ms(10));
    queue.add("a");
    let item = queue.next().await.unwrap();
    drop(item);
    // The direct add did not cancel the deadline: "a" comes once more.
    advance(ms(10)).await;
    assert_eq!(drain(&queue), ["a"]);
}

#[tokio::test(start_paused = true)]
async fn w5_a_due_item_that_is_processing_is_requeued_at_release() {
    let queue = WorkQueue::new();
    queue.add("a");
    let held = queue.next().await.unwrap();
    queue.add_after("a", ms(10));
    advance(ms(10)).await;
    assert_eq!(queue.len(), 0);
    drop(held);
    assert_eq!(drain(&queue), ["a"]);
}

#[tokio::test(start_paused = true)]
async fn w6_due_items_join_in_deadline_order_before_later_adds() {
    let queue = WorkQueue::new();
    queue.add_after("c", ms(30));
    queue.add_after("a", ms(10));
    queue.add_after("b", ms(20));
    queue.add_after("a2", ms(10));
    advance(ms(40)).await;
    queue.add("direct");
    assert_eq!(drain(&queue), ["a", "a2", "b", "c", "direct"]);
}

#[tokio::test(start_paused = true)]
async fn w7_add_rate_limited_waits_as_the_limiter_says_and_forget_resets() {
    let queue = WorkQueue::with_config(
        kube_informer::queue::QueueConfig::default(),
        item_exponential(ms(10), Duration::from_secs(1)),
    );
    let start = Instant::now();
    for expected in [10, 20, 40] {
        let t = Instant::now();
        queue.add_rate_limited("a");
        let item = queue.next().await.unwrap();
        assert_eq!(*item, "a");
        assert_eq!(t.elapsed(), ms(expected));
    }
    assert_eq!(queue.requeues(&"a"), 3);
    assert_eq!(queue.requeues(&"b"), 0);
    queue.forget(&"a");
    assert_eq!(queue.requeues(&"a"), 0);
    let t = Instant::now();
    queue.add_rate_limited("a");
    drop(queue.next().await.unwrap());
    assert_eq!(t.elapsed(), ms(10));
    assert_eq!(start.elapsed(), ms(80));
}

#[tokio::test(start_paused = true)]
async fn w7_a_custom_limiter_is_used() {
    struct Fixed;
    impl RateLimiter<u32> for Fixed {
        fn when(&self, item: &u32) -> Duration {
            ms(u64::from(*item))
        }
        fn forget(&self, _: &u32) {}
        fn requeues(&self, _: &u32) -> usize {
            7
        }
    }
    let queue = WorkQueue::with_config(kube_informer::queue::QueueConfig::default(), Fixed);
    queue.add_rate_limited(30);
    queue.add_rate_limited(20);
    assert_eq!(queue.requeues(&1), 7);
    advance(ms(20)).await;
    assert_eq!(drain(&queue), [20]);
    advance(ms(10)).await;
    assert_eq!(drain(&queue), [30]);
}

#[tokio::test(start_paused = true)]
async fn w8_default_limiter_backs_off_per_item_from_5ms_to_1000s() {
    let limiter = default_rate_limiter::<&str>();
    let delays: Vec<_> = (0..20).map(|_| limiter.when(&"a")).collect();
    assert_eq!(delays[0], ms(5));
    assert_eq!(delays[1], ms(10));
    assert_eq!(delays[10], ms(5 << 10));
    assert_eq!(delays[17], ms(5 << 17)); // 655.36 s
    assert_eq!(delays[18], Duration::from_secs(1000)); // capped
    assert_eq!(delays[19], Duration::from_secs(1000));
    assert_eq!(limiter.requeues(&"a"), 20);
    // Per item: "b" starts at 5 ms.
    assert_eq!(limiter.when(&"b"), ms(5));
    // A huge failure count saturates instead of overflowing.
    let exp = item_exponential(ms(5), Duration::from_secs(1000));
    for _ in 0..2000 {
        exp.when(&"x");
    }
    assert_eq!(exp.when(&"x"), Duration::from_secs(1000));
}

#[tokio::test(start_paused = true)]
async fn w8_default_limiter_has_an_overall_bucket_of_10_per_second_burst_100() {
    let limiter = default_rate_limiter::<u32>();
    // 100 distinct items (first failure, 5 ms each) use up the burst.
    for i in 0..100 {
        assert_eq!(limiter.when(&i), ms(5));
    }
    // Then one token per 100 ms, shared by all items.
    assert_eq!(limiter.when(&100), ms(100));
    assert_eq!(limiter.when(&101), ms(200));
    // One second refills ten tokens, of which the two reservations above
    // owed two: the bucket no longer delays, the per-item 5 ms remains.
    advance(Duration::from_secs(1)).await;
    assert_eq!(limiter.when(&102), ms(5));
    let bucket = token_bucket::<u32>(10.0, 100);
    advance(Duration::from_secs(60)).await;
    assert_eq!(bucket.when(&0), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn w9_shutdown_refuses_adds_and_drops_deadlines_but_hands_out_what_is_queued() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("b");
    queue.add_after("later", ms(10));
    let held = queue.next().await.unwrap();
    queue.add("a"); // dirty while processing, before the shutdown
    queue.shutdown();
    assert!(queue.is_shutting_down());
    queue.add("c");
    queue.add_after("d", ms(1));
    queue.add_rate_limited("e");
    advance(ms(20)).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.next().await.unwrap(), "b");
    // Nothing queued: next ends even though "a" is processing and dirty.
    assert!(queue.next().await.is_none());
    drop(held);
    // "a" was marked before the shutdown, so it is queued again, as in client-go.
    assert_eq!(*queue.next().await.unwrap(), "a");
    assert!(queue.next().await.is_none());
}

#[tokio::test]
async fn w9_shutdown_wakes_waiting_consumers_and_ends_the_stream() {
    let queue = WorkQueue::<u32>::new();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let q = queue.clone();
            tokio::spawn(async move { q.next().await.map(|i| *i) })
        })
        .collect();
    let stream = tokio::spawn({
        let q = queue.clone();
        async move { q.stream().map(|i| *i).collect::<Vec<_>>().await }
    });
    tokio::task::yield_now().await;
    queue.shutdown();
    for waiter in waiters {
        assert_eq!(waiter.await.unwrap(), None);
    }
    assert!(stream.await.unwrap().is_empty());
}

#[tokio::test]
async fn w10_shutdown_with_drain_waits_for_every_guard() {
    let queue = WorkQueue::new();
    queue.add(1);
    queue.add(2);
    let one = queue.next().await.unwrap();
    let two = queue.next().await.unwrap();
    let mut drain = Box::pin(queue.shutdown_with_drain());
    assert!(matches!(poll!(drain.as_mut()), Poll::Pending));
    drop(one);
    assert!(matches!(poll!(drain.as_mut()), Poll::Pending));
    drop(two);
    assert!(matches!(poll!(drain.as_mut()), Poll::Ready(())));
}

#[tokio::test]
async fn w10_shutdown_stops_a_drain_from_waiting() {
    let queue = WorkQueue::new();
    queue.add(1);
    let _held = queue.next().await.unwrap();
    let mut drain = Box::pin(queue.shutdown_with_drain());
    assert!(matches!(poll!(drain.as_mut()), Poll::Pending));
    queue.shutdown();
    assert!(matches!(poll!(drain.as_mut()), Poll::Ready(())));
}

#[tokio::test(start_paused = true)]
async fn w11_len_counts_only_queued_items() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("b");
    queue.add_after("c", ms(5));
    let _a = queue.next().await.unwrap();
    assert_eq!(queue.len(), 1);
    advance(ms(5)).await;
    assert_eq!(queue.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn w12_memory_is_bounded_by_distinct_items() {
    let queue = WorkQueue::new();
    for round in 0..10_000u64 {
        let key = round % 10;
        queue.add(key);
        queue.add_after(key, ms(1_000_000 - round));
    }
    assert_eq!(queue.len(), 10);
    assert!(format!("{queue:?}").contains("delayed: 10"));
}

#[tokio::test]
async fn next_is_cancel_safe() {
    let queue = WorkQueue::new();
    let mut first = Box::pin(queue.next());
    assert!(matches!(poll!(first.as_mut()), Poll::Pending));
    let second = tokio::spawn({
        let q = queue.clone();
        async move { *q.next().await.unwrap() }
    });
    tokio::task::yield_now().await;
    queue.add(7);
    // The first waiter is dropped without taking the item: the second gets it.
    drop(first);
    assert_eq!(second.await.unwrap(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_consumers_each_item_once() {
    let queue = Arc::new(WorkQueue::new());
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let q = queue.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some(item) = q.next().await {
                    got.push(*item);
                }
                got
            })
        })
        .collect();
    for i in 0..1000u32 {
        queue.add(i);
    }
    queue.shutdown_with_drain().await;
    let mut all = Vec::new();
    for c in consumers {
        all.extend(c.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (0..1000).collect::<Vec<_>>());
}

#[test]
fn public_types_are_send_and_sync() {
    use kube_informer::{ObjectKey, queue::WorkItem, runner::Runner};
    fn send_sync<T: Send + Sync>() {}
    send_sync::<WorkQueue<ObjectKey>>();
    send_sync::<WorkItem<ObjectKey>>();
    send_sync::<Runner<ObjectKey>>();
    let queue = WorkQueue::<ObjectKey>::new();
    fn is_send<T: Send>(_: &T) {}
    is_send(&queue.stream());
    is_send(&queue.next());
    is_send(&queue.shutdown_with_drain());
}
