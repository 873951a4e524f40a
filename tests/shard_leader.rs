//! Leader election (feature `leader-election`, rules LE1–LE7 in
//! `shard::leader`): replicas on the fake API server, each through a
//! connection of its own that a test can cut, on tokio's paused clock, so
//! every instant is exact.
#![cfg(feature = "leader-election")]

use crate::shard_leader_common;

use crate::cache_mode_common::CacheModeExt;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap};
use kube::Api;
use kube_informer::{
    Informer, Notification, SubscribeOptions,
    shard::{
        self, ShardEvent,
        {LeaseConfig, leader::Leadership},
    },
    source::Event,
};
use kube_informer_testing::{FakeApiServer, RequestMatch};
use parking_lot::Mutex;
use shard_leader_common::{
    LEASE, Replica, Sample, assert_acting_only_within_claims, assert_claim_windows_disjoint,
    assert_one_leader_at_a_time, config, holder, lease_spec, sample,
};
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

const MS: Duration = Duration::from_millis(1);
const LEASE_DURATION: Duration = Duration::from_secs(3);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const RETRY_PERIOD: Duration = Duration::from_millis(500);

/// Waits (on the paused clock, a millisecond at a time) until `done`
/// holds; how long that took, or `None` after `limit`.
async fn until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if done() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= limit {
            return None;
        }
        tokio::time::sleep(MS).await;
    }
}

/// Samples who leads every millisecond until stopped.
struct Sampler {
    stop: CancellationToken,
    task: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    fn spawn(replicas: &[&Replica]) -> Self {
        let leaderships: Vec<Leadership> = replicas.iter().map(|r| r.leadership.clone()).collect();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let stop = stop.clone();
            async move {
                let mut samples = Vec::new();
                loop {
                    samples.push(sample(&leaderships));
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => return samples,
                        () = tokio::time::sleep(MS) => {}
                    }
                }
            }
        });
        Self { stop, task }
    }

    /// The samples, checked: never two leaders, nobody acting outside its
    /// own claims' deadlines.
    async fn finish(self, replicas: &[&Replica]) -> Vec<Sample> {
        // A sample of the state the test saw last.
        tokio::time::sleep(2 * MS).await;
        self.stop.cancel();
        let samples = self.task.await.unwrap();
        // On the paused clock a sample takes no time: every one is judged.
        assert_eq!(
            assert_one_leader_at_a_time(&samples, Duration::ZERO),
            samples.len()
        );
        assert_acting_only_within_claims(&samples, replicas, RENEW_DEADLINE);
        samples
    }
}

/// The first sample at or after `from` in which replica `i` leads.
fn first_leading(samples: &[Sample], i: usize, from: Instant) -> Option<Instant> {
    samples
        .iter()
        .find(|s| s.before >= from && s.leading[i])
        .map(|s| s.before)
}

/// The last sample in which replica `i` leads.
fn last_leading(samples: &[Sample], i: usize) -> Option<Instant> {
    samples
        .iter()
        .rev()
        .find(|s| s.leading[i])
        .map(|s| s.before)
}

/// `replica`, once it leads (at once, when nobody else does).
async fn elected(replica: Replica) -> Replica {
    until(Duration::from_secs(1), || replica.leadership.is_leader())
        .await
        .expect("a replica alone leads at once");
    replica
}

async fn leader_of_three(server: &FakeApiServer) -> (Replica, Replica, Replica) {
    let a = elected(Replica::start(server, "a")).await;
    let b = Replica::start(server, "b");
    let c = Replica::start(server, "c");
    (a, b, c)
}

// LE1, LE5: replicas that join leave a renewing leader alone; renewals
// move only renewTime.
#[tokio::test(start_paused = true)]
async fn le1_an_incumbent_keeps_the_lease_while_others_join() {
    let server = FakeApiServer::start().await;
    let (a, b, c) = leader_of_three(&server).await;
    let created = lease_spec(&server).unwrap();
    assert_eq!(created.holder_identity.as_deref(), Some("a"));
    assert_eq!(created.acquire_time, created.renew_time);
    assert_eq!(created.lease_transitions, Some(0));
    assert_eq!(created.lease_duration_seconds, Some(3));

    let sampler = Sampler::spawn(&[&a, &b, &c]);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let samples = sampler.finish(&[&a, &b, &c]).await;
    assert!(samples.iter().all(|s| s.leading == [true, false, false]));
    let renewed = lease_spec(&server).unwrap();
    assert_eq!(renewed.holder_identity.as_deref(), Some("a"));
    assert_eq!(renewed.acquire_time, created.acquire_time);
    assert_eq!(renewed.lease_transitions, Some(0));
    assert!(renewed.renew_time > created.renew_time);
    assert!(a.claims().len() >= 55, "a renews every retry period");
}

// LE1, LE5: a killed leader's Lease is taken over a Lease duration after
// its last renewal was seen, as one more transition.
#[tokio::test(start_paused = true)]
async fn le1_a_killed_leader_is_taken_over_once_its_lease_expires() {
    let server = FakeApiServer::start().await;
    let (a, b, c) = leader_of_three(&server).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = lease_spec(&server).unwrap();
    let sampler = Sampler::spawn(&[&a, &b, &c]);
    a.kill();
    let killed_at = Instant::now();
    let last = a.last_claim().unwrap();
    until(Duration::from_secs(10), || {
        b.leadership.is_leader() || c.leadership.is_leader()
    })
    .await
    .expect("another replica takes over");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let samples = sampler.finish(&[&a, &b, &c]).await;

    let taken = [1, 2]
        .into_iter()
        .filter_map(|i| first_leading(&samples, i, killed_at))
        .min()
        .unwrap();
    assert!(taken >= last.sent_at + LEASE_DURATION, "not before expiry");
    assert!(
        taken <= last.sent_at + LEASE_DURATION + 2 * RETRY_PERIOD,
        "taken over {:?} after the last renewal",
        taken - last.sent_at
    );
    assert_eq!(
        last_leading(&samples, 0),
        Some(last.sent_at + RENEW_DEADLINE - MS)
    );
    let after = lease_spec(&server).unwrap();
    assert_ne!(after.holder_identity.as_deref(), Some("a"));
    assert_eq!(after.lease_transitions, Some(1));
    assert!(after.acquire_time > before.acquire_time);
    assert_claim_windows_disjoint(&[&a, &b, &c], RENEW_DEADLINE, Instant::now());
}

// LE2, LE3 (the partition): the leader's connection is cut right after a
// renewal, for 12 s. It stops acting at its renew deadline, measured from
// the send of that renewal, though its requests hang; another replica
// takes over once the Lease expired by its own observation; when the cut
// heals, the old leader's held writes land and conflict, and the new
// holder's Lease does not move. At no sampled instant do two act.
//
// Every update is answered 100 ms after it is sent, so a deadline measured
// from the answer would show; and the retry period (700 ms) does not divide
// the renew deadline, so the election loop's own timeouts do not fall on
// the deadline: only the gate's own check stops the leader there.
#[tokio::test(start_paused = true)]
async fn le3_a_cut_off_leader_stops_at_its_deadline_and_its_late_writes_conflict() {
    const LATENCY: Duration = Duration::from_millis(100);
    let retry_period = Duration::from_millis(700);
    let server = FakeApiServer::start().await;
    server.delay_requests(RequestMatch::Update, LATENCY, usize::MAX);
    let start = |name| {
        Replica::start_with(
            &server,
            LeaseConfig {
                retry_period,
                ..config(name)
            },
        )
    };
    let a = elected(start("a")).await;
    let (b, c) = (start("b"), start("c"));
    let sampler = Sampler::spawn(&[&a, &b, &c]);
    let work = tokio::spawn({
        let leadership = a.leadership.clone();
        async move {
            let output = leadership
                .run_while_leader(std::future::pending::<()>())
                .await;
            (output, Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    let renewals = a.claims().len();
    until(retry_period, || a.claims().len() > renewals)
        .await
        .expect("a renews");
    a.link.cut();
    let last = a.last_claim().unwrap();
    assert!(Instant::now() >= last.sent_at + LATENCY);
    let deadline = last.sent_at + RENEW_DEADLINE;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let healed_at = Instant::now();
    a.link.heal();
    until(Duration::from_secs(5), || {
        a.link.held().iter().all(|held| held.status.is_some())
    })
    .await
    .expect("the held requests are delivered");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let samples = sampler.finish(&[&a, &b, &c]).await;

    // LE3: the cut-off leader acted up to its deadline, not past it, and
    // its work was dropped at that instant.
    assert_eq!(last_leading(&samples, 0), Some(deadline - MS));
    assert_eq!(work.await.unwrap(), (None, deadline));
    // LE1: another took over once the Lease went a Lease duration
    // unchanged as it saw it, and keeps it after the heal.
    let (new, taken) = [1, 2]
        .into_iter()
        .filter_map(|i| first_leading(&samples, i, last.sent_at).map(|at| (i, at)))
        .min_by_key(|(_, at)| *at)
        .expect("another replica took over");
    assert!(taken >= last.sent_at + LEASE_DURATION);
    assert!(taken <= last.sent_at + LEASE_DURATION + 2 * (retry_period + LATENCY));
    assert!(taken < healed_at, "during the cut");
    assert!(samples.last().unwrap().leading[new], "still leads");
    // LE2: every write the old leader sent during the cut landed late and
    // conflicted.
    let held = a.link.held();
    let writes: Vec<_> = held.iter().filter(|h| h.method == "PUT").collect();
    assert!(writes.len() >= 3, "renewals were held: {held:?}");
    assert!(
        writes.iter().all(|w| w.status == Some(409)),
        "a late write was applied: {held:?}"
    );
    let spec = lease_spec(&server).unwrap();
    let name = ["a", "b", "c"][new];
    assert_eq!(spec.holder_identity.as_deref(), Some(name));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_claim_windows_disjoint(&[&a, &b, &c], RENEW_DEADLINE, Instant::now());
}

// LE4: a leader that finds another holder in the Lease stops at once, not
// at its deadline.
#[tokio::test(start_paused = true)]
async fn le4_a_leader_that_sees_another_holder_stops_at_once() {
    let server = FakeApiServer::start().await;
    let a = elected(Replica::start(&server, "a")).await;
    let renewals = a.claims().len();
    until(RETRY_PERIOD, || a.claims().len() > renewals)
        .await
        .unwrap();
    let deadline = a.last_claim().unwrap().sent_at + RENEW_DEADLINE;
    let mut lease = server
        .objects::<Lease>()
        .into_iter()
        .find(|l| l.metadata.name.as_deref() == Some(LEASE))
        .unwrap();
    lease.spec.as_mut().unwrap().holder_identity = Some("intruder".into());
    server.update(&lease).unwrap();
    let overwritten_at = Instant::now();
    until(Duration::from_secs(5), || !a.leadership.is_leader())
        .await
        .unwrap();
    assert!(Instant::now() <= overwritten_at + RETRY_PERIOD);
    assert!(Instant::now() < deadline);
    // And it takes the Lease back only once the intruder's went a Lease
    // duration unrenewed.
    let back = until(Duration::from_secs(10), || a.leadership.is_leader())
        .await
        .unwrap();
    assert!(
        Instant::now() >= overwritten_at + LEASE_DURATION,
        "{back:?}"
    );
}

// LE5, LE6: a lone leader that stops releases the Lease as client-go does.
#[tokio::test(start_paused = true)]
async fn le6_a_stopped_leader_releases_the_lease() {
    let server = FakeApiServer::start().await;
    let mut a = elected(Replica::start(&server, "a")).await;
    a.leadership.stop();
    a.join().await.unwrap();
    assert!(!a.leadership.is_leader());
    let spec = lease_spec(&server).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!((spec.acquire_time, spec.renew_time), (None, None));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.lease_duration_seconds, Some(3));
}

// LE6: a graceful stop hands leadership over at the next replica's next
// read, not a Lease duration later.
#[tokio::test(start_paused = true)]
async fn le6_a_graceful_stop_lets_another_replica_lead_within_a_retry_period() {
    let server = FakeApiServer::start().await;
    let (mut a, b, c) = leader_of_three(&server).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sampler = Sampler::spawn(&[&a, &b, &c]);
    a.leadership.stop();
    let stopped_at = Instant::now();
    a.join().await.unwrap();
    assert_eq!(Instant::now(), stopped_at, "no work in flight: at once");
    until(Duration::from_secs(5), || {
        b.leadership.is_leader() || c.leadership.is_leader()
    })
    .await
    .unwrap();
    let samples = sampler.finish(&[&a, &b, &c]).await;
    let taken = [1, 2]
        .into_iter()
        .filter_map(|i| first_leading(&samples, i, stopped_at))
        .min()
        .unwrap();
    assert!(
        taken <= stopped_at + RETRY_PERIOD,
        "{:?}",
        taken - stopped_at
    );
    let spec = lease_spec(&server).unwrap();
    assert_eq!(spec.lease_transitions, Some(1));
    assert_ne!(holder_of(&server), Some("a".into()));
}

fn holder_of(server: &FakeApiServer) -> Option<String> {
    server
        .objects::<Lease>()
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(LEASE))
        .and_then(|l| holder(l).map(str::to_owned))
}

// LE6: work still in flight keeps the Lease in place: the next leader
// waits for it to expire.
#[tokio::test(start_paused = true)]
async fn le6_a_stop_with_work_in_flight_leaves_the_lease_to_expire() {
    let server = FakeApiServer::start().await;
    let mut a = elected(Replica::start(&server, "a")).await;
    let b = Replica::start(&server, "b");
    let guard = a
        .leadership
        .gate()
        .begin(&"default/job".parse().unwrap())
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sampler = Sampler::spawn(&[&a, &b]);
    a.leadership.stop();
    let stopped_at = Instant::now();
    until(MS, || !guard.is_owned())
        .await
        .expect("nothing is owned from the stop on");
    a.join().await.unwrap();
    assert_eq!(
        Instant::now(),
        stopped_at + RENEW_DEADLINE,
        "gave up waiting"
    );
    assert_eq!(holder_of(&server).as_deref(), Some("a"), "not released");
    until(Duration::from_secs(10), || b.leadership.is_leader())
        .await
        .unwrap();
    let samples = sampler.finish(&[&a, &b]).await;
    let taken = first_leading(&samples, 1, stopped_at).unwrap();
    assert!(taken >= a.last_claim().unwrap().sent_at + LEASE_DURATION);
    drop(guard);
}

// LE7: work runs only while leading, waits while following, and the old
// leader's work has ended before the new leader's starts.
#[tokio::test(start_paused = true)]
async fn le7_work_runs_only_while_leading() {
    let server = FakeApiServer::start().await;
    let mut a = elected(Replica::start(&server, "a")).await;
    let b = Replica::start(&server, "b");
    let ticks = Arc::new(Mutex::new(Vec::<(&str, Instant)>::new()));
    let work = |replica: &Replica, name: &'static str| {
        let leadership = replica.leadership.clone();
        let ticks = Arc::clone(&ticks);
        tokio::spawn(async move {
            leadership
                .run_while_leader(async move {
                    loop {
                        ticks.lock().push((name, Instant::now()));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                })
                .await
        })
    };
    let a_work = work(&a, "a");
    let b_work = work(&b, "b");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(ticks.lock().iter().all(|(name, _)| *name == "a"));
    a.leadership.stop();
    assert_eq!(a_work.await.unwrap(), None, "dropped when leadership ended");
    a.join().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ticks = ticks.lock().clone();
    let a_last = ticks.iter().filter(|(n, _)| *n == "a").map(|t| t.1).max();
    let b_first = ticks.iter().filter(|(n, _)| *n == "b").map(|t| t.1).min();
    assert!(a_last.unwrap() < b_first.expect("b's work started"));
    assert!(!b_work.is_finished());
    // The election has ended: no more work on this replica.
    assert_eq!(a.leadership.run_while_leader(async { 1 }).await, None);
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.resource_version = Some("1".into());
    cm
}

// A stream gated on leadership is silent while following, replays the
// store on becoming leader, and announces every key lost when it ends.
#[tokio::test(start_paused = true)]
async fn a_gated_stream_passes_only_while_leading_and_replays_on_election() {
    let server = FakeApiServer::start().await;
    let other = elected(Replica::start(&server, "other")).await;
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::ListStart),
        Ok(Event::Listed(cm("a"))),
        Ok(Event::Listed(cm("b"))),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
    ])
    .chain(futures::stream::pending());
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let me = Replica::start(&server, "me");
    let mut gated = me.leadership.gate().filter(
        informer.subscribe(SubscribeOptions::default()).unwrap(),
        informer.store(),
    );
    tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let nothing = tokio::time::timeout(Duration::from_secs(5), gated.next()).await;
    assert!(nothing.is_err(), "a follower sees nothing");

    other.leadership.stop();
    let mut names = Vec::new();
    for _ in 0..2 {
        match gated.next().await.unwrap() {
            ShardEvent::Change {
                notification: Notification::Added { object, .. },
                ..
            } => names.push(object.metadata.name.clone().unwrap()),
            other => panic!("{other:?}"),
        }
    }
    names.sort();
    assert_eq!(names, ["a", "b"]);

    me.leadership.stop();
    for _ in 0..2 {
        assert!(matches!(
            gated.next().await.unwrap(),
            ShardEvent::Lost { .. }
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn unsafe_timings_and_an_empty_identity_are_refused() {
    let server = FakeApiServer::start().await;
    let api = || Api::<Lease>::default_namespaced(server.in_process_client());
    let slow = LeaseConfig {
        retry_period: Duration::from_secs(2),
        ..config("a")
    };
    assert!(matches!(
        Leadership::new(api(), slow),
        Err(shard::Error::RetryTooSlow { .. })
    ));
    assert!(matches!(
        Leadership::new(api(), LeaseConfig::new(LEASE, "")),
        Err(shard::Error::EmptyIdentity)
    ));
}

// LE8
#[tokio::test(start_paused = true)]
async fn le8_a_second_run_is_refused() {
    let server = FakeApiServer::start().await;
    let a = Replica::start(&server, "a");
    assert!(matches!(
        a.leadership.run().await,
        Err(shard::Error::AlreadyRunning)
    ));
}

#[test]
fn public_types_are_send_sync_and_unpin() {
    fn check<T: Send + Sync + Unpin>() {}
    check::<Leadership>();
    check::<LeaseConfig>();
}
