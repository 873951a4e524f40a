//! S3 on real time, through `kube::Client` and the fake API server: three
//! members share 200 keys over Leases, and the server holds one member's
//! Lease updates unanswered. No key is ever admitted by two members.
//!
//! Real time, not tokio's paused clock: the members talk HTTP to the fake
//! server, and the point is that a request the server never answers cannot
//! keep a member acting. The timings are a fast ring's (Lease 4 s, renew
//! deadline 3 s, retry 1 s), so the test takes about 40 s.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube_informer::{
    ObjectKey,
    shard::{Shard, ShardConfig},
};
use kube_informer_testing::{FakeApiServer, ResourceType};

/// A fast ring's timings, with room for a loaded CI machine.
const LEASE_SECS: u64 = 4;
const RENEW_DEADLINE: Duration = Duration::from_secs(3);
const RETRY_PERIOD: Duration = Duration::from_secs(1);

fn member(server: &FakeApiServer, identity: &str) -> Shard {
    let api = Api::<Lease>::namespaced(server.client(), "leases");
    let config = ShardConfig::new("ring", identity)
        .lease_duration(Duration::from_secs(LEASE_SECS))
        .renew_deadline(RENEW_DEADLINE)
        .retry_period(RETRY_PERIOD);
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

/// Samples every 10 ms for `time`, asserting that no key is admitted by
/// two members, and hands each sample to `seen`. The pause between samples
/// is the sampling rate, not synchronisation: the property must hold in
/// every sample, whenever it is taken.
async fn watch_admissions(
    members: &[&Shard],
    keys: &[ObjectKey],
    time: Duration,
    mut seen: impl FnMut(&[usize]),
) {
    let end = Instant::now() + time;
    while Instant::now() < end {
        let counts = admissions(members, keys);
        if let Some(i) = counts.iter().position(|n| *n > 1) {
            panic!("{} admitted by {} members", keys[i], counts[i]);
        }
        seen(&counts);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits, up to `limit`, until every key is admitted by exactly one member.
async fn settle(members: &[&Shard], keys: &[ObjectKey], limit: Duration) {
    let end = Instant::now() + limit;
    while admissions(members, keys).iter().any(|n| *n != 1) {
        assert!(Instant::now() < end, "the members did not share the keys");
        tokio::time::sleep(Duration::from_millis(20)).await;
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
    settle(&members, &keys, Duration::from_secs(20)).await;
    let of_x: Vec<usize> = (0..keys.len())
        .filter(|i| x.gate().owns(&keys[*i]))
        .collect();
    assert!(!of_x.is_empty());

    // One update held for 12 s: x abandons it after a retry period and
    // renews with the next (`shard_member` checks that on the paused
    // clock); here, whatever the load on the machine, never two members.
    server.hold_updates("ring-x", Duration::from_secs(12), 1);
    watch_admissions(&members, &keys, Duration::from_secs(4), |_| {}).await;
    let kept = of_x.iter().filter(|i| x.gate().owns(&keys[**i])).count();
    eprintln!(
        "S3: x owns {kept} of its {} keys after one held update",
        of_x.len()
    );

    // Every update held for 12 s, a dozen times over: x cannot renew, stops
    // at its deadline, and y and z take its keys over; never two at once.
    let partition = Instant::now();
    server.hold_updates("ring-x", Duration::from_secs(12), 12);
    let mut x_stopped = None;
    let mut taken_over = false;
    watch_admissions(&members, &keys, Duration::from_secs(14), |_| {
        if x_stopped.is_none() && of_x.iter().all(|i| !x.gate().owns(&keys[*i])) {
            x_stopped = Some(partition.elapsed());
        }
        taken_over |= of_x
            .iter()
            .all(|i| y.gate().owns(&keys[*i]) || z.gate().owns(&keys[*i]));
    })
    .await;
    let x_stopped = x_stopped.expect("x stopped acting");
    eprintln!("S3: x stopped {x_stopped:?} after its updates began to hang");
    // Its last successful update was sent at most a retry period before
    // the partition (one more update may have been on its way, and held),
    // and the gate stops it a renew deadline after that update was sent;
    // 500 ms more for the sampling and the update's own round trip.
    assert!(
        x_stopped <= RENEW_DEADLINE + RETRY_PERIOD + Duration::from_millis(500),
        "{x_stopped:?}"
    );
    assert!(taken_over, "y and z took x's keys over");

    // The partition ends; x joins again and the three share the keys.
    settle(&members, &keys, Duration::from_secs(40)).await;
    for member in members {
        member.stop();
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
}
