//! A runner gated by a shard's `KeyGate` (`Runner::gate`): an unowned key is
//! never reconciled, a key lost while it waited in the queue is dropped
//! (and its failures forgotten), and a handover waits for the reconcile in
//! flight on a released key. On tokio's paused clock.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use kube_informer::{
    ObjectKey,
    queue::WorkQueue,
    runner::{Action, Runner},
    shard::{KeyGate, Ownership},
    unstable::shard::{Member, MemberId, MemberSet},
};
use parking_lot::Mutex;
use proptest::prelude::*;
use tokio::time::{Instant, sleep};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn key(name: &str) -> ObjectKey {
    format!("default/{name}").parse().expect("a valid key")
}

fn set(ids: &str) -> MemberSet {
    MemberSet::new(ids.chars().map(|id| Member::new(id.to_string(), "1")))
}

/// Ownerships of member `a` a test switches between.
fn ownerships() -> Vec<Ownership> {
    let a = || MemberId::new("a");
    vec![
        Ownership::nothing(),
        Ownership::everything(),
        Ownership::of(a(), [set("abc")]),
        Ownership::of(a(), [set("ab")]),
        Ownership::of(a(), [set("ac")]),
        Ownership::of(a(), [set("ab"), set("abc")]),
    ]
}

/// Waits until no work is in flight on a key the gate no longer owns: what
/// a membership task waits for before it acknowledges a handover. It wakes
/// when a guard drops, so it returns at the very instant the last such work
/// ends. On the paused clock a handover that never ends reaches the
/// deadline at once instead of hanging.
async fn handed_over(gate: &KeyGate) {
    let wait = async {
        loop {
            let released = gate.released();
            tokio::pin!(released);
            // Registered before the check, so a guard that drops between the
            // check and the wait still wakes it.
            if futures::poll!(released.as_mut()).is_ready() {
                continue;
            }
            if !gate.released_busy() {
                return;
            }
            released.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .expect("the handover ends");
}

#[tokio::test(start_paused = true)]
async fn gate_unowned_keys_are_never_reconciled() {
    let gate = KeyGate::new(Ownership::of(MemberId::new("a"), [set("abc")]));
    let keys: Vec<ObjectKey> = (0..60).map(|i| key(&format!("cm-{i}"))).collect();
    let queue = WorkQueue::new();
    for key in &keys {
        queue.add(key.clone());
    }
    queue.shutdown();
    let reconciled: Vec<ObjectKey> = Runner::new(queue.clone())
        .concurrency(3)
        .gate(gate.clone())
        .run(
            |_key| async {
                sleep(ms(10)).await;
                Ok::<_, Infallible>(Action::await_change())
            },
            |_, _| Action::backoff(),
        )
        .map(|outcome| outcome.expect("infallible").0)
        .collect()
        .await;
    let owned: Vec<ObjectKey> = keys.iter().filter(|k| gate.owns(k)).cloned().collect();
    assert!(!owned.is_empty() && owned.len() < keys.len(), "{owned:?}");
    assert_eq!(reconciled, owned, "exactly the owned keys, in queue order");
    assert_eq!((queue.len(), queue.processing()), (0, 0));
    assert_eq!(gate.in_flight(), 0);
}

/// A key that failed (so the queue counts its failures) is lost while it
/// waits behind a slow reconcile: the handover waits for the slow
/// reconcile, and the lost key is dropped, not reconciled, and forgotten.
#[tokio::test(start_paused = true)]
async fn gate_a_key_lost_while_queued_is_dropped_and_a_handover_waits() {
    let gate = KeyGate::new(Ownership::everything());
    let queue = WorkQueue::new();
    let (lost, slow) = (key("lost"), key("slow"));
    queue.add(lost.clone());
    queue.add(slow.clone());
    let started = Instant::now();
    let log = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    let mut outcomes = Runner::new(queue.clone()).gate(gate.clone()).run(
        move |key| {
            let record = Arc::clone(&record);
            async move {
                let slow = key.name() == "slow";
                record.lock().push(key.clone());
                if slow {
                    sleep(Duration::from_secs(10)).await;
                    Ok(Action::await_change())
                } else {
                    Err("first attempt fails")
                }
            }
        },
        |_, _| Action::backoff(),
    );
    // "lost" fails: it waits 5 ms to be retried, then behind "slow".
    assert!(outcomes.next().await.expect("an outcome").is_err());
    assert_eq!(queue.requeues(&lost), 1);
    let driver = tokio::spawn(async move { outcomes.collect::<Vec<_>>().await });

    sleep(Duration::from_secs(1)).await;
    assert_eq!(queue.len(), 1, "the retry of \"lost\" waits in the queue");
    assert!(
        gate.set_ownership(Ownership::nothing()),
        "\"slow\" is in flight"
    );
    handed_over(&gate).await;
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(10)..=Duration::from_secs(10) + ms(1)).contains(&waited),
        "the handover waited for the reconcile of \"slow\" to end, {waited:?}"
    );
    sleep(ms(1)).await;
    queue.shutdown();
    let rest = driver.await.expect("the runner does not panic");
    assert_eq!(rest.len(), 1, "only \"slow\" finished after the loss");
    assert_eq!(*log.lock(), [lost.clone(), slow]);
    assert_eq!(
        queue.requeues(&lost),
        0,
        "the dropped key's failures are forgotten"
    );
    assert_eq!((queue.len(), queue.processing()), (0, 0));
}

/// One step of a generated run.
#[derive(Debug, Clone)]
enum Step {
    /// Add key `n` to the queue.
    Add(usize),
    /// Switch to ownership `n` of [`ownerships`] and wait for the handover.
    Own(usize),
}

fn step() -> impl Strategy<Value = (u64, Step)> {
    (
        0..40u64,
        prop_oneof![
            3 => (0..KEYS).prop_map(Step::Add),
            1 => (0..6usize).prop_map(Step::Own),
        ],
    )
}

const KEYS: usize = 16;

/// One reconcile: its key, whether the gate owned it at the start, and
/// when it started and ended, as steps of the run's order of events (on the
/// paused clock several events share one instant, and which came first is
/// what the handover rule is about).
#[derive(Debug, Clone)]
struct Reconcile {
    key: ObjectKey,
    owned_at_start: bool,
    start: u64,
    end: Option<u64>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Keys added and ownership changed at generated times while reconciles
    /// of generated lengths run (some failing, so retries come due later):
    /// every reconcile starts on an owned key, and every handover ends only
    /// after the reconciles of released keys that started before it.
    #[test]
    fn gate_reconciles_only_owned_keys_and_handovers_wait(
        steps in prop::collection::vec(step(), 1..40),
        lengths in prop::collection::vec(0..30u64, KEYS),
        failing in prop::collection::vec(any::<bool>(), KEYS),
        concurrency in 1..4usize,
        first in 0..6usize,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let (reconciles, handovers) = runtime.block_on(async move {
            let all = ownerships();
            let gate = KeyGate::new(all[first].clone());
            let keys: Vec<ObjectKey> = (0..KEYS).map(|i| key(&format!("k{i}"))).collect();
            let queue = WorkQueue::new();
            // The order of events: every start, end, ownership change and
            // finished handover takes the next step.
            let order = Arc::new(AtomicU64::new(0));
            let log: Arc<Mutex<Vec<Reconcile>>> = Arc::default();
            let (record, check, steps_of) = (Arc::clone(&log), gate.clone(), Arc::clone(&order));
            let runner = Runner::new(queue.clone())
                .concurrency(concurrency)
                .gate(gate.clone())
                .run(move |key: ObjectKey| {
                    let i: usize = key.name()[1..].parse().expect("k<n>");
                    let entry = record.lock().len();
                    record.lock().push(Reconcile {
                        owned_at_start: check.owns(&key),
                        key,
                        start: steps_of.fetch_add(1, Ordering::SeqCst),
                        end: None,
                    });
                    let (record, length, fail) = (Arc::clone(&record), lengths[i], failing[i]);
                    let steps_of = Arc::clone(&steps_of);
                    async move {
                        sleep(ms(length)).await;
                        record.lock()[entry].end = Some(steps_of.fetch_add(1, Ordering::SeqCst));
                        if fail { Err(()) } else { Ok(Action::await_change()) }
                    }
                }, |_, _| Action::backoff());
            let driver = tokio::spawn(runner.for_each(|_| async {}));
            // (set at, handed over at, the ownership set)
            let mut handovers = Vec::new();
            for (wait, step) in steps {
                sleep(ms(wait)).await;
                match step {
                    Step::Add(n) => queue.add(keys[n].clone()),
                    Step::Own(n) => {
                        let set_at = order.fetch_add(1, Ordering::SeqCst);
                        gate.set_ownership(all[n].clone());
                        handed_over(&gate).await;
                        let done_at = order.fetch_add(1, Ordering::SeqCst);
                        handovers.push((set_at, done_at, all[n].clone()));
                    }
                }
            }
            queue.shutdown();
            driver.await.expect("the runner does not panic");
            assert_eq!(gate.in_flight(), 0);
            let reconciles = log.lock().clone();
            (reconciles, handovers)
        });
        for r in &reconciles {
            prop_assert!(r.owned_at_start, "{:?} reconciled unowned", r.key);
        }
        for (set_at, done_at, ownership) in &handovers {
            for r in reconciles.iter().filter(|r| !ownership.owns(&r.key) && r.start < *set_at) {
                let end = r.end.expect("every reconcile ended");
                prop_assert!(
                    end <= *done_at,
                    "{:?} ran from step {} to {}, past the handover's end at step {}", r.key, r.start, end, done_at
                );
            }
        }
    }
}
