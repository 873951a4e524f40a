//! The ring's Leases: how a member's state is written in a
//! `coordination.k8s.io/v1` Lease, and the few API calls the membership task
//! makes ([`LeaseApi`]), behind a trait so tests can fake the server.

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions},
};

use super::{
    assign::{Fingerprint, Member},
    error::Error,
    handover::OwnLease,
    view::LeaseRecord,
};

/// The label that puts a Lease in a ring; its value is the ring's name.
pub const RING_LABEL: &str = "kube-informer.rs/ring";

/// The annotation in which a member writes the fingerprint of the
/// member set it acknowledged.
pub const ACK_ANNOTATION: &str = "kube-informer.rs/acknowledged-members";

/// The Lease calls of the membership task, all in the ring's namespace.
/// Implemented for `kube::Api<Lease>`; tests implement it over a fake.
pub trait LeaseApi: Send + Sync + 'static {
    /// Creates a Lease.
    fn create(&self, lease: Lease) -> impl Future<Output = Result<Lease, Error>> + Send;
    /// Replaces a Lease, conditional on the resourceVersion in its metadata.
    fn replace(&self, lease: Lease) -> impl Future<Output = Result<Lease, Error>> + Send;
    /// Reads one Lease.
    fn get(&self, name: &str) -> impl Future<Output = Result<Option<Lease>, Error>> + Send;
    /// Deletes a Lease if it still has this resourceVersion.
    fn delete_if(
        &self,
        name: &str,
        resource_version: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Lists the Leases with this label selector, in one consistent read.
    fn list(&self, selector: &str) -> impl Future<Output = Result<Vec<Lease>, Error>> + Send;
}

impl LeaseApi for Api<Lease> {
    async fn create(&self, lease: Lease) -> Result<Lease, Error> {
        Ok(Api::create(self, &PostParams::default(), &lease).await?)
    }

    async fn replace(&self, lease: Lease) -> Result<Lease, Error> {
        let name = lease.metadata.name.clone().unwrap_or_default();
        Ok(Api::replace(self, &name, &PostParams::default(), &lease).await?)
    }

    async fn get(&self, name: &str) -> Result<Option<Lease>, Error> {
        Ok(self.get_opt(name).await?)
    }

    async fn delete_if(&self, name: &str, resource_version: &str) -> Result<(), Error> {
        let params = DeleteParams::default().preconditions(Preconditions {
            resource_version: Some(resource_version.to_owned()),
            uid: None,
        });
        Api::delete(self, name, &params).await?;
        Ok(())
    }

    async fn list(&self, selector: &str) -> Result<Vec<Lease>, Error> {
        // No resourceVersion: a quorum read, newer than any write that
        // completed before it.
        Ok(Api::list(self, &ListParams::default().labels(selector))
            .await?
            .items)
    }
}

impl<T: LeaseApi> LeaseApi for Arc<T> {
    fn create(&self, lease: Lease) -> impl Future<Output = Result<Lease, Error>> + Send {
        (**self).create(lease)
    }
    fn replace(&self, lease: Lease) -> impl Future<Output = Result<Lease, Error>> + Send {
        (**self).replace(lease)
    }
    fn get(&self, name: &str) -> impl Future<Output = Result<Option<Lease>, Error>> + Send {
        (**self).get(name)
    }
    fn delete_if(
        &self,
        name: &str,
        resource_version: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        (**self).delete_if(name, resource_version)
    }
    fn list(&self, selector: &str) -> impl Future<Output = Result<Vec<Lease>, Error>> + Send {
        (**self).list(selector)
    }
}

/// Reads the ring's view of a Lease; `None` for a Lease without a name,
/// uid or resourceVersion (not one the API server returned).
pub fn lease_record(lease: &Lease) -> Option<LeaseRecord> {
    let meta = &lease.metadata;
    let duration = lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_duration_seconds)
        .map_or(Duration::ZERO, |s| Duration::from_secs(s.max(0) as u64));
    Some(LeaseRecord {
        member: Member::new(meta.name.as_deref()?, meta.uid.as_deref()?),
        resource_version: meta.resource_version.clone()?,
        duration,
        ack: ack_of(lease),
    })
}

pub(crate) fn own_lease(lease: &Lease) -> Option<OwnLease> {
    Some(OwnLease {
        uid: lease.metadata.uid.as_deref()?.into(),
        resource_version: lease.metadata.resource_version.clone()?,
        ack: ack_of(lease),
    })
}

fn ack_of(lease: &Lease) -> Option<Fingerprint> {
    lease
        .metadata
        .annotations
        .as_ref()?
        .get(ACK_ANNOTATION)?
        .parse()
        .ok()
}

/// The `acquireTime` and `leaseTransitions` that `holder` writes at `now`
/// over a Lease whose spec was `prior` (`None`: a create), as client-go
/// leader election's record has them: a create acquires and counts no
/// transition; the same holder keeps both; another holder (or none) before
/// means a new acquisition and one more transition.
pub(crate) fn acquisition(
    holder: &str,
    prior: Option<&LeaseSpec>,
    now: &MicroTime,
) -> (MicroTime, i32) {
    let Some(prior) = prior else {
        return (now.clone(), 0);
    };
    let transitions = prior.lease_transitions.unwrap_or(0);
    match &prior.acquire_time {
        Some(acquired) if prior.holder_identity.as_deref() == Some(holder) => {
            (acquired.clone(), transitions)
        }
        // Same holder but no acquire time recorded: record one now; not a
        // transition.
        None if prior.holder_identity.as_deref() == Some(holder) => (now.clone(), transitions),
        _ => (now.clone(), transitions.saturating_add(1)),
    }
}

/// The Lease a member writes: ring label, acknowledgement, holder, duration
/// and renew time; conditional on `resource_version` when given.
///
/// `prior` is the spec of the Lease this write replaces, as this member last
/// wrote or read it (`None` for a create). The acquire time and the
/// transition count follow client-go leader election's record: a create sets
/// the acquire time and counts no transition; a renewal by the same holder
/// keeps both, so only the renew time moves; taking over a Lease whose holder
/// was someone else sets the acquire time anew and counts one more
/// transition.
pub(crate) fn render(
    name: &str,
    ring: &str,
    duration: Duration,
    ack: Option<Fingerprint>,
    resource_version: Option<&str>,
    prior: Option<&LeaseSpec>,
) -> Lease {
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let (acquire_time, lease_transitions) = acquisition(name, prior, &now);
    Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(RING_LABEL.to_owned(), ring.to_owned())])),
            annotations: ack
                .map(|ack| BTreeMap::from([(ACK_ANNOTATION.to_owned(), ack.to_string())])),
            resource_version: resource_version.map(str::to_owned),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.to_owned()),
            lease_duration_seconds: Some(duration.as_secs().try_into().unwrap_or(i32::MAX)),
            renew_time: Some(now),
            acquire_time: Some(acquire_time),
            lease_transitions: Some(lease_transitions),
            ..LeaseSpec::default()
        }),
    }
}
