//! [`LeaderConfig`]: which Lease, who competes for it, and the timings.

use std::time::Duration;

use crate::shard::{Error, ShardConfig};

/// How a replica takes part in the election of one Lease.
///
/// The timings are client-go leader election's, with its defaults and its
/// rule `lease_duration > renew_deadline > 1.2 × retry_period`: the leader
/// renews every `retry_period`, stops acting `renew_deadline` after it sent
/// its last successful renewal (LE3), and the others take the Lease over
/// only once it went `lease_duration` without a new version by their own
/// observation (LE1). The gap `lease_duration - renew_deadline` is the
/// margin for clock-rate differences and for work that must notice that
/// leadership was [lost](crate::shard::WorkGuard::lost). Every Lease request
/// is abandoned after a `retry_period` without an answer.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::shard::leader::LeaderConfig;
///
/// let config = LeaderConfig::new("garbage-collector", "pod-0")
///     .lease_duration(Duration::from_secs(30))
///     .renew_deadline(Duration::from_secs(20))
///     .retry_period(Duration::from_secs(4));
/// assert_eq!((config.lease_name(), config.identity()), ("garbage-collector", "pod-0"));
/// assert!(config.validate().is_ok());
/// assert!(LeaderConfig::new("garbage-collector", "").validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    pub(crate) lease_name: String,
    pub(crate) identity: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
}

impl LeaderConfig {
    /// Replica `identity` (for example the pod name, unique among the
    /// replicas) competing for the Lease `lease_name`, with a 15 s lease
    /// duration, a 10 s renew deadline and a 2 s retry period.
    pub fn new(lease_name: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            lease_name: lease_name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// How long the others wait, after they saw the Lease change last,
    /// before they take it over; written in the Lease as
    /// `leaseDurationSeconds`.
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long after sending its last successful renewal the leader keeps
    /// acting.
    #[must_use]
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// How often the leader renews and the others read the Lease; also how
    /// long any Lease request may wait for its answer.
    #[must_use]
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// The Lease's name.
    pub fn lease_name(&self) -> &str {
        &self.lease_name
    }

    /// This replica's identity, written as the Lease's `holderIdentity`
    /// while it leads.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Checks the timings (client-go's rules, the same as a ring's) and that
    /// the identity is not empty.
    pub fn validate(&self) -> Result<(), Error> {
        if self.identity.is_empty() {
            return Err(Error::EmptyIdentity);
        }
        // One place for the timing rules of the ring and the election.
        ShardConfig::new(self.lease_name.as_str(), self.identity.as_str())
            .lease_duration(self.lease_duration)
            .renew_deadline(self.renew_deadline)
            .retry_period(self.retry_period)
            .validate()
    }
}
