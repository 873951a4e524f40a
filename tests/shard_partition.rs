//! S3 on real time, through `kube::Client` and the fake API server: three
//! members share 200 keys over Leases, and the server holds one member's
//! Lease updates unanswered. No key is ever admitted by two members, and a
//! member whose updates hang stops acting within its renew deadline.
//!
//! Real time, not tokio's paused clock: the members talk HTTP to the fake
//! server, and the point is that a request the server never answers cannot
//! keep a member acting. The timings are a fast ring's (Lease 4 s, renew
//! deadline 3 s, retry 1 s), so the test takes about 20 s.
//!
//! Every wait is for the state it names (a whole ring, a takeover) with a
//! limit that only bounds a hang, and the one upper bound on time, how long
//! x acts after its updates begin to hang, is read so that a test thread
//! the machine leaves unscheduled for seconds cannot break it (see
//! `s3_a_held_lease_update_never_leaves_a_key_with_two_members`).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube_informer::{
    ObjectKey,
    shard::{LeaseConfig, Shard},
};
use kube_informer_testing::{FakeApiServer, ResourceType};

/// A fast ring's timings, with room for a loaded CI machine.
const LEASE_SECS: u64 = 4;
const RENEW_DEADLINE: Duration = Duration::from_secs(3);
const RETRY_PERIOD: Duration = Duration::from_secs(1);

/// How long a wait for a state of the ring may take before the test calls
/// it a hang: far beyond what the ring needs (a few Lease durations), so a
/// loaded machine only makes the test slower.
const HANG: Duration = Duration::from_secs(90);

fn member(server: &FakeApiServer, identity: &str) -> Shard {
    let api = Api::<Lease>::namespaced(server.client(), "leases");
    let config = LeaseConfig {
        lease_duration: Duration::from_secs(LEASE_SECS),
        renew_deadline: RENEW_DEADLINE,
        retry_period: RETRY_PERIOD,
        ..LeaseConfig::new("ring", identity)
    };
    Shard::new(api, config).unwrap()
}

/// For each key, how many members admit it now (each admission is a
/// `begin` whose guard is dropped at once).
fn admissions(members: &[&Shard], keys: &[ObjectKey]) -> Vec<usize> {
    keys.iter()
        .map(|key| {
            members
                .iter()
                .filter(|m| m.gate().begin(key).is_some())
                .count()
        })
        .collect()
}

/// For each key, the index in `members` of the member that owns it, if
/// the ring is whole now: every member acts under a member set of all of
/// `members`, each owns at least one key, and every key is admitted by
/// exactly one member.
///
/// Every key admitted once is not enough by itself: until the last member
/// joins, the others split all the keys between them.
fn whole(members: &[&Shard], keys: &[ObjectKey]) -> Option<Vec<usize>> {
    if members
        .iter()
        .any(|m| m.gate().ownership().members() != members.len())
    {
        return None;
    }
    let owners = keys
        .iter()
        .map(|key| {
            let mut admit = (0..members.len()).filter(|i| members[*i].gate().begin(key).is_some());
            match (admit.next(), admit.next()) {
                (Some(owner), None) => Some(owner),
                _ => None,
            }
        })
        .collect::<Option<Vec<usize>>>()?;
    (0..members.len())
        .all(|i| owners.contains(&i))
        .then_some(owners)
}

/// Waits until the ring is [`whole`]; returns each key's owner.
async fn whole_ring(members: &[&Shard], keys: &[ObjectKey]) -> Vec<usize> {
    let end = Instant::now() + HANG;
    loop {
        if let Some(owners) = whole(members, keys) {
            return owners;
        }
        assert!(
            Instant::now() < end,
            "the members did not form one ring within {HANG:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Samples every 10 ms, asserting that no key is admitted by two members,
/// and calls `look` after each sample, until `at_least` has passed and
/// `look` has said that the state it waits for was reached; fails after
/// [`HANG`]. The pause between samples is the sampling rate, not
/// synchronisation: the property must hold in every sample, whenever it
/// is taken.
async fn watch_admissions(
    members: &[&Shard],
    keys: &[ObjectKey],
    at_least: Duration,
    mut look: impl FnMut() -> bool,
) {
    let start = Instant::now();
    let mut reached = false;
    while !reached || start.elapsed() < at_least {
        assert!(
            start.elapsed() < HANG,
            "the state waited for was not reached within {HANG:?}"
        );
        let counts = admissions(members, keys);
        if let Some(i) = counts.iter().position(|n| *n > 1) {
            panic!("{} admitted by {} members", keys[i], counts[i]);
        }
        reached |= look();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// S3
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_held_lease_update_never_leaves_a_key_with_two_members() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let server = FakeApiServer::start().await;
    server.register(&ResourceType::of::<Lease>());
    let (x, y, z) = (
        member(&server, "x"),
        member(&server, "y"),
        member(&server, "z"),
    );
    let tasks: Vec<_> = [&x, &y, &z]
        .into_iter()
        .map(|m| tokio::spawn(m.run()))
        .collect();
    let members = [&x, &y, &z];
    let keys: Vec<ObjectKey> = (0..200)
        .map(|i| ObjectKey::new(Some("ns"), &format!("object-{i}")).unwrap())
        .collect();
    let owners = whole_ring(&members, &keys).await;
    let of_x: Vec<usize> = (0..keys.len()).filter(|i| owners[*i] == 0).collect();

    // One update held for 12 s: x abandons it after a retry period and
    // renews with the next (`shard_member` checks that on the paused
    // clock); here, whatever the load on the machine, never two members.
    server.hold_updates("ring-x", Duration::from_secs(12), 1);
    watch_admissions(&members, &keys, Duration::from_secs(4), || true).await;
    let kept = of_x.iter().filter(|i| x.gate().owns(&keys[**i])).count();
    eprintln!(
        "S3: x owns {kept} of its {} keys after one held update",
        of_x.len()
    );

    // The partition starts from a whole ring: on a loaded machine x may
    // have missed its deadline above, and handed its keys over.
    let owners = whole_ring(&members, &keys).await;
    let of_x: Vec<usize> = (0..keys.len()).filter(|i| owners[*i] == 0).collect();
    let x_acts = || of_x.iter().any(|i| x.gate().owns(&keys[*i]));

    // Every update of x held until the partition ends: x cannot renew,
    // stops at its deadline and does not act again while the partition
    // lasts, and y and z take its keys over; never two at once.
    server.hold_updates("ring-x", Duration::from_secs(12), usize::MAX);
    // Read once the hold is in place: every update x had an answer to
    // reached the server before this instant, so it was sent before it.
    let partition = Instant::now();
    // When the last sample that saw x act began.
    let mut last_acting = None;
    let mut x_stopped = false;
    let mut taken_over = false;
    watch_admissions(&members, &keys, Duration::from_secs(14), || {
        let read_at = Instant::now();
        if x_acts() {
            last_acting = Some(read_at);
        } else {
            x_stopped = true;
        }
        taken_over |= of_x
            .iter()
            .all(|i| y.gate().owns(&keys[*i]) || z.gate().owns(&keys[*i]));
        x_stopped && taken_over
    })
    .await;
    // The gate stops x a renew deadline after its last successful update
    // was sent, which was before `partition`: no sample that began a renew
    // deadline after `partition` saw x act, during the whole partition.
    // The gate compares its deadline with the clock on every read, so a
    // sample that saw x act began before that deadline: a test thread left
    // unscheduled for seconds only makes the samples sparse, and the last
    // one that saw x act earlier, never later.
    let acted_for = last_acting.map_or(Duration::ZERO, |at| at.duration_since(partition));
    eprintln!("S3: x acted for at most {acted_for:?} after its updates began to hang");
    assert!(acted_for < RENEW_DEADLINE, "{acted_for:?}");

    // The partition ends; x joins again and the three share the keys.
    server.clear_faults();
    whole_ring(&members, &keys).await;
    for member in members {
        member.stop();
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
}
