//! [`ShardConfig`]: the ring's name, this member's identity, and the Lease
//! timings.

use std::time::Duration;

use super::error::Error;

/// How a replica takes part in a ring.
///
/// The timings follow client-go leader election's defaults and its rule
/// `lease_duration > renew_deadline > 1.2 × retry_period`: a member renews
/// every `retry_period`, stops acting on its keys `renew_deadline` after it
/// sent its last successful renewal, and the others count it alive for
/// `lease_duration` after they observed that renewal. The gap
/// `lease_duration - renew_deadline` is the margin for clock-rate
/// differences and for work that must notice its guard was
/// [lost](super::WorkGuard::lost).
///
/// Every Lease request is abandoned when no answer came within a
/// `retry_period`, so a request the server never answers holds the
/// membership task up for at most that long; the member stops acting at its
/// deadline either way (the [`KeyGate`](super::KeyGate) enforces it).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::shard::ShardConfig;
///
/// let config = ShardConfig::new("workers", "pod-0")
///     .lease_duration(Duration::from_secs(30))
///     .renew_deadline(Duration::from_secs(20));
/// assert_eq!(config.lease_name(), "workers-pod-0");
/// assert!(config.validate().is_ok());
/// assert!(ShardConfig::new("workers", "pod-0").renew_deadline(Duration::from_secs(20)).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardConfig {
    pub(crate) ring: String,
    pub(crate) identity: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
}

impl ShardConfig {
    /// Member `identity` (for example the pod name) of the ring `ring`,
    /// with a 15 s lease duration, a 10 s renew deadline and a 2 s retry
    /// period.
    pub fn new(ring: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            ring: ring.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// How long the others count a member alive after they saw it renew.
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long after sending its last successful renewal a member keeps
    /// acting on its keys.
    #[must_use]
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// How often a member renews its Lease (and retries a failed write);
    /// also how long it waits for the answer to any Lease request.
    #[must_use]
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// The name of this member's Lease, which is also its member id:
    /// `<ring>-<identity>`.
    pub fn lease_name(&self) -> String {
        format!("{}-{}", self.ring, self.identity)
    }

    /// Checks the timings (client-go's rules).
    pub fn validate(&self) -> Result<(), Error> {
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

    pub(crate) fn selector(&self) -> String {
        format!("{}={}", super::lease::RING_LABEL, self.ring)
    }
}
