//! Leader election in real time (feature `leader-election`): three
//! replicas on the fake API server, each through a connection of its own,
//! on a multi-threaded runtime, sampled from a thread of their own.
//!
//! The timing assertions hold however the test's threads are scheduled:
//! claims are timed on the replicas' side, a sample reads the clock before
//! it reads who leads, and only samples read within 100 ms are judged for
//! two leaders at once (a correct election leaves a second between one
//! leader's end and the next one's start).
#![cfg(feature = "leader-election")]

use crate::shard_leader_common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use kube_informer::shard::leader::Leadership;
use kube_informer_testing::FakeApiServer;
use parking_lot::Mutex;
use shard_leader_common::{
    Replica, Sample, assert_acting_only_within_claims, assert_claim_windows_disjoint,
    assert_one_leader_at_a_time, config, lease_spec, sample,
};
use tokio::time::Instant;

const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const LIMIT: Duration = Duration::from_secs(60);
/// Reads of the three replicas taking longer than this are not judged for
/// two leaders at once.
const JUDGED_WINDOW: Duration = Duration::from_millis(100);

/// Samples who leads every 2 ms on a thread of its own, so a busy runtime
/// does not starve it.
struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: thread::JoinHandle<()>,
}

impl Sampler {
    fn spawn(replicas: &[&Replica]) -> Self {
        let leaderships: Vec<Leadership> = replicas.iter().map(|r| r.leadership.clone()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let thread = thread::spawn({
            let stop = Arc::clone(&stop);
            let samples = Arc::clone(&samples);
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let sample = sample(&leaderships);
                    samples.lock().push(sample);
                    thread::sleep(Duration::from_millis(2));
                }
            }
        });
        Self {
            stop,
            samples,
            thread,
        }
    }

    fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        Arc::try_unwrap(self.samples).unwrap().into_inner()
    }
}

/// Waits until `done` holds, checking every 5 ms; panics after [`LIMIT`].
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "{what} within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn leader(replicas: &[Replica]) -> Option<usize> {
    replicas.iter().position(|r| r.leadership.is_leader())
}

// LE2, LE3, LE1: the scenario of a leader cut off from the API server for
// 12 s right after a renewal (Lease 3 s, renew deadline 2 s, retry period
// 500 ms). It stops acting within its renew deadline of sending its last
// successful renewal; another replica takes over during the cut; the held
// writes land after the heal and conflict; and no two replicas act as
// leader at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn le3_a_leader_cut_off_for_12_s_stops_in_time_and_nobody_leads_beside_it() {
    let server = FakeApiServer::start().await;
    let mut replicas: Vec<Replica> = ["a", "b", "c"]
        .into_iter()
        .map(|name| Replica::start(&server, name))
        .collect();
    let refs: Vec<&Replica> = replicas.iter().collect();
    let sampler = Sampler::spawn(&refs);
    until("a leader", || leader(&replicas).is_some()).await;
    let old = leader(&replicas).unwrap();
    let cut_off = &replicas[old];
    let renewals = cut_off.claims().len();
    until("a renewal", || cut_off.claims().len() > renewals).await;
    cut_off.link.cut();
    let cut_at = Instant::now();
    until("another leader", || {
        leader(&replicas).is_some_and(|i| i != old)
    })
    .await;
    let new = leader(&replicas).unwrap();
    tokio::time::sleep_until(cut_at + Duration::from_secs(12)).await;
    let healed_at = Instant::now();
    cut_off.link.heal();
    until("the held requests delivered", || {
        cut_off.link.held().iter().all(|h| h.status.is_some())
    })
    .await;
    // The old leader reads the Lease again and follows.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stopping_at = Instant::now();
    let samples = sampler.finish();
    for replica in &replicas {
        replica.leadership.stop();
    }
    for replica in &mut replicas {
        replica.join().await.unwrap();
    }
    let refs: Vec<&Replica> = replicas.iter().collect();

    let judged = assert_one_leader_at_a_time(&samples, JUDGED_WINDOW);
    assert!(
        judged * 2 > samples.len(),
        "{judged} of {} judged",
        samples.len()
    );
    assert_acting_only_within_claims(&samples, &refs, RENEW_DEADLINE);
    assert_claim_windows_disjoint(&refs, RENEW_DEADLINE, stopping_at);

    // LE3, measured from the send of the last successful renewal before
    // the heal (its answer may have come just after the cut).
    let last = replicas[old]
        .claims()
        .into_iter()
        .rfind(|c| c.sent_at < healed_at)
        .unwrap();
    let acted_until = samples
        .iter()
        .filter(|s| s.leading[old] && s.before < healed_at)
        .map(|s| s.before)
        .max()
        .unwrap();
    assert!(
        acted_until < last.sent_at + RENEW_DEADLINE,
        "acted {:?} after its last renewal was sent",
        acted_until - last.sent_at
    );
    let taken_at = samples
        .iter()
        .find(|s| s.leading[new] && s.before > cut_at)
        .map(|s| s.before)
        .unwrap();
    assert!(taken_at < healed_at, "another replica led during the cut");
    eprintln!(
        "last renewal sent {:?} before the cut; acted until {:?} after it; \
         the next leader from {:?} after it",
        cut_at - last.sent_at,
        acted_until - last.sent_at,
        taken_at - last.sent_at,
    );
    // LE2: the writes held by the cut landed late and changed nothing.
    let held = replicas[old].link.held();
    let writes: Vec<_> = held.iter().filter(|h| h.method == "PUT").collect();
    assert!(!writes.is_empty(), "renewals were held: {held:?}");
    assert!(
        writes.iter().all(|w| w.status == Some(409)),
        "a late write was applied: {held:?}"
    );
    assert!(
        samples.last().unwrap().leading[new],
        "the new leader keeps leading after the heal"
    );
}

// LE6: a stopped leader releases the Lease, and another replica leads long
// before the Lease could have expired (Lease 15 s, renew deadline 10 s,
// retry period 2 s: without the release, a follower waits 15 s from its
// first read after the stop).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn le6_a_graceful_stop_hands_leadership_over_long_before_expiry() {
    let server = FakeApiServer::start().await;
    let slow = |name: &str| kube_informer::shard::LeaseConfig {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        ..config(name)
    };
    let mut replicas: Vec<Replica> = ["a", "b", "c"]
        .into_iter()
        .map(|name| Replica::start_with(&server, slow(name)))
        .collect();
    let refs: Vec<&Replica> = replicas.iter().collect();
    let sampler = Sampler::spawn(&refs);
    until("a leader", || leader(&replicas).is_some()).await;
    let old = leader(&replicas).unwrap();
    replicas[old].leadership.stop();
    let stopped_at = Instant::now();
    replicas[old].join().await.unwrap();
    until("another leader", || {
        leader(&replicas).is_some_and(|i| i != old)
    })
    .await;
    let taken_after = stopped_at.elapsed();
    let samples = sampler.finish();
    eprintln!("taken over {taken_after:?} after the stop");
    assert!(
        taken_after < Duration::from_secs(10),
        "taken over {taken_after:?} after the stop"
    );
    let spec = lease_spec(&server).unwrap();
    assert_eq!(spec.lease_transitions, Some(1));
    assert!(assert_one_leader_at_a_time(&samples, Duration::from_secs(1)) > 0);
    for replica in &replicas {
        replica.leadership.stop();
    }
    for replica in &mut replicas {
        replica.join().await.unwrap();
    }
}
