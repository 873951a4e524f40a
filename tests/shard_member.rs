//! S2, S3, S5, S7, S8 and the Lease's fields: the membership task
//! ([`Shard`]) against an in-memory Lease server, on tokio's paused clock.
//!
//! The server delivers every change to every watch at once, so a member
//! that reads its informer fences only what it saw expire: every fence it
//! receives names the Lease's version written at least a Lease duration
//! before, and no newer one written before the fence (S8; a change made at
//! the very instant of the fence is the one race allowed). The server
//! records every fence that breaks this, and the tests check none does.
//!
//! Besides the scenarios, one property drives whole replicas (membership
//! task, gate, guards) through generated joins, kills, stops and work held
//! for generated times, so a release or acknowledgement with work in flight
//! is caught wherever it is made: in the state machine, the gate or the
//! driver.

use crate::cache_mode_common::CacheModeExt;
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use futures::Stream;
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::{SignedDuration, Timestamp},
};
use kube_informer::{
    Informer, ObjectKey,
    shard::{self, LeaseConfig, RING_LABEL, Shard},
    source::Event,
    unstable::shard::LeaseApi,
};
use parking_lot::Mutex;
use tokio::{sync::mpsc, task::JoinHandle, time::Instant};

#[derive(Debug)]
struct Never;
impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}
impl std::error::Error for Never {}

/// Leases in memory: conditional writes, consistent lists, and a watch per
/// informer that starts with a full list.
#[derive(Clone, Default)]
struct FakeLeases {
    state: Arc<Mutex<State>>,
    /// The Lease of the member that sends through this handle, so a
    /// delete of another Lease is a fence.
    caller: Option<String>,
}

#[derive(Default)]
struct State {
    leases: BTreeMap<String, Lease>,
    rv: u64,
    uid: u64,
    watchers: Vec<mpsc::UnboundedSender<Event<Lease>>>,
    failing: BTreeSet<String>,
    /// Writes to these Leases are held, unanswered and unapplied, until
    /// the instant given; then applied (however late) and answered.
    held: BTreeMap<String, Instant>,
    /// The next write to each of these Leases is held this long.
    held_once: BTreeMap<String, Duration>,
    /// Each Lease's changes: the version written (`None`: deleted), when,
    /// and its duration.
    history: BTreeMap<String, Vec<Change>>,
    /// Write requests (create or replace, answered or not) per Lease.
    writes: BTreeMap<String, usize>,
    /// Fences that succeeded: (fencer, fenced Lease).
    fenced: Vec<(String, String)>,
    /// Fences that break S8, described.
    stale_fences: Vec<String>,
}

struct Change {
    version: Option<u64>,
    at: Instant,
    duration: Duration,
}

impl State {
    /// S8 for a fence of `name` at `version` sent now by `fencer`: that
    /// version was written at least its duration ago, and nothing changed
    /// the Lease since, before this instant.
    fn check_fence(&mut self, fencer: &str, name: &str, version: &str) {
        let now = Instant::now();
        let changes = self.history.get(name).map(Vec::as_slice).unwrap_or(&[]);
        let fenced = changes
            .iter()
            .position(|c| c.version.map(|v| v.to_string()).as_deref() == Some(version));
        let problem = match fenced {
            None => Some("a version never written".to_owned()),
            Some(i) if now < changes[i].at + changes[i].duration => Some(format!(
                "a version written {:?} before",
                now - changes[i].at
            )),
            Some(i) => changes[i + 1..].iter().find(|c| c.at < now).map(|c| {
                format!(
                    "a version replaced {:?} before (by {:?})",
                    now - c.at,
                    c.version
                )
            }),
        };
        if let Some(problem) = problem {
            self.stale_fences
                .push(format!("{fencer} fenced {name}@{version}: {problem}"));
        }
    }
}

impl State {
    fn emit(&mut self, event: impl Fn() -> Event<Lease>) {
        self.watchers.retain(|w| w.send(event()).is_ok());
    }
}

impl FakeLeases {
    fn events(&self) -> impl Stream<Item = Result<Event<Lease>, Never>> + Send + 'static {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let mut state = self.state.lock();
        let _ = sender.send(Event::ListStart);
        for lease in state.leases.values() {
            let _ = sender.send(Event::Listed(lease.clone()));
        }
        let _ = sender.send(Event::ListDone {
            resource_version: state.rv.to_string(),
        });
        state.watchers.push(sender);
        async_stream::stream! {
            while let Some(event) = receiver.recv().await {
                yield Ok(event);
            }
        }
    }

    fn shard(&self, identity: &str) -> Shard {
        self.shard_with(LeaseConfig::new("ring", identity))
    }

    fn shard_with(&self, config: LeaseConfig) -> Shard {
        let informer = Informer::builder_from_stream(self.events())
            .cache_from_env()
            .build();
        let api = Self {
            caller: Some(format!("{}-{}", config.name, config.identity)),
            ..self.clone()
        };
        Shard::with_parts(api, informer, config).unwrap()
    }

    /// S8: no fence so far was sent on a stale view.
    fn check_fresh_fences(&self) {
        let stale = &self.state.lock().stale_fences;
        assert!(stale.is_empty(), "fences on stale views: {stale:#?}");
    }

    /// Write requests to `lease` so far.
    fn writes_to(&self, lease: &str) -> usize {
        self.state.lock().writes.get(lease).copied().unwrap_or(0)
    }

    fn fail_writes(&self, lease: &str, fail: bool) {
        let mut state = self.state.lock();
        if fail {
            state.failing.insert(lease.to_owned());
        } else {
            state.failing.remove(lease);
        }
    }

    /// Holds every write to `lease` sent from now until `hold` has passed:
    /// each is applied and answered only then, whether or not its sender
    /// still waits (a hung API server).
    fn hold_writes(&self, lease: &str, hold: Duration) {
        let until = Instant::now() + hold;
        self.state.lock().held.insert(lease.to_owned(), until);
    }

    /// Holds the next write to `lease` for `hold`, then applies it
    /// (however late) and answers it.
    fn hold_next_write(&self, lease: &str, hold: Duration) {
        self.state.lock().held_once.insert(lease.to_owned(), hold);
    }

    /// Waits out a hold on `name`'s writes on a task of its own, so the
    /// write lands even when the caller gave up on it.
    async fn held(
        &self,
        name: &str,
        write: impl FnOnce(&Self) -> Result<Lease, shard::Error> + Send + 'static,
    ) -> Result<Lease, shard::Error> {
        let until = {
            let mut state = self.state.lock();
            let once = state
                .held_once
                .remove(name)
                .map(|hold| Instant::now() + hold);
            once.or_else(|| state.held.get(name).copied())
                .filter(|until| *until > Instant::now())
        };
        let Some(until) = until else {
            return write(self);
        };
        let server = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(until).await;
            write(&server)
        })
        .await
        .expect("a held write does not panic")
    }

    fn names(&self) -> Vec<String> {
        self.state.lock().leases.keys().cloned().collect()
    }

    fn store(&self, mut lease: Lease, state: &mut State) -> Lease {
        state.rv += 1;
        lease.metadata.resource_version = Some(state.rv.to_string());
        let name = lease.metadata.name.clone().unwrap();
        let seconds = lease.spec.as_ref().and_then(|s| s.lease_duration_seconds);
        state.history.entry(name.clone()).or_default().push(Change {
            version: Some(state.rv),
            at: Instant::now(),
            duration: Duration::from_secs(seconds.unwrap_or(0).max(0) as u64),
        });
        state.leases.insert(name, lease.clone());
        lease
    }

    fn count_write(&self, name: &str) {
        *self.state.lock().writes.entry(name.to_owned()).or_default() += 1;
    }
}

impl FakeLeases {
    fn create_now(&self, mut lease: Lease) -> Result<Lease, shard::Error> {
        let mut state = self.state.lock();
        let name = lease.metadata.name.clone().unwrap();
        if state.failing.contains(&name) {
            return Err(shard::Error::LeaseFailed("partitioned".into()));
        }
        if state.leases.contains_key(&name) {
            return Err(shard::Error::LeaseAlreadyExists);
        }
        state.uid += 1;
        lease.metadata.uid = Some(format!("uid-{}", state.uid));
        let stored = self.store(lease, &mut state);
        let event = stored.clone();
        state.emit(|| Event::Added(event.clone()));
        Ok(stored)
    }

    fn replace_now(&self, mut lease: Lease) -> Result<Lease, shard::Error> {
        let mut state = self.state.lock();
        let name = lease.metadata.name.clone().unwrap();
        if state.failing.contains(&name) {
            return Err(shard::Error::LeaseFailed("partitioned".into()));
        }
        let Some(current) = state.leases.get(&name) else {
            return Err(shard::Error::LeaseNotFound);
        };
        if current.metadata.resource_version != lease.metadata.resource_version {
            return Err(shard::Error::LeaseConflict);
        }
        lease.metadata.uid = current.metadata.uid.clone();
        let stored = self.store(lease, &mut state);
        let event = stored.clone();
        state.emit(|| Event::Modified(event.clone()));
        Ok(stored)
    }
}

impl LeaseApi for FakeLeases {
    async fn create(&self, lease: Lease) -> Result<Lease, shard::Error> {
        let name = lease.metadata.name.clone().unwrap();
        self.count_write(&name);
        self.held(&name, move |server| server.create_now(lease))
            .await
    }

    async fn replace(&self, lease: Lease) -> Result<Lease, shard::Error> {
        let name = lease.metadata.name.clone().unwrap();
        self.count_write(&name);
        self.held(&name, move |server| server.replace_now(lease))
            .await
    }

    async fn get(&self, name: &str) -> Result<Option<Lease>, shard::Error> {
        Ok(self.state.lock().leases.get(name).cloned())
    }

    async fn delete_if(&self, name: &str, resource_version: &str) -> Result<(), shard::Error> {
        let mut state = self.state.lock();
        let fencer = self.caller.as_deref().filter(|caller| *caller != name);
        if let Some(fencer) = fencer {
            state.check_fence(fencer, name, resource_version);
        }
        match state.leases.get(name) {
            None => Err(shard::Error::LeaseNotFound),
            Some(l) if l.metadata.resource_version.as_deref() != Some(resource_version) => {
                Err(shard::Error::LeaseConflict)
            }
            Some(_) => {
                let gone = state.leases.remove(name).unwrap();
                state.rv += 1;
                state
                    .history
                    .entry(name.to_owned())
                    .or_default()
                    .push(Change {
                        version: None,
                        at: Instant::now(),
                        duration: Duration::ZERO,
                    });
                if let Some(fencer) = fencer {
                    state.fenced.push((fencer.to_owned(), name.to_owned()));
                }
                state.emit(|| Event::Deleted(gone.clone()));
                Ok(())
            }
        }
    }

    async fn list(&self, _selector: &str) -> Result<Vec<Lease>, shard::Error> {
        Ok(self.state.lock().leases.values().cloned().collect())
    }
}

fn keys() -> Vec<ObjectKey> {
    (0..1000)
        .map(|i| ObjectKey::new(Some("ns"), &format!("object-{i}")).unwrap())
        .collect()
}

/// How many owners each key has among `shards`.
fn owner_counts(shards: &[&Shard], keys: &[ObjectKey]) -> Vec<usize> {
    keys.iter()
        .map(|k| shards.iter().filter(|s| s.gate().owns(k)).count())
        .collect()
}

fn spawn(shard: &Shard) -> JoinHandle<()> {
    let run = shard.run();
    tokio::spawn(async move {
        run.await.unwrap();
    })
}

/// Member `a` alone in its ring, running, once it owns every key; and a key.
async fn lone_member(server: &FakeLeases) -> (Shard, JoinHandle<()>, ObjectKey) {
    let shard = server.shard("a");
    let task = spawn(&shard);
    let key: ObjectKey = "ns/x".parse().unwrap();
    until(Duration::from_secs(5), || shard.gate().owns(&key))
        .await
        .expect("a lone member owns every key");
    (shard, task, key)
}

/// Steps the paused clock until `done` holds or `limit` passes; returns how
/// long it took.
async fn until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while Instant::now() < start + limit {
        if done() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done().then(|| start.elapsed())
}

// S3
#[tokio::test(start_paused = true)]
async fn s3_a_member_that_cannot_renew_stops_acting_before_its_lease_expires() {
    let server = FakeLeases::default();
    let (shard, _task, key) = lone_member(&server).await;

    server.fail_writes("ring-a", true);
    let stopped = until(Duration::from_secs(20), || !shard.gate().owns(&key))
        .await
        .expect("stops acting");
    eprintln!("S3: stopped acting {stopped:?} after its renewals began to fail");
    // The last successful renewal was sent at most a retry period before
    // the failures began, and it stops a renew deadline after it.
    assert!(stopped <= Duration::from_secs(10), "{stopped:?}");
    assert!(stopped >= Duration::from_secs(8), "{stopped:?}");
    assert!(
        stopped < Duration::from_secs(15),
        "before the others may see it expire"
    );

    // Renewing again, it acts again.
    server.fail_writes("ring-a", false);
    until(Duration::from_secs(10), || shard.gate().owns(&key))
        .await
        .expect("acts again after renewing");
}

// S3: a write that gets no answer at all (the server holds it) stops the
// member at its deadline, as failing writes do, and the work it handed out
// learns so at that instant.
#[tokio::test(start_paused = true)]
async fn s3_a_member_whose_lease_write_hangs_stops_acting_at_its_deadline() {
    let server = FakeLeases::default();
    let (shard, _task, key) = lone_member(&server).await;
    let mut guard = shard.gate().begin(&key).expect("owned");

    let start = Instant::now();
    server.hold_writes("ring-a", Duration::from_secs(30));
    guard.lost().await;
    let lost = start.elapsed();
    assert!(!shard.gate().owns(&key));
    assert!(shard.gate().begin(&key).is_none());
    eprintln!("S3: lost {lost:?} after its writes began to hang");
    // The last successful renewal was sent at most a retry period (2 s)
    // before the hold began; the member stops a renew deadline (10 s) after.
    assert!(lost <= Duration::from_secs(10), "{lost:?}");
    assert!(lost >= Duration::from_secs(8), "{lost:?}");

    // The held writes land when the hold ends; it acts again after that.
    drop(guard);
    until(Duration::from_secs(40), || shard.gate().owns(&key))
        .await
        .expect("acts again once its writes are answered");
}

// S3: one write that gets no answer is abandoned after a retry period and
// the next renews in time, so the member keeps its keys throughout.
#[tokio::test(start_paused = true)]
async fn s3_one_unanswered_write_costs_a_member_nothing() {
    let server = FakeLeases::default();
    let (shard, _task, key) = lone_member(&server).await;
    server.hold_next_write("ring-a", Duration::from_secs(30));
    let lost = until(Duration::from_secs(40), || !shard.gate().owns(&key)).await;
    assert_eq!(
        lost, None,
        "the member kept its keys through one held write"
    );
}

/// A fast ring's timings: Lease 3 s, renew deadline 2 s, retry 0.5 s.
fn fast(identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        ..LeaseConfig::new("ring", identity)
    }
}

/// Members `a`, `b` and `c` of a fast ring, running, once they share 200
/// keys (keep the tasks); and the keys.
async fn fast_ring(server: &FakeLeases) -> ([Shard; 3], [JoinHandle<()>; 3], Vec<ObjectKey>) {
    let members = [
        server.shard_with(fast("a")),
        server.shard_with(fast("b")),
        server.shard_with(fast("c")),
    ];
    let tasks = [spawn(&members[0]), spawn(&members[1]), spawn(&members[2])];
    let keys: Vec<ObjectKey> = keys().into_iter().take(200).collect();
    let [a, b, c] = &members;
    until(Duration::from_secs(10), || {
        owner_counts(&[a, b, c], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("the members share the keys");
    (members, tasks, keys)
}

// S3 with three members and the timings of a fast ring: while one member's
// writes hang for 12 s the others take its keys over, and no key is ever
// owned by two members.
#[tokio::test(start_paused = true)]
async fn s3_no_key_has_two_owners_while_a_members_writes_hang() {
    let server = FakeLeases::default();
    let ([a, b, c], _tasks, keys) = fast_ring(&server).await;
    let of_a: Vec<ObjectKey> = keys.iter().filter(|k| a.gate().owns(k)).cloned().collect();
    assert!(!of_a.is_empty());

    server.hold_writes("ring-a", Duration::from_secs(12));
    let end = Instant::now() + Duration::from_secs(14);
    let mut taken_over = false;
    while Instant::now() < end {
        let counts = owner_counts(&[&a, &b, &c], &keys);
        assert!(counts.iter().all(|n| *n <= 1), "a key has two owners");
        taken_over |= of_a.iter().all(|k| b.gate().owns(k) || c.gate().owns(k));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(taken_over, "the others took the hung member's keys over");
    until(Duration::from_secs(20), || {
        owner_counts(&[&a, &b, &c], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("every key has one owner again");
}

// S8: a member whose writes hang is fenced, and its creates then hang as
// well, for longer than a Lease duration. Its membership task keeps
// reading its informer while each create waits, so it sees the live
// members renew and fences neither; once its writes are answered it joins
// again.
#[tokio::test(start_paused = true)]
async fn s8_a_member_whose_writes_hang_fences_no_live_member() {
    let server = FakeLeases::default();
    let ([a, b, c], _tasks, keys) = fast_ring(&server).await;
    server.hold_writes("ring-a", Duration::from_secs(12));
    until(Duration::from_secs(10), || {
        let state = server.state.lock();
        state.fenced.iter().any(|(_, lease)| lease == "ring-a")
    })
    .await
    .expect("b or c fenced a");
    until(Duration::from_secs(30), || {
        owner_counts(&[&a, &b, &c], &keys).iter().all(|n| *n == 1)
            && keys.iter().any(|k| a.gate().owns(k))
    })
    .await
    .expect("a joins again once its writes are answered");
    server.check_fresh_fences();
    let fences: Vec<_> = server.state.lock().fenced.clone();
    assert!(
        fences.iter().all(|(_, lease)| lease == "ring-a"),
        "only a was fenced: {fences:?}"
    );
}

// S8: a fenced member whose writes fail at once tries to create its Lease
// again once per retry period, not in a loop; meanwhile it follows the
// ring and fences nobody.
#[tokio::test(start_paused = true)]
async fn s8_a_member_that_cannot_write_sends_one_write_per_retry_period() {
    let server = FakeLeases::default();
    let (a, b) = (server.shard("a"), server.shard("b"));
    let _tasks = [spawn(&a), spawn(&b)];
    let keys = keys();
    until(Duration::from_secs(10), || {
        owner_counts(&[&a, &b], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("shared");

    server.fail_writes("ring-a", true);
    until(Duration::from_secs(30), || {
        !server.names().contains(&"ring-a".to_owned())
    })
    .await
    .expect("b fences a");
    let before = server.writes_to("ring-a");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let sent = server.writes_to("ring-a") - before;
    // A retry period (2 s) after each failure: ten in 20 s, one more for
    // the instant the window opened on.
    assert!((9..=11).contains(&sent), "{sent} writes in 20 s");
    server.check_fresh_fences();

    server.fail_writes("ring-a", false);
    until(Duration::from_secs(20), || {
        owner_counts(&[&a, &b], &keys).iter().all(|n| *n == 1)
            && keys.iter().any(|k| a.gate().owns(k))
    })
    .await
    .expect("a joins again once it can write");
}

// S4, S5
#[tokio::test(start_paused = true)]
async fn s5_three_members_share_keys_and_take_over_a_killed_one() {
    let server = FakeLeases::default();
    let (a, b, c) = (server.shard("a"), server.shard("b"), server.shard("c"));
    let _ta = spawn(&a);
    let _tb = spawn(&b);
    let tc = spawn(&c);
    let keys = keys();
    until(Duration::from_secs(10), || {
        owner_counts(&[&a, &b, &c], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("every key has exactly one owner");
    let c_keys = keys.iter().filter(|k| c.gate().owns(k)).count();
    eprintln!("S5: c owns {c_keys} of 1000");
    assert!((250..420).contains(&c_keys), "{c_keys}");

    // SIGKILL: the task is gone, its Lease stays until it expires.
    tc.abort();
    let mut overlap = false;
    let took = until(Duration::from_secs(30), || {
        let counts = owner_counts(&[&a, &b], &keys);
        overlap |= counts.iter().any(|n| *n > 1);
        counts.iter().all(|n| *n == 1)
    })
    .await;
    if took.is_none() {
        for lease in server.state.lock().leases.values() {
            eprintln!(
                "{:?} {:?} {:?}",
                lease.metadata.name, lease.metadata.resource_version, lease.metadata.annotations
            );
        }
        eprintln!("a: {:?}\nb: {:?}", a.gate(), b.gate());
        let counts = owner_counts(&[&a, &b], &keys);
        eprintln!(
            "zero: {}, two: {}",
            counts.iter().filter(|c| **c == 0).count(),
            counts.iter().filter(|c| **c == 2).count()
        );
    }
    let took = took.expect("the killed member's keys are taken over");
    assert!(!overlap);
    eprintln!("S5: keys of the killed member taken over {took:?} after the kill");
    assert!(
        took >= Duration::from_secs(13),
        "not before its Lease could expire: {took:?}"
    );
    assert!(
        took <= Duration::from_secs(15 + 2 + 1),
        "within duration + retry period: {took:?}"
    );
    assert!(!server.names().contains(&"ring-c".to_owned()), "fenced");
}

// S7
#[tokio::test(start_paused = true)]
async fn s7_a_stopped_member_hands_its_keys_over_at_once() {
    let server = FakeLeases::default();
    let (a, b) = (server.shard("a"), server.shard("b"));
    let _ta = spawn(&a);
    let tb = spawn(&b);
    let keys = keys();
    until(Duration::from_secs(10), || {
        owner_counts(&[&a, &b], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("shared");
    b.stop();
    tb.await.unwrap();
    let took = until(Duration::from_secs(10), || {
        keys.iter().all(|k| a.gate().owns(k))
    })
    .await
    .expect("taken over");
    eprintln!("S7: graceful leave handed over in {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

// S7
#[tokio::test(start_paused = true)]
async fn s7_a_leave_with_work_still_in_flight_leaves_the_lease_to_expire() {
    let server = FakeLeases::default();
    let (a, b) = (server.shard("a"), server.shard("b"));
    let _ta = spawn(&a);
    let tb = spawn(&b);
    let keys = keys();
    until(Duration::from_secs(10), || {
        owner_counts(&[&a, &b], &keys).iter().all(|n| *n == 1)
    })
    .await
    .expect("shared");
    let key = keys.iter().find(|k| b.gate().owns(k)).unwrap().clone();
    let guard = b.gate().begin(&key).unwrap();
    b.stop();
    // b gives up waiting for the work a renew deadline after the stop...
    let left = until(Duration::from_secs(12), || tb.is_finished())
        .await
        .expect("the membership task ends");
    assert!(left >= Duration::from_secs(10), "{left:?}");
    // ...but does not delete its Lease: the key stays untaken while the
    // work runs on, until the Lease expires.
    assert!(server.names().contains(&"ring-b".to_owned()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!a.gate().owns(&key), "taken while still worked on");
    drop(guard);
    let took = until(Duration::from_secs(20), || {
        keys.iter().all(|k| a.gate().owns(k))
    })
    .await
    .expect("taken over once the Lease expired");
    eprintln!("S7: with work left in flight, taken over {took:?} after the work ended");
}

// S2
#[tokio::test(start_paused = true)]
async fn s2_a_moving_key_waits_for_the_work_in_flight() {
    let server = FakeLeases::default();
    let a = server.shard("a");
    let _ta = spawn(&a);
    let keys = keys();
    until(Duration::from_secs(5), || {
        keys.iter().all(|k| a.gate().owns(k))
    })
    .await
    .expect("a owns all");
    // Work in flight on every key; then b joins.
    let guards: Vec<_> = keys.iter().map(|k| a.gate().begin(k).unwrap()).collect();
    let b = server.shard("b");
    let _tb = spawn(&b);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(
        keys.iter().all(|k| !b.gate().owns(k)),
        "b took a key still worked on"
    );
    let moving: Vec<_> = keys.iter().filter(|k| !a.gate().owns(k)).cloned().collect();
    assert!(!moving.is_empty(), "a released the keys that move");
    drop(guards);
    let took = until(Duration::from_secs(10), || {
        moving.iter().all(|k| b.gate().owns(k))
    })
    .await
    .expect("b takes the moved keys");
    eprintln!(
        "S2: {} keys moved to the joiner {took:?} after the work ended",
        moving.len()
    );
    assert_eq!(owner_counts(&[&a, &b], &keys), vec![1; 1000]);
}

#[tokio::test(start_paused = true)]
async fn a_second_run_is_refused() {
    let server = FakeLeases::default();
    let a = server.shard("a");
    let _ta = spawn(&a);
    assert!(matches!(
        a.run().await,
        Err(kube_informer::shard::Error::AlreadyRunning)
    ));
}

fn spec_of(server: &FakeLeases, name: &str) -> Option<LeaseSpec> {
    server.state.lock().leases.get(name)?.spec.clone()
}

fn version_of(server: &FakeLeases, name: &str) -> u64 {
    server.state.lock().leases[name]
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// A Lease named `name` held by `holder` since `acquired`, with `transitions`.
fn held_lease(name: &str, holder: &str, acquired: MicroTime, transitions: i32) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([(RING_LABEL.to_owned(), "ring".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(acquired.clone()),
            renew_time: Some(acquired),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    }
}

fn an_hour_ago() -> MicroTime {
    MicroTime(Timestamp::now() - SignedDuration::from_hours(1))
}

// Lease fields, as client-go leader election keeps them.
#[tokio::test(start_paused = true)]
async fn renewals_move_only_the_renew_time() {
    let server = FakeLeases::default();
    let a = server.shard("a");
    let _ta = spawn(&a);
    until(Duration::from_secs(5), || {
        spec_of(&server, "ring-a").is_some()
    })
    .await
    .expect("the Lease is created");
    let created = spec_of(&server, "ring-a").unwrap();
    let created_version = version_of(&server, "ring-a");
    assert!(
        created.acquire_time.is_some(),
        "a create records the acquire time"
    );
    assert!(created.acquire_time <= created.renew_time);
    assert_eq!(created.lease_transitions, Some(0));
    assert_eq!(created.holder_identity.as_deref(), Some("ring-a"));

    // Five retry periods: the acknowledgement and several renewals.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let renewed = spec_of(&server, "ring-a").unwrap();
    assert!(
        version_of(&server, "ring-a") >= created_version + 4,
        "renewed several times"
    );
    assert_eq!(
        renewed.acquire_time, created.acquire_time,
        "acquire time kept"
    );
    assert_eq!(renewed.lease_transitions, Some(0), "no holder change");
    assert!(renewed.renew_time > created.renew_time, "renew time moves");
}

/// Member `a` started where a Lease `ring-a` has been held by `holder`
/// since an hour ago, after two transitions. Returns the running member
/// (keep it), that acquire time, and the Lease's spec once `a` wrote it.
async fn start_over_held_lease(
    holder: &str,
) -> (FakeLeases, Shard, JoinHandle<()>, MicroTime, LeaseSpec) {
    let server = FakeLeases::default();
    let acquired = an_hour_ago();
    server
        .create(held_lease("ring-a", holder, acquired.clone(), 2))
        .await
        .unwrap();
    let a = server.shard("a");
    let task = spawn(&a);
    until(Duration::from_secs(5), || version_of(&server, "ring-a") > 1)
        .await
        .expect("the earlier Lease is taken over");
    let spec = spec_of(&server, "ring-a").unwrap();
    (server, a, task, acquired, spec)
}

#[tokio::test(start_paused = true)]
async fn a_restarted_member_keeps_its_leases_acquire_time() {
    let (_server, _a, _ta, acquired, spec) = start_over_held_lease("ring-a").await;
    assert_eq!(spec.acquire_time, Some(acquired.clone()), "same holder");
    assert_eq!(spec.lease_transitions, Some(2));
    assert!(spec.renew_time > Some(acquired));
}

#[tokio::test(start_paused = true)]
async fn taking_a_lease_from_another_holder_counts_a_transition() {
    let (server, _a, _ta, acquired, spec) = start_over_held_lease("someone-else").await;
    assert_eq!(spec.holder_identity.as_deref(), Some("ring-a"));
    assert!(
        spec.acquire_time > Some(acquired),
        "a new holder acquires now"
    );
    assert_eq!(spec.lease_transitions, Some(3));

    // Its renewals then keep the new acquire time and count.
    let taken = spec.acquire_time;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let spec = spec_of(&server, "ring-a").unwrap();
    assert_eq!(spec.acquire_time, taken);
    assert_eq!(spec.lease_transitions, Some(3));
}

/// What a generated run of whole replicas does.
#[derive(Clone, Debug)]
enum Step {
    /// Replica `.0` starts work on key `.1` if it owns it, and holds it.
    Start(usize, usize),
    /// One piece of work in flight (the `.0`th, counting round) ends.
    End(usize),
    /// A new replica joins.
    Join,
    /// Replica `.0` dies (its task aborted, its work gone with it).
    Kill(usize),
    /// Replica `.0` is asked to stop; its process ends (its work with it)
    /// when its membership task has left the ring.
    Stop(usize),
    /// Time passes (milliseconds).
    Wait(u64),
    /// Replica `.0`'s Lease writes hang for `.1` milliseconds (held by the
    /// server, then applied late).
    Hang(usize, u64),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        6 => (0..5usize, 0..64usize).prop_map(|(r, k)| Step::Start(r, k)),
        3 => (0..64usize).prop_map(Step::End),
        2 => Just(Step::Join),
        1 => (0..5usize).prop_map(Step::Kill),
        1 => (0..5usize).prop_map(Step::Stop),
        4 => (0..4_000u64).prop_map(Step::Wait),
        // Past a renew deadline: a stopping replica gives up waiting.
        1 => (8_000..14_000u64).prop_map(Step::Wait),
        1 => (0..5usize, 1_000..20_000u64).prop_map(|(r, ms)| Step::Hang(r, ms)),
    ]
}

struct Running {
    shard: Shard,
    /// Its member id, which is its Lease's name: `<ring>-<identity>`.
    member: String,
    task: JoinHandle<()>,
    alive: bool,
    stopping: bool,
    /// When its membership task was first seen ended.
    finished_at: Option<Instant>,
    work: Vec<Work>,
    /// Its writes hung at some point: its work watches its guards and ends
    /// within [`WORK_AFTER_LEAVE`] of losing them, as work must for the
    /// guarantee to cover a partition.
    partitioned: bool,
}

/// One piece of work in flight.
struct Work {
    guard: kube_informer::shard::WorkGuard,
    /// When its guard was first seen lost.
    lost_since: Option<Instant>,
}

impl Running {
    /// Alive and not asked to stop: it will own keys after settling.
    fn staying(&self) -> bool {
        self.alive && !self.stopping
    }
}

/// Every key is held by at most one live replica, held meaning owned or
/// worked on.
fn check_one_holder(replicas: &[Running], keys: &[ObjectKey]) {
    for key in keys {
        let holders: Vec<&str> = replicas
            .iter()
            .filter(|r| r.alive)
            .filter(|r| r.shard.gate().owns(key) || r.work.iter().any(|w| w.guard.key() == key))
            .map(|r| r.member.as_str())
            .collect();
        assert!(holders.len() <= 1, "{key} held by {holders:?}");
    }
}

/// How long a stopped replica's work runs on after its membership task
/// ended: its guards were [lost](kube_informer::shard::WorkGuard::lost), and
/// the work ends within the gap between renew deadline (10 s) and Lease
/// duration (15 s), as the guarantee asks of it. A leave that deleted its
/// Lease with work in flight would let another replica start within it.
const WORK_AFTER_LEAVE: Duration = Duration::from_secs(1);

/// Lets `time` pass on the paused clock, checking the invariant every 50 ms.
/// A stopped replica is gone (and its work with it) [`WORK_AFTER_LEAVE`]
/// after its task ended.
async fn pass(time: Duration, replicas: &mut [Running], keys: &[ObjectKey]) {
    let end = Instant::now() + time;
    loop {
        let now = Instant::now();
        for replica in replicas.iter_mut() {
            if replica.partitioned {
                for work in &mut replica.work {
                    if !work.guard.is_owned() {
                        work.lost_since.get_or_insert(now);
                    }
                }
                replica.work.retain(|work| {
                    work.lost_since
                        .is_none_or(|since| now < since + WORK_AFTER_LEAVE)
                });
            }
            if replica.alive && replica.task.is_finished() {
                let finished_at = *replica.finished_at.get_or_insert(now);
                if now >= finished_at + WORK_AFTER_LEAVE {
                    replica.alive = false;
                    replica.work.clear();
                }
            }
        }
        check_one_holder(replicas, keys);
        if Instant::now() >= end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn run_steps(steps: Vec<Step>) {
    let server = FakeLeases::default();
    let keys: Vec<ObjectKey> = keys().into_iter().take(64).collect();
    let mut joined = 0;
    let mut replicas: Vec<Running> = Vec::new();
    let mut join = |replicas: &mut Vec<Running>| {
        let identity = format!("r{joined}");
        let shard = server.shard(&identity);
        joined += 1;
        let task = spawn(&shard);
        replicas.push(Running {
            shard,
            member: format!("ring-{identity}"),
            task,
            alive: true,
            stopping: false,
            finished_at: None,
            work: Vec::new(),
            partitioned: false,
        });
    };
    join(&mut replicas);
    join(&mut replicas);
    pass(Duration::from_secs(5), &mut replicas, &keys).await;
    for step in steps {
        match step {
            Step::Start(r, k) => {
                let n = replicas.len();
                let replica = &mut replicas[r % n];
                if replica.alive
                    && let Some(guard) = replica.shard.gate().begin(&keys[k])
                {
                    replica.work.push(Work {
                        guard,
                        lost_since: None,
                    });
                }
            }
            Step::End(i) => {
                let total: usize = replicas.iter().map(|r| r.work.len()).sum();
                if total > 0 {
                    let mut i = i % total;
                    for replica in &mut replicas {
                        if i < replica.work.len() {
                            drop(replica.work.remove(i));
                            break;
                        }
                        i -= replica.work.len();
                    }
                }
            }
            Step::Join if replicas.len() < 5 => join(&mut replicas),
            Step::Join => {}
            Step::Kill(r) => {
                let n = replicas.len();
                let others = replicas
                    .iter()
                    .enumerate()
                    .filter(|(i, x)| *i != r % n && x.staying())
                    .count();
                if others > 0 && replicas[r % n].alive {
                    let replica = &mut replicas[r % n];
                    replica.task.abort();
                    replica.alive = false;
                    replica.work.clear();
                }
            }
            Step::Stop(r) => {
                let n = replicas.len();
                // Keep one replica that is not stopping.
                let others = replicas
                    .iter()
                    .enumerate()
                    .filter(|(i, x)| *i != r % n && x.staying())
                    .count();
                if others > 0 {
                    replicas[r % n].shard.stop();
                    replicas[r % n].stopping = true;
                }
            }
            Step::Wait(ms) => pass(Duration::from_millis(ms), &mut replicas, &keys).await,
            Step::Hang(r, ms) => {
                let n = replicas.len();
                let replica = &mut replicas[r % n];
                replica.partitioned = true;
                server.hold_writes(&replica.member, Duration::from_millis(ms));
            }
        }
        check_one_holder(&replicas, &keys);
        server.check_fresh_fences();
    }
    // The work ends; the live replicas share every key again. A write held
    // by a Hang step (up to 20 s) still lands when its hold ends, and the
    // others count it as a renewal they observe then (expiry is by observed
    // time): a killed member's Lease can live 20 s + the Lease duration
    // (15 s) after the last step, and the ring then needs a few rounds to
    // hand its keys on.
    for replica in &mut replicas {
        replica.work.clear();
    }
    pass(Duration::from_secs(20 + 15 + 15), &mut replicas, &keys).await;
    for key in &keys {
        let owners = replicas
            .iter()
            .filter(|r| r.alive && r.shard.gate().owns(key))
            .count();
        assert_eq!(owners, 1, "{key} has {owners} owners after settling");
    }
    server.check_fresh_fences();
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: std::env::var("SHARD_PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        ..proptest::prelude::ProptestConfig::default()
    })]

    // S2 through the whole membership task and its gate (what the
    // `shard_handover` properties replay only through the state machine):
    // replicas hold work on owned keys for generated times while others
    // join and die; no key is ever owned by one live replica while another
    // still works on it. S8: every fence, also by a replica whose writes
    // hang, names a version that expired and was not replaced.
    #[test]
    fn s2_s8_whole_replicas_hand_keys_over_after_their_work_and_fence_on_fresh_views(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(run_steps(steps));
    }
}
