//! W14 priorities and W15 ageing ([`WorkQueue::priorities`]), against the
//! single first-in first-out queue that the default keeps. Time runs on
//! tokio's paused clock.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kube_informer::queue::{DEFAULT_PRIORITY_AGEING, Priority, WorkQueue, item_exponential};
use tokio::time::{Instant, advance};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A queue with priorities on and an ageing bound of `ageing`.
fn queue(ageing: Duration) -> WorkQueue<String> {
    WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            priorities: true,
            priority_ageing: ageing,
            ..Default::default()
        },
        kube_informer::queue::default_rate_limiter(),
    )
}

/// Hands out and releases everything queued, in order.
fn drain(queue: &WorkQueue<String>) -> Vec<String> {
    std::iter::from_fn(|| queue.try_next().map(|item| item.item().clone())).collect()
}

fn low(queue: &WorkQueue<String>, item: &str) {
    queue.add_with_priority(item.to_owned(), Priority::Low);
}

fn high(queue: &WorkQueue<String>, item: &str) {
    queue.add_with_priority(item.to_owned(), Priority::High);
}

#[tokio::test(start_paused = true)]
async fn w14_is_off_by_default_and_a_low_add_is_a_plain_add_in_fifo_order() {
    let queue = WorkQueue::<String>::new();
    low(&queue, "a");
    high(&queue, "b");
    low(&queue, "c");
    high(&queue, "a"); // W1: already queued, keeps its place
    assert_eq!(queue.len_at(Priority::High), 3);
    assert_eq!(queue.len_at(Priority::Low), 0);
    assert_eq!(drain(&queue), ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn w14_high_items_go_before_low_ones_and_each_level_is_fifo() {
    let queue = queue(DEFAULT_PRIORITY_AGEING);
    low(&queue, "l1");
    high(&queue, "h1");
    low(&queue, "l2");
    queue.add("h2".to_owned()); // `add` is high
    assert_eq!(queue.len(), 4, "W11: both levels count");
    assert_eq!(
        (queue.len_at(Priority::High), queue.len_at(Priority::Low)),
        (2, 2)
    );
    assert_eq!(drain(&queue), ["h1", "h2", "l1", "l2"]);
}

#[tokio::test(start_paused = true)]
async fn w14_a_queued_low_item_added_high_moves_up_and_is_handed_out_once() {
    let queue = queue(DEFAULT_PRIORITY_AGEING);
    low(&queue, "a");
    low(&queue, "b");
    high(&queue, "c");
    high(&queue, "a");
    assert_eq!(queue.len(), 3, "W1: still queued once");
    assert_eq!(
        (queue.len_at(Priority::High), queue.len_at(Priority::Low)),
        (2, 1)
    );
    assert_eq!(
        drain(&queue),
        ["c", "a", "b"],
        "behind the high items already queued"
    );
    assert_eq!(queue.metrics().adds, 3, "moving up is not a new add");
}

#[tokio::test(start_paused = true)]
async fn w14_a_queued_high_item_added_low_stays_high() {
    let queue = queue(DEFAULT_PRIORITY_AGEING);
    low(&queue, "l");
    high(&queue, "a");
    low(&queue, "a");
    assert_eq!(
        (queue.len_at(Priority::High), queue.len_at(Priority::Low)),
        (1, 1)
    );
    assert_eq!(drain(&queue), ["a", "l"]);
}

#[tokio::test(start_paused = true)]
async fn w14_an_item_processing_rejoins_at_the_highest_level_it_was_added_at() {
    let queue = queue(DEFAULT_PRIORITY_AGEING);
    for (adds, expected) in [
        (&[Priority::Low][..], ["other", "x"]),
        (&[Priority::Low, Priority::High], ["x", "other"]),
        (&[Priority::High, Priority::Low], ["x", "other"]),
    ] {
        high(&queue, "x");
        let x = queue.try_next().unwrap();
        for priority in adds {
            queue.add_with_priority("x".to_owned(), *priority);
        }
        assert_eq!(queue.len(), 0, "W3: not queued while processing");
        low(&queue, "other");
        drop(x);
        assert_eq!(drain(&queue), expected, "after adds {adds:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn w14_delayed_and_rate_limited_adds_come_due_high() {
    let queue: WorkQueue<String> = WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            priorities: true,
            ..Default::default()
        },
        item_exponential(ms(10), Duration::from_secs(60)),
    );
    low(&queue, "listed");
    queue.add_after("requeued".to_owned(), ms(5));
    queue.add_rate_limited("failed".to_owned());
    advance(ms(10)).await;
    assert_eq!(drain(&queue), ["requeued", "failed", "listed"]);
}

#[tokio::test(start_paused = true)]
async fn w14_w13_a_backoff_that_holds_takes_a_queued_low_item_out_of_the_queue() {
    let queue: WorkQueue<String> = WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            priorities: true,
            backoff_holds: true,
            ..Default::default()
        },
        item_exponential(ms(10), Duration::from_secs(60)),
    );
    low(&queue, "a");
    low(&queue, "b");
    queue.add_rate_limited("a".to_owned());
    assert_eq!(queue.len_at(Priority::Low), 1);
    assert_eq!(drain(&queue), ["b"]);
    advance(ms(10)).await;
    assert_eq!(drain(&queue), ["a"], "due after its backoff, once");
}

#[tokio::test(start_paused = true)]
async fn w15_once_the_oldest_low_item_has_aged_it_gets_the_hand_out_after_each_high_one() {
    let queue = queue(ms(100));
    for i in 0..3 {
        low(&queue, &format!("l{i}"));
    }
    for i in 0..6 {
        high(&queue, &format!("h{i}"));
    }
    let first = queue.try_next().unwrap();
    assert_eq!(*first, "h0", "W14: nothing has aged yet");
    drop(first);
    advance(ms(99)).await;
    assert_eq!(*queue.try_next().unwrap(), "h1", "not aged at 99 ms");
    advance(ms(1)).await;
    assert_eq!(
        drain(&queue),
        ["l0", "h2", "l1", "h3", "l2", "h4", "h5"],
        "aged at 100 ms: every second hand-out goes to the oldest low item"
    );
}

#[tokio::test(start_paused = true)]
async fn w15_a_low_items_age_counts_from_when_it_joined_the_low_queue() {
    let queue = queue(ms(100));
    low(&queue, "old");
    advance(ms(60)).await;
    low(&queue, "old"); // W1: no new place, no new age
    low(&queue, "young");
    for i in 0..4 {
        high(&queue, &format!("h{i}"));
    }
    advance(ms(40)).await;
    // "old" has waited 100 ms (the second add did not reset its age),
    // "young" 40 ms.
    assert_eq!(drain(&queue), ["old", "h0", "h1", "h2", "h3", "young"]);
}

#[tokio::test(start_paused = true)]
async fn w15_a_zero_ageing_alternates_and_a_maximal_one_never_ages() {
    let even = queue(Duration::ZERO);
    let strict = queue(Duration::MAX);
    for queue in [&even, &strict] {
        low(queue, "l0");
        low(queue, "l1");
        high(queue, "h0");
        high(queue, "h1");
    }
    advance(Duration::from_secs(3600)).await;
    assert_eq!(drain(&even), ["l0", "h0", "l1", "h1"]);
    assert_eq!(drain(&strict), ["h0", "h1", "l0", "l1"]);
}

/// W15's bound under load: one worker takes `RECONCILE` per item (100 items
/// a second) while a producer adds a new high item every 5 ms (200 a
/// second, twice what the worker can take), so high items pile up without
/// end. Every low item `i` (with `i` low items ahead of it) must still
/// start within `AGEING + 2 × (i + 1) × RECONCILE`, and none before
/// `AGEING` (W14: high items go first until it ages).
#[tokio::test(start_paused = true)]
async fn w15_under_sustained_high_load_above_the_reconcile_rate_every_low_key_is_reconciled_within_the_bound()
 {
    const AGEING: Duration = Duration::from_millis(200);
    const RECONCILE: Duration = Duration::from_millis(10);
    const LOW: usize = 20;
    let queue = queue(AGEING);
    let start = Instant::now();
    // The producer: a new high item every 5 ms, the first before the low
    // items, until the test ends.
    high(&queue, "h0");
    let producer = tokio::spawn({
        let queue = queue.clone();
        async move {
            let mut tick = tokio::time::interval(ms(5));
            tick.tick().await;
            for n in 1.. {
                tick.tick().await;
                high(&queue, &format!("h{n}"));
            }
        }
    });
    for i in 0..LOW {
        low(&queue, &format!("l{i}"));
    }
    // The worker: records when each item starts and ends.
    let reconciled: Arc<Mutex<HashMap<String, (Duration, Duration)>>> = Arc::default();
    let worker = tokio::spawn({
        let (queue, reconciled) = (queue.clone(), reconciled.clone());
        async move {
            let mut high_started = 0;
            loop {
                let item = queue.next().await.unwrap();
                let started = start.elapsed();
                tokio::time::sleep(RECONCILE).await;
                if item.starts_with('l') {
                    reconciled
                        .lock()
                        .unwrap()
                        .insert(item.item().clone(), (started, start.elapsed()));
                    if reconciled.lock().unwrap().len() == LOW {
                        return high_started;
                    }
                } else {
                    high_started += 1;
                }
            }
        }
    });
    let high_started = tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .expect("every low item is reconciled")
        .unwrap();
    producer.abort();
    let reconciled = reconciled.lock().unwrap();
    for i in 0..LOW {
        let (started, ended) = reconciled[&format!("l{i}")];
        let bound = AGEING + RECONCILE * 2 * (i as u32 + 1);
        assert!(
            started >= AGEING,
            "W14: l{i} started at {started:?}, before it aged"
        );
        assert!(
            started <= bound,
            "W15: l{i} started at {started:?}, after its bound {bound:?}"
        );
        assert!(ended <= bound + RECONCILE);
    }
    assert!(
        queue.len_at(Priority::High) > 10,
        "the high load outran the worker: {} high items wait",
        queue.len_at(Priority::High)
    );
    assert!(
        high_started >= LOW,
        "W15: high items kept their turns while low ones aged out ({high_started} started)"
    );
}
