//! [`LeaseConfig`]: a name, this replica's identity, and the Lease timings,
//! for a ring member ([`Shard`](super::Shard)) and for a leader election
//! alike.

use std::time::Duration;

use super::error::Error;

/// How a replica takes part in a ring ([`Shard`](super::Shard)) or in the
/// election of one Lease (`shard::leader::Leadership`).
///
/// The `name` is the ring's name for a [`Shard`](super::Shard) (its member
/// Lease, which is also its member id, is `<name>-<identity>`) and the
/// Lease's own name for a leader election (where the leader writes its
/// `identity` as the Lease's `holderIdentity`).
///
/// The timings follow client-go leader election's defaults and its rule
/// `lease_duration > renew_deadline > 1.2 × retry_period`: a replica renews
/// every `retry_period`, stops acting on its keys `renew_deadline` after it
/// sent its last successful renewal, and the others count it alive for
/// `lease_duration` after they observed that renewal (an election's
/// others take the Lease over only then). The gap
/// `lease_duration - renew_deadline` is the margin for clock-rate
/// differences and for work that must notice its guard was
/// [lost](super::WorkGuard::lost).
///
/// Every Lease request is abandoned when no answer came within a
/// `retry_period`, so a request the server never answers holds the
/// membership task up for at most that long; the replica stops acting at its
/// deadline either way (the [`KeyGate`](super::KeyGate) enforces it).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::shard::LeaseConfig;
///
/// let config = LeaseConfig {
///     lease_duration: Duration::from_secs(30),
///     renew_deadline: Duration::from_secs(20),
///     ..LeaseConfig::new("workers", "pod-0")
/// };
/// assert_eq!((config.name.as_str(), config.identity.as_str()), ("workers", "pod-0"));
/// assert!(config.validate().is_ok());
/// let late = LeaseConfig { renew_deadline: Duration::from_secs(20), ..LeaseConfig::new("workers", "pod-0") };
/// assert!(late.validate().is_err());
/// assert!(LeaseConfig::new("workers", "").validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The ring's name, or the elected Lease's.
    pub name: String,
    /// This replica's identity: unique among the replicas, for example the
    /// pod name.
    pub identity: String,
    /// How long the others count a replica alive after they saw its Lease
    /// change; written in the Lease as `leaseDurationSeconds` (whole
    /// seconds). 15 s by default.
    pub lease_duration: Duration,
    /// How long after sending its last successful renewal a replica keeps
    /// acting (on its keys, or as the leader). 10 s by default.
    pub renew_deadline: Duration,
    /// How often a replica renews its Lease (and retries a failed write,
    /// and the others read it); also how long it waits for the answer to
    /// any Lease request. 2 s by default.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// Replica `identity` (for example the pod name, unique among the
    /// replicas) of the ring or Lease `name`, with client-go's timings: a
    /// 15 s lease duration, a 10 s renew deadline and a 2 s retry period.
    /// Set other timings as fields (see the [type docs](LeaseConfig)).
    pub fn new(name: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks that the identity is not empty and the timings (client-go's
    /// rules).
    // Shard::new and Leadership::new validate; kept for the crate's own tests.
    #[doc(hidden)]
    pub fn validate(&self) -> Result<(), Error> {
        if self.identity.is_empty() {
            return Err(Error::EmptyIdentity);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(Error::DeadlineNotShorter {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err(Error::RetryTooSlow {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.lease_duration.subsec_nanos() != 0 || self.lease_duration.as_secs() == 0 {
            return Err(Error::LeaseDurationNotWholeSeconds);
        }
        Ok(())
    }

    /// A ring member's Lease name, which is also its member id:
    /// `<name>-<identity>`.
    pub(crate) fn member_lease_name(&self) -> String {
        format!("{}-{}", self.name, self.identity)
    }

    /// The label selector of a ring's Leases.
    pub(crate) fn selector(&self) -> String {
        format!("{}={}", super::lease::RING_LABEL, self.name)
    }
}
