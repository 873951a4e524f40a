//! How a runner's stream ends (E1, E2) and how it shares its thread (E3):
//! the rules in the `runner` module docs.
//!
//! Each closing test has one key `a` whose first reconcile adds `a` again
//! while it runs (W3 marks it dirty) and then shuts the queue down or
//! cancels the runner; a second reconcile of `a` is then due by W9 unless
//! the runner was cancelled.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use kube_informer::{
    queue::WorkQueue,
    runner::{Action, OnCancel, Runner},
};
use tokio_util::sync::CancellationToken;

#[derive(Debug)]
struct Never;

/// How the first reconcile of `a` ends the run.
#[derive(Clone, Copy)]
enum Ending {
    Shutdown,
    ShutdownWithDrain,
    Cancel(OnCancel),
}

struct Outcome {
    /// Reconciles of `a` started.
    started: usize,
    /// Reconciles of `a` finished and reported by the stream.
    reported: usize,
    /// Keys still queued when the stream ended.
    queued: usize,
    /// Whether `shutdown_with_drain` returned.
    drained: bool,
}

/// Runs key `a` with two workers (so the runner waits on the queue while
/// `a` runs, and sees it end) until the stream ends.
async fn run(ending: Ending) -> Outcome {
    let queue = WorkQueue::new();
    let token = CancellationToken::new();
    let started = Arc::new(AtomicUsize::new(0));
    let drained = Arc::new(AtomicBool::new(false));
    queue.add("a");
    let mut runner = Runner::new(queue.clone()).concurrency(2);
    if let Ending::Cancel(on_cancel) = ending {
        runner = runner.cancel_on(token.clone(), on_cancel);
    }
    let reported = runner
        .run(
            |key: &'static str| {
                let (queue, token) = (queue.clone(), token.clone());
                let (started, drained) = (started.clone(), drained.clone());
                async move {
                    if started.fetch_add(1, Ordering::SeqCst) == 0 {
                        queue.add(key);
                        match ending {
                            Ending::Shutdown => queue.shutdown(),
                            Ending::ShutdownWithDrain => {
                                let queue = queue.clone();
                                tokio::spawn(async move {
                                    queue.shutdown_with_drain().await;
                                    drained.store(true, Ordering::SeqCst);
                                });
                            }
                            Ending::Cancel(_) => token.cancel(),
                        }
                        // The runner polls the queue (or its token) meanwhile.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Ok::<_, Never>(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .count()
        .await;
    tokio::task::yield_now().await;
    Outcome {
        started: started.load(Ordering::SeqCst),
        reported,
        queued: queue.len(),
        drained: drained.load(Ordering::SeqCst),
    }
}

// E1, W9
#[tokio::test(start_paused = true)]
async fn e1_after_shutdown_a_key_added_during_its_reconcile_runs_again() {
    let outcome = run(Ending::Shutdown).await;
    assert_eq!((outcome.started, outcome.reported), (2, 2));
    assert_eq!(outcome.queued, 0, "the stream ended with nothing queued");
}

// E1, W10
#[tokio::test(start_paused = true)]
async fn e1_after_shutdown_with_drain_a_key_added_during_its_reconcile_runs_again() {
    let outcome = run(Ending::ShutdownWithDrain).await;
    assert_eq!((outcome.started, outcome.reported), (2, 2));
    assert_eq!(outcome.queued, 0);
    assert!(outcome.drained, "the drain ended with the runner");
}

// E2
#[tokio::test(start_paused = true)]
async fn e2_cancel_with_finish_reports_the_running_reconcile_and_takes_no_key() {
    let outcome = run(Ending::Cancel(OnCancel::Finish)).await;
    assert_eq!((outcome.started, outcome.reported), (1, 1));
    assert_eq!(outcome.queued, 1, "a stays queued for another runner");
}

// E2
#[tokio::test(start_paused = true)]
async fn e2_cancel_with_abandon_drops_the_running_reconcile_and_takes_no_key() {
    let outcome = run(Ending::Cancel(OnCancel::Abandon)).await;
    assert_eq!((outcome.started, outcome.reported), (1, 0));
    assert_eq!(outcome.queued, 1, "a's guard dropped with its reconcile");
}

// E1: with many keys and workers, every key added while its reconcile ran
// is reconciled again before the stream ends, the last ones included.
#[tokio::test(start_paused = true)]
async fn e1_after_shutdown_every_re_added_key_is_reconciled_before_the_end() {
    let queue = WorkQueue::new();
    for key in 0..20u32 {
        queue.add(key);
    }
    let first_runs = Arc::new(AtomicUsize::new(0));
    let runs: Arc<parking_lot::Mutex<Vec<u32>>> = Arc::default();
    let reported = Runner::new(queue.clone())
        .concurrency(4)
        .run(
            |key: u32| {
                let (queue, first_runs, runs) = (queue.clone(), first_runs.clone(), runs.clone());
                async move {
                    let first = {
                        let mut runs = runs.lock();
                        runs.push(key);
                        runs.iter().filter(|k| **k == key).count() == 1
                    };
                    if first {
                        // Added again while it runs: due once more (W3, W9).
                        queue.add(key);
                        if first_runs.fetch_add(1, Ordering::SeqCst) == 19 {
                            // The queue is empty now; four reconciles run.
                            queue.shutdown();
                        }
                        // First runs end one by one; second runs at once, so
                        // the runner finds the queue empty while first runs
                        // (with their keys due again) still go on.
                        tokio::time::sleep(Duration::from_millis(u64::from(key % 4) + 1)).await;
                    }
                    Ok::<_, Never>(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .count()
        .await;
    let mut runs = runs.lock().clone();
    runs.sort_unstable();
    let twice: Vec<u32> = (0..20).flat_map(|k| [k, k]).collect();
    assert_eq!(runs, twice, "every key reconciled twice");
    assert_eq!(reported, 40);
    assert_eq!(queue.len(), 0);
}

// E3: a reconciler that adds its own key on every run keeps the runner
// ready forever; the task polling it still yields, so another task on the
// same single-threaded runtime runs.
#[tokio::test(flavor = "current_thread")]
async fn e3_a_runner_with_work_always_ready_lets_other_tasks_run() {
    let queue = WorkQueue::new();
    queue.add("busy");
    let other_ran = Arc::new(AtomicBool::new(false));
    let other = tokio::spawn({
        let other_ran = other_ran.clone();
        async move { other_ran.store(true, Ordering::SeqCst) }
    });
    let mut reconciles = std::pin::pin!(Runner::new(queue.clone()).run(
        |key| {
            let queue = queue.clone();
            async move {
                queue.add(key);
                Ok::<_, Never>(Action::await_change())
            }
        },
        |_, _| Action::backoff()
    ));
    let mut items = 0u64;
    while !other_ran.load(Ordering::SeqCst) {
        reconciles
            .next()
            .await
            .expect("the runner never ends here")
            .expect("the reconcile succeeds");
        items += 1;
        // Without yielding, the other task would never run and this loop
        // would never end: fail instead.
        assert!(items < 100_000, "the runner never yielded");
    }
    other.await.unwrap();
    // Tokio's budget is 128 units per task poll: about that many items,
    // not thousands, pass before the other task gets its turn.
    assert!(items <= 256, "{items} items before the other task ran");
}
