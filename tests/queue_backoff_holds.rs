//! W13: an error backoff that holds ([`WorkQueue::backoff_holds`]), against
//! client-go's rule (W5) that the default queue keeps. Time runs on tokio's
//! paused clock.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube_informer::{
    queue::{WorkQueue, item_exponential},
    runner::{Action, Runner},
};
use parking_lot::Mutex;
use tokio::time::{Instant, advance};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A queue with a plain 10 ms-doubling backoff (no token bucket), holding
/// backoffs or not.
fn queue(holds: bool) -> WorkQueue<&'static str> {
    WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            backoff_holds: holds,
            ..Default::default()
        },
        item_exponential(ms(10), Duration::from_secs(60)),
    )
}

#[tokio::test(start_paused = true)]
async fn w13_is_off_by_default_and_an_add_cuts_a_backoff_short_as_in_client_go() {
    let queue = WorkQueue::<&str>::new();
    queue.add_rate_limited("a");
    queue.add("a");
    assert_eq!(queue.len(), 1, "W5: the add hands the item out at once");
    let item = queue.try_next().unwrap();
    drop(item);
    queue.add_rate_limited("a");
    assert_eq!(
        queue.requeues(&"a"),
        2,
        "a second failure within one deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn w13_an_add_during_a_backoff_joins_its_deadline() {
    let queue = queue(true);
    let start = Instant::now();
    queue.add_rate_limited("a");
    queue.add("a");
    queue.add_after("a", ms(1));
    queue.add_after("a", Duration::ZERO);
    assert_eq!(queue.len(), 0);
    advance(ms(9)).await;
    assert_eq!(queue.len(), 0, "still inside the backoff");
    let item = queue.next().await.unwrap();
    assert_eq!(start.elapsed(), ms(10));
    drop(item);
    // Due and handed out once: the absorbed adds left nothing behind.
    assert!(queue.try_next().is_none());
    advance(ms(100)).await;
    assert!(queue.try_next().is_none());
}

#[tokio::test(start_paused = true)]
async fn w13_a_rate_limited_add_during_a_backoff_counts_no_failure() {
    let queue = queue(true);
    let start = Instant::now();
    queue.add_rate_limited("a");
    advance(ms(3)).await;
    queue.add_rate_limited("a");
    queue.add_rate_limited("a");
    assert_eq!(queue.requeues(&"a"), 1, "one failure per deadline");
    let item = queue.next().await.unwrap();
    assert_eq!(start.elapsed(), ms(10), "the first deadline stays");
    // The next failure is the second step: 20 ms.
    queue.add_rate_limited("a");
    drop(item);
    let item = queue.next().await.unwrap();
    assert_eq!(start.elapsed(), ms(30));
    assert_eq!(queue.requeues(&"a"), 2);
    drop(item);
}

#[tokio::test(start_paused = true)]
async fn w13_an_item_queued_when_its_backoff_starts_waits_for_it() {
    let queue = queue(true);
    queue.add("b");
    queue.add("a");
    queue.add_rate_limited("a");
    assert_eq!(queue.len(), 1, "a left the queue to wait out its backoff");
    assert_eq!(*queue.try_next().unwrap(), "b");
    assert!(queue.try_next().is_none());
    advance(ms(10)).await;
    assert_eq!(*queue.try_next().unwrap(), "a");
}

#[tokio::test(start_paused = true)]
async fn w13_an_item_added_while_processing_is_not_requeued_inside_its_backoff() {
    let queue = queue(true);
    let start = Instant::now();
    queue.add("a");
    let item = queue.try_next().unwrap();
    queue.add("a"); // a watch event while the reconcile runs
    queue.add_rate_limited("a"); // the reconcile failed
    drop(item);
    assert_eq!(queue.len(), 0, "the dirty mark joined the backoff");
    let item = queue.next().await.unwrap();
    assert_eq!(start.elapsed(), ms(10));
    drop(item);
    assert!(queue.try_next().is_none());
}

#[tokio::test(start_paused = true)]
async fn w13_a_backoff_replaces_the_deadline_the_item_had() {
    let queue = queue(true);
    let start = Instant::now();
    queue.add_after("a", ms(2));
    queue.add_rate_limited("a");
    let item = queue.next().await.unwrap();
    assert_eq!(
        start.elapsed(),
        ms(10),
        "the earlier plain deadline is gone"
    );
    drop(item);
    // Without holds the earlier deadline wins (W5).
    let queue = self::queue(false);
    let start = Instant::now();
    queue.add_after("a", ms(2));
    queue.add_rate_limited("a");
    let _item = queue.next().await.unwrap();
    assert_eq!(start.elapsed(), ms(2));
}

#[tokio::test(start_paused = true)]
async fn w13_after_the_deadline_adds_work_as_before() {
    let queue = queue(true);
    queue.add_rate_limited("a");
    advance(ms(10)).await;
    let item = queue.next().await.unwrap();
    queue.add("a");
    drop(item);
    assert_eq!(queue.len(), 1, "W3 again once the backoff is over");
}

#[tokio::test(start_paused = true)]
async fn w13_shutdown_drops_a_backoff_and_a_zero_backoff_adds_at_once() {
    let queue = WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            backoff_holds: true,
            ..Default::default()
        },
        item_exponential(Duration::ZERO, ms(1)),
    );
    queue.add_rate_limited("a");
    assert_eq!(queue.len(), 1, "nothing to wait out");
    let queue = self::queue(true);
    queue.add_rate_limited("a");
    queue.shutdown();
    advance(ms(100)).await;
    assert!(queue.next().await.is_none(), "W9: the backoff was dropped");
}

/// Runs a reconciler that always fails over `queue` while something adds
/// the key every millisecond (resyncs, unrelated watch events), for 300 ms;
/// returns when each reconcile ran, in ms from the start.
async fn reconciles_under_spurious_adds(queue: WorkQueue<&'static str>) -> (Vec<u64>, usize) {
    let start = Instant::now();
    let times = Arc::new(Mutex::new(Vec::new()));
    queue.add("a");
    let adds = {
        let queue = queue.clone();
        tokio::spawn(async move {
            for _ in 0..300 {
                advance(ms(1)).await;
                queue.add("a");
            }
            queue.shutdown();
        })
    };
    let seen = times.clone();
    Runner::new(queue.clone())
        .run(
            move |_key: &'static str| {
                seen.lock().push(start.elapsed().as_millis() as u64);
                async { Err::<Action, _>("fails") }
            },
            |_, _| Action::backoff(),
        )
        .for_each(|_| async {})
        .await;
    adds.await.unwrap();
    let times = times.lock().clone();
    (times, queue.requeues(&"a"))
}

#[tokio::test(start_paused = true)]
async fn w13_under_spurious_adds_reconciles_follow_the_backoff() {
    let (times, requeues) = reconciles_under_spurious_adds(queue(true)).await;
    // 10, 20, 40, 80, 160 ms backoffs after the first failure at 0 ms.
    assert_eq!(times, [0, 10, 30, 70, 150], "one reconcile per deadline");
    assert_eq!(requeues, 5);

    // client-go's rule: every add hands the key out, every failure is a
    // step, and the reconciles run about once per millisecond.
    let (times, requeues) = reconciles_under_spurious_adds(queue(false)).await;
    assert!(times.len() > 100, "{} reconciles", times.len());
    assert!(requeues > 100, "{requeues} failures counted");
}
