//! The reconcile runner: one reconcile per key at a time, outcomes and
//! errors with their keys, requeues on tokio's paused clock, the store
//! lookup and cancellation (the owner mapper is in `runner_owners.rs`).

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    Notification, ObjectKey,
    queue::WorkQueue,
    runner::{Action, Error, OnCancel, Runner},
    store::Indexers,
};
use parking_lot::Mutex;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[derive(Debug, PartialEq)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed on purpose")
    }
}

/// The next reconcile start a test's reconciler reported: its key and
/// whether it was that key's first. The paused clock jumps to the deadline
/// as soon as nothing can run, so a run that stops short fails here at once
/// rather than hanging.
async fn next_start(started: &mut mpsc::UnboundedReceiver<(u32, bool)>) -> (u32, bool) {
    tokio::time::timeout(Duration::from_secs(60), started.recv())
        .await
        .expect("the runner stopped short")
        .expect("the reconciler is still there")
}

/// W3: a key added again while its reconcile runs is not handed to a second
/// reconcile, though a worker is free, and runs again once the first ends.
#[tokio::test(start_paused = true)]
async fn w3_runner_never_runs_one_key_twice_at_once() {
    const KEYS: u32 = 10;
    // Queued after every key was added again: by W2 a key queued again at
    // once would be taken before it.
    const PROBE: u32 = KEYS;
    let queue = WorkQueue::new();
    let running: Arc<Mutex<HashSet<u32>>> = Arc::default();
    let overlaps = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<HashSet<u32>>> = Arc::default();
    // Holds every first reconcile but the probe's.
    let release = CancellationToken::new();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    for key in 0..KEYS {
        queue.add(key);
    }
    let reconcile = {
        let (running, overlaps, runs, seen) = (
            running.clone(),
            overlaps.clone(),
            runs.clone(),
            seen.clone(),
        );
        let release = release.clone();
        move |key: u32| {
            // Counted where the runner starts the reconcile, so a second
            // start of a key shows before anything taken after it.
            if !running.lock().insert(key) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
            let first = seen.lock().insert(key);
            let (running, runs) = (running.clone(), runs.clone());
            let (release, started_tx) = (release.clone(), started_tx.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                started_tx.send((key, first)).unwrap();
                if first && key != PROBE {
                    release.cancelled().await;
                }
                running.lock().remove(&key);
                Ok::<_, Failed>(Action::await_change())
            }
        }
    };
    let outcomes = Runner::new(queue.clone())
        // A worker to spare while every key's first reconcile waits, so a
        // key handed out twice would be reconciled twice at once.
        .concurrency(KEYS as usize + 1)
        .run(reconcile, |_, _| Action::backoff());
    let driver = tokio::spawn(outcomes.count());

    for _ in 0..KEYS {
        assert!(next_start(&mut started).await.1, "only first reconciles");
    }
    // Every key is being reconciled when it is added again (marked dirty,
    // not queued), and then the probe.
    for key in 0..KEYS {
        queue.add(key);
    }
    queue.add(PROBE);
    assert_eq!(next_start(&mut started).await, (PROBE, true));
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a key was taken again while its reconcile ran"
    );

    // The first reconciles end; each key joins the queue then and runs once
    // more.
    release.cancel();
    for _ in 0..KEYS {
        assert!(!next_start(&mut started).await.1, "only second reconciles");
    }
    queue.shutdown();
    let outcomes = driver.await.unwrap();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(outcomes, runs.load(Ordering::SeqCst));
    assert_eq!(outcomes, 2 * KEYS as usize + 1);
    assert_eq!(*seen.lock(), (0..=PROBE).collect::<HashSet<_>>());
}

/// W7, W8: a failed reconcile is reported with its key and its key added
/// again through the queue's rate limiter, here the default one (5 ms
/// doubling); a success forgets the failures.
#[tokio::test(start_paused = true)]
async fn w7_runner_error_requeues_with_growing_delays_and_reports_the_key() {
    let queue = WorkQueue::new();
    queue.add("flaky");
    let start = Instant::now();
    let attempts: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let outcomes: Vec<_> = Runner::new(queue.clone())
        .run(
            |key| {
                let attempts = attempts.clone();
                let queue = queue.clone();
                async move {
                    let n = {
                        let mut attempts = attempts.lock();
                        attempts.push(start.elapsed());
                        attempts.len()
                    };
                    if n <= 3 {
                        return Err(Failed);
                    }
                    assert_eq!(queue.requeues(&key), 3);
                    queue.shutdown();
                    Ok(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .collect()
        .await;
    // 5 ms, then 10 ms, then 20 ms after each failure (the default limiter).
    assert_eq!(*attempts.lock(), [ms(0), ms(5), ms(15), ms(35)]);
    assert_eq!(
        outcomes[0].as_ref().unwrap_err().to_string(),
        "reconcile of flaky failed: failed on purpose"
    );
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|outcome| {
            outcome.map_err(|error| match error {
                Error::Reconcile { key, error } => (key, error),
                other => panic!("a runner reports failed reconciles only, not {other:?}"),
            })
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            Err(("flaky", Failed)),
            Err(("flaky", Failed)),
            Err(("flaky", Failed)),
            Ok(("flaky", Action::AwaitChange)),
        ]
    );
    // Success forgets the failures.
    assert_eq!(queue.requeues(&"flaky"), 0);
}

/// W5: `Action::requeue(d)` adds the key after `d`.
#[tokio::test(start_paused = true)]
async fn w5_runner_requeue_after_reconciles_again_after_the_delay() {
    let queue = WorkQueue::new();
    queue.add("poll");
    let start = Instant::now();
    let times: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let outcomes = Runner::new(queue.clone())
        .run(
            |_key| {
                let times = times.clone();
                let queue = queue.clone();
                async move {
                    let n = {
                        let mut times = times.lock();
                        times.push(start.elapsed());
                        times.len()
                    };
                    if n == 3 {
                        queue.shutdown();
                    }
                    Ok::<_, Failed>(Action::requeue(Duration::from_secs(30)))
                }
            },
            |_, _| Action::backoff(),
        )
        .count()
        .await;
    assert_eq!(outcomes, 3);
    assert_eq!(
        *times.lock(),
        [
            Duration::ZERO,
            Duration::from_secs(30),
            Duration::from_secs(60)
        ]
    );
}

/// W7: a failed key waits out its rate-limited delay outside the queue,
/// so the keys behind it are reconciled meanwhile.
#[tokio::test(start_paused = true)]
async fn w7_runner_failure_of_one_key_does_not_hold_up_others() {
    let queue = WorkQueue::new();
    for key in ["bad", "good1", "good2"] {
        queue.add(key);
    }
    let seen: Arc<Mutex<Vec<&str>>> = Arc::default();
    let outcomes: Vec<_> = Runner::new(queue.clone())
        .concurrency(1)
        .run(
            |key| {
                let seen = seen.clone();
                let queue = queue.clone();
                async move {
                    seen.lock().push(key);
                    if key == "bad" {
                        if queue.requeues(&key) >= 2 {
                            queue.shutdown();
                        }
                        return Err(Failed);
                    }
                    Ok(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .collect()
        .await;
    assert_eq!(*seen.lock(), ["bad", "good1", "good2", "bad", "bad"]);
    assert_eq!(outcomes.iter().filter(|o| o.is_err()).count(), 3);
}

/// E4: the reconciler gets what the store holds under its key, or `None`.
#[tokio::test]
async fn e4_runner_hands_the_reconciler_the_stored_object() {
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let store = writer.reader();
    let key: ObjectKey = "default/settings".parse().unwrap();
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("default".into());
    cm.metadata.name = Some("settings".into());
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    writer.apply_upsert(key.clone(), Arc::new(cm)).unwrap();
    let queue = WorkQueue::new();
    queue.add(key.clone());
    queue.add("default/missing".parse().unwrap());
    queue.shutdown();
    let seen: Arc<Mutex<HashMap<String, Option<String>>>> = Arc::default();
    Runner::new(queue)
        .run_with_store(
            store.clone(),
            |key, object: Option<Arc<ConfigMap>>| {
                let seen = seen.clone();
                async move {
                    let value = object.and_then(|o| o.data.as_ref()?.get("k").cloned());
                    seen.lock().insert(key.to_string(), value);
                    Ok::<_, Failed>(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .count()
        .await;
    let seen = seen.lock();
    assert_eq!(seen["default/settings"].as_deref(), Some("v"));
    assert_eq!(seen["default/missing"], None);
}

/// E2, with `OnCancel::Finish`.
#[tokio::test(start_paused = true)]
async fn e2_runner_cancel_finish_lets_running_reconciles_end_and_takes_no_new_keys() {
    let queue = WorkQueue::new();
    queue.add(1);
    queue.add(2);
    let token = CancellationToken::new();
    let started = Arc::new(AtomicUsize::new(0));
    let outcomes: Vec<_> = Runner::new(queue.clone())
        .concurrency(1)
        .cancel_on(token.clone(), OnCancel::Finish)
        .run(
            |_key| {
                let token = token.clone();
                let started = started.clone();
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    token.cancel();
                    tokio::time::sleep(ms(100)).await;
                    Ok::<_, Failed>(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        )
        .collect()
        .await;
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert!(
        matches!(outcomes[..], [Ok((1, Action::AwaitChange))]),
        "{outcomes:?}"
    );
    // Key 2 is still queued for whoever comes next; nothing is processing.
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.processing(), 0);
}

/// E2, with `OnCancel::Abandon`; the dropped reconcile's guard ends the
/// key's processing (W4).
#[tokio::test(start_paused = true)]
async fn e2_runner_cancel_abandon_drops_running_reconciles_and_releases_their_keys() {
    let queue = WorkQueue::new();
    queue.add(1);
    let token = CancellationToken::new();
    let finished = Arc::new(AtomicUsize::new(0));
    let stream = Runner::new(queue.clone())
        .cancel_on(token.clone(), OnCancel::Abandon)
        .run(
            |_key| {
                let finished = finished.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Failed>(Action::await_change())
                }
            },
            |_, _| Action::backoff(),
        );
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    assert_eq!(stream.count().await, 0);
    canceller.await.unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert_eq!(queue.processing(), 0);
    // The abandoned key is not lost for good: it can be queued again.
    queue.add(1);
    assert_eq!(queue.len(), 1);
}

/// E1: the stream ends once the queue is shut down and nothing is queued
/// or running.
#[tokio::test]
async fn e1_runner_ends_when_the_queue_is_shut_down_and_drained() {
    let queue = WorkQueue::new();
    let mut outcomes = Box::pin(Runner::new(queue.clone()).concurrency(2).run(
        |_key: u8| async move { Ok::<_, Failed>(Action::await_change()) },
        |_, _| Action::backoff(),
    ));
    queue.add(1);
    assert!(matches!(
        outcomes.next().await,
        Some(Ok((1, Action::AwaitChange)))
    ));
    queue.shutdown();
    assert!(outcomes.next().await.is_none());
}

/// R9 on the way from notifications to keys: a notification without a key
/// is handed to the callback, not dropped silently.
#[tokio::test]
async fn r9_feed_results_adds_keys_and_passes_errors_on() {
    use kube_informer::ext::NotificationStreamExt;
    let mut named = ConfigMap::default();
    named.metadata.namespace = Some("default".into());
    named.metadata.name = Some("app".into());
    let notifications = stream::iter([
        Notification::Added {
            object: Arc::new(named),
            in_initial_list: false,
        },
        Notification::Added {
            object: Arc::new(ConfigMap::default()),
            in_initial_list: false,
        },
    ]);
    let queue = WorkQueue::new();
    let errors = Arc::new(AtomicUsize::new(0));
    let counted = errors.clone();
    queue
        .feed_results(notifications.keys(), move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .await;
    assert_eq!(errors.load(Ordering::SeqCst), 1);
    assert_eq!(
        queue.try_next().map(|k| k.to_string()).as_deref(),
        Some("default/app")
    );
}

/// W9: a shut-down queue takes no adds, so feeding it stops.
#[tokio::test]
async fn w9_feed_stops_once_the_queue_shuts_down() {
    let queue = WorkQueue::new();
    queue.shutdown();
    // An endless stream: feed must still return.
    queue.feed(stream::repeat(1u8)).await;
    assert_eq!(queue.len(), 0);
}
