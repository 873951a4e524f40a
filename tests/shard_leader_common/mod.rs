//! Helpers of the leader election tests: replicas on the fake API server,
//! each through a connection of its own that a test can cut, the claims
//! each one made (recorded on its side), and samples of who acts.
#![allow(dead_code)]

use std::{future::Future, sync::Arc, time::Duration};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Api;
use kube_informer::{
    shard::{self, LeaseConfig, leader::Leadership},
    unstable::shard::LeaseApi,
};
use kube_informer_testing::{FakeApiServer, Link, ResourceType};
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};

pub const LEASE: &str = "lock";

/// Lease 3 s, renew deadline 2 s, retry period 500 ms.
pub fn config(identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        ..LeaseConfig::new(LEASE, identity)
    }
}

/// A successful write that named its sender the holder: the sender may act
/// from its answer until a renew deadline after `sent_at` at the latest.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// When the write was handed to the client; never earlier than the
    /// instant the election measures its deadline from.
    pub sent_at: Instant,
}

/// A [`LeaseApi`] that records the successful claims made through it.
#[derive(Clone)]
pub struct Recorded<A> {
    api: A,
    claims: Arc<Mutex<Vec<Claim>>>,
}

impl<A: LeaseApi> Recorded<A> {
    async fn claim(
        &self,
        write: impl Future<Output = Result<Lease, shard::Error>>,
    ) -> Result<Lease, shard::Error> {
        let sent_at = Instant::now();
        let result = write.await;
        if let Ok(lease) = &result
            && holder(lease).is_some()
        {
            self.claims.lock().push(Claim { sent_at });
        }
        result
    }
}

impl<A: LeaseApi> LeaseApi for Recorded<A> {
    async fn create(&self, lease: Lease) -> Result<Lease, shard::Error> {
        self.claim(self.api.create(lease)).await
    }
    async fn replace(&self, lease: Lease) -> Result<Lease, shard::Error> {
        self.claim(self.api.replace(lease)).await
    }
    async fn get(&self, name: &str) -> Result<Option<Lease>, shard::Error> {
        self.api.get(name).await
    }
    async fn delete_if(&self, name: &str, resource_version: &str) -> Result<(), shard::Error> {
        self.api.delete_if(name, resource_version).await
    }
    async fn list(&self, selector: &str) -> Result<Vec<Lease>, shard::Error> {
        self.api.list(selector).await
    }
}

/// The Lease's holder, if it names one.
pub fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

/// The election's Lease as the server holds it.
pub fn lease_spec(server: &FakeApiServer) -> Option<LeaseSpec> {
    server
        .objects::<Lease>()
        .into_iter()
        .find(|lease| lease.metadata.name.as_deref() == Some(LEASE))
        .and_then(|lease| lease.spec)
}

/// One replica: its election, its connection, the claims it made.
pub struct Replica {
    pub name: String,
    pub leadership: Leadership,
    pub link: Link,
    claims: Arc<Mutex<Vec<Claim>>>,
    task: Option<JoinHandle<Result<(), shard::Error>>>,
}

impl Replica {
    /// Starts replica `name` with [`config`].
    pub fn start(server: &FakeApiServer, name: &str) -> Self {
        Self::start_with(server, config(name))
    }

    pub fn start_with(server: &FakeApiServer, config: LeaseConfig) -> Self {
        server.register(&ResourceType::of::<Lease>());
        let (client, link) = server.linked_client();
        let claims = Arc::new(Mutex::new(Vec::new()));
        let api = Recorded {
            api: Api::<Lease>::default_namespaced(client),
            claims: Arc::clone(&claims),
        };
        let name = config.identity.clone();
        let leadership = Leadership::with_api(api, config).unwrap();
        let task = Some(tokio::spawn(leadership.run()));
        Self {
            name,
            leadership,
            link,
            claims,
            task,
        }
    }

    /// Waits for the election task to end (at once if it was waited for).
    pub async fn join(&mut self) -> Result<(), shard::Error> {
        match self.task.take() {
            Some(task) => task.await.expect("the election task does not panic"),
            None => Ok(()),
        }
    }

    /// Ends the election task as a kill would: no release, no more renewals.
    pub fn kill(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }

    pub fn claims(&self) -> Vec<Claim> {
        self.claims.lock().clone()
    }

    pub fn last_claim(&self) -> Option<Claim> {
        self.claims.lock().last().copied()
    }
}

/// Who acted as leader at one moment: each replica's `is_leader`, read
/// between `before` and `after`.
#[derive(Clone, Debug)]
pub struct Sample {
    pub before: Instant,
    pub after: Instant,
    pub leading: Vec<bool>,
}

pub fn sample(leaderships: &[Leadership]) -> Sample {
    let before = Instant::now();
    let leading = leaderships.iter().map(Leadership::is_leader).collect();
    Sample {
        before,
        after: Instant::now(),
        leading,
    }
}

/// No sample read over less than `window` saw two leaders. A correct
/// election leaves `lease_duration - renew_deadline` between one leader's
/// end and the next one's start, so reads closer together than that cannot
/// see both unless the rule is broken; longer reads (a descheduled sampler)
/// are skipped. Returns how many samples were judged.
pub fn assert_one_leader_at_a_time(samples: &[Sample], window: Duration) -> usize {
    let mut judged = 0;
    for sample in samples {
        if sample.after - sample.before > window {
            continue;
        }
        judged += 1;
        let leaders = sample.leading.iter().filter(|l| **l).count();
        assert!(leaders <= 1, "two replicas act as leader: {sample:?}");
    }
    judged
}

/// Every sample in which a replica acted lies in the window of one of its
/// own claims: after the claim was sent and before a renew deadline from
/// then (LE3), measured on the replica's side, so a sampler descheduled
/// between its clock reading and its read cannot fail it wrongly (the
/// clock is read before the read starts).
pub fn assert_acting_only_within_claims(
    samples: &[Sample],
    replicas: &[&Replica],
    renew_deadline: Duration,
) {
    let claims: Vec<Vec<Claim>> = replicas.iter().map(|r| r.claims()).collect();
    for sample in samples {
        for (i, leading) in sample.leading.iter().enumerate() {
            if !leading {
                continue;
            }
            let covered = claims[i].iter().any(|claim| {
                claim.sent_at <= sample.after && sample.before < claim.sent_at + renew_deadline
            });
            assert!(
                covered,
                "{} acted outside every claim's renew deadline: {sample:?}",
                replicas[i].name
            );
        }
    }
}

/// The windows of different replicas' claims (from a claim's send to a
/// renew deadline later) never overlap, among the claims sent before
/// `until`: the election's safety (see the module docs of
/// `shard::leader`) from the replicas' own records.
pub fn assert_claim_windows_disjoint(
    replicas: &[&Replica],
    renew_deadline: Duration,
    until: Instant,
) {
    let windows: Vec<(usize, Instant, Instant)> = replicas
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.claims()
                .into_iter()
                .filter(|c| c.sent_at < until)
                .map(move |c| (i, c.sent_at, c.sent_at + renew_deadline))
        })
        .collect();
    for (i, start, end) in &windows {
        for (j, other_start, other_end) in &windows {
            if i != j {
                assert!(
                    end <= other_start || other_end <= start,
                    "{} and {} could both act: claims sent {:?} apart",
                    replicas[*i].name,
                    replicas[*j].name,
                    if start < other_start {
                        *other_start - *start
                    } else {
                        *start - *other_start
                    }
                );
            }
        }
    }
}
