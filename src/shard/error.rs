//! [`Error`]: everything that can go wrong in sharding and leader election,
//! in one type: an unsafe configuration, a second `run`, the Lease
//! informer, a Lease request, a fingerprint that does not parse.

use std::time::Duration;

use crate::informer;

/// Errors of the [`shard`](super) module: its configuration, its run, and
/// its Lease requests (what the API server answers).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::shard::{Error, LeaseConfig};
///
/// let config = LeaseConfig { renew_deadline: Duration::from_secs(20), ..LeaseConfig::new("workers", "pod-0") };
/// let error = config.validate().unwrap_err();
/// assert!(matches!(error, Error::DeadlineNotShorter { .. }));
/// assert_eq!(error.to_string(), "lease duration 15s must be longer than the renew deadline 20s");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is unsafe: a member would act past the time the
    /// others count it alive.
    #[error(
        "lease duration {lease_duration:?} must be longer than the renew deadline {renew_deadline:?}"
    )]
    DeadlineNotShorter {
        /// The lease duration.
        lease_duration: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
    },
    /// The configuration is unsafe: a retry would not fit before the
    /// deadline.
    #[error(
        "renew deadline {renew_deadline:?} must be longer than 1.2 × the retry period {retry_period:?}"
    )]
    RetryTooSlow {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry_period: Duration,
    },
    /// The configuration's lease duration is not whole seconds, which is
    /// what Leases count.
    #[error("lease duration must be a whole number of seconds, at least one")]
    LeaseDurationNotWholeSeconds,
    /// The identity is empty, which reads as "no holder" to every other
    /// replica.
    #[error("the identity must not be empty")]
    EmptyIdentity,
    /// `run` was called twice.
    #[error("shard membership is already running or has run")]
    AlreadyRunning,
    /// The Lease informer refused to start or subscribe.
    #[error("lease informer: {0}")]
    Informer(#[from] informer::Error),
    /// A Lease create found the Lease already there.
    #[error("lease already exists")]
    LeaseAlreadyExists,
    /// The Lease is not there.
    #[error("lease not found")]
    LeaseNotFound,
    /// The Lease changed since the resourceVersion the call was
    /// conditional on.
    #[error("lease changed since it was read")]
    LeaseConflict,
    /// No answer to a Lease request came in time; the request was
    /// abandoned (it may still have been applied).
    #[error("lease request got no answer within {0:?}")]
    LeaseTimedOut(Duration),
    /// A Lease request failed otherwise (network, 403, bad response).
    #[error("lease request failed: {0}")]
    LeaseFailed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A member set fingerprint that is not 16 hexadecimal digits.
    #[error("invalid member set fingerprint {0:?}")]
    InvalidFingerprint(String),
}

/// A Lease request's `kube` error, as the Lease variants say it.
impl From<kube::Error> for Error {
    fn from(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if status.is_already_exists() => Self::LeaseAlreadyExists,
            kube::Error::Api(status) if status.is_not_found() => Self::LeaseNotFound,
            kube::Error::Api(status) if status.is_conflict() => Self::LeaseConflict,
            _ => Self::LeaseFailed(Box::new(error)),
        }
    }
}
