//! [`LeaseWriter`]: the membership task's writes of its own Lease, and
//! [`WriteTimes`], when the next one may go.
//!
//! A write creates the Lease or renews it (conditional on the version last
//! written, carrying the current acknowledgement); a conflict or an
//! existing Lease is read back and settled at once. A failed write waits a
//! retry period before the next, even when a create or an acknowledgement
//! is pending (S8): at once would send one request after another for as
//! long as the server refuses them, and, when refusals come back at once,
//! never let the task wait for anything else.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use tokio::time::Instant;

use super::{
    assign::Fingerprint,
    config::LeaseConfig,
    error::Error,
    handover::Handover,
    lease::{LeaseApi, own_lease, render},
};

/// The own Lease's writer: create, renew with the current acknowledgement,
/// recover from conflicts.
pub(super) struct LeaseWriter {
    name: String,
    /// The version of a Lease of this name found on create (left by an
    /// earlier process of the same identity): the next write replaces it.
    adopt: Option<String>,
    /// The spec of the own Lease as last written or read: a renewal keeps
    /// its acquire time and transition count.
    spec: Option<LeaseSpec>,
}

impl LeaseWriter {
    /// The writer of the Lease named `name`, which may exist already.
    pub(super) fn new(name: String) -> Self {
        Self {
            name,
            adopt: None,
            spec: None,
        }
    }

    /// One write; says when the next may follow.
    pub(super) async fn write<A: LeaseApi>(
        &mut self,
        api: &A,
        config: &LeaseConfig,
        core: &mut Handover,
        ack: Option<Fingerprint>,
    ) -> Next {
        let sent_at = Instant::now();
        let version = core
            .own_lease()
            .map(|own| own.resource_version.clone())
            .or_else(|| self.adopt.clone());
        let prior = version.as_ref().and(self.spec.as_ref());
        let lease = render(
            &self.name,
            &config.name,
            config.lease_duration,
            ack,
            version.as_deref(),
            prior,
        );
        let result = match version {
            Some(_) => api.replace(lease).await,
            None => api.create(lease).await,
        };
        match result {
            Ok(lease) => {
                self.adopt = None;
                self.spec = lease.spec.clone();
                if let Some(own) = own_lease(&lease) {
                    core.written(sent_at, own);
                }
                Next::Renew
            }
            Err(Error::LeaseNotFound) => {
                tracing::warn!(lease = %self.name, "own lease is gone: fenced, joining again");
                self.adopt = None;
                self.spec = None;
                core.lease_lost();
                Next::Now
            }
            Err(Error::LeaseAlreadyExists | Error::LeaseConflict) => {
                match api.get(&self.name).await {
                    Ok(current) => {
                        self.spec = current.as_ref().and_then(|l| l.spec.clone());
                        if core.own_lease().is_some() {
                            core.read_own(current.as_ref().and_then(own_lease));
                        } else {
                            self.adopt = current.and_then(|l| l.metadata.resource_version);
                        }
                        Next::Now
                    }
                    Err(error) => {
                        tracing::warn!(lease = %self.name, %error, "cannot read own lease");
                        Next::Retry
                    }
                }
            }
            Err(error) => {
                tracing::warn!(lease = %self.name, %error, "cannot write own lease");
                Next::Retry
            }
        }
    }
}

/// When the own Lease is written next.
pub(super) enum Next {
    /// The write succeeded: renew a retry period later, or as soon as a
    /// new acknowledgement is ready.
    Renew,
    /// The write failed in a way a retry now would not fix: nothing for a
    /// retry period, even with an acknowledgement or a create pending.
    Retry,
    /// At once: a conflict was resolved, or the Lease must be created.
    Now,
}

/// When the next write of the own Lease may go.
pub(super) struct WriteTimes {
    /// The next renewal.
    renew_at: Instant,
    /// The earliest any write may go: a retry period after a failure.
    retry_at: Instant,
}

impl WriteTimes {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            renew_at: now,
            retry_at: now,
        }
    }

    /// When the next write is due; `urgent` when the plan asks for one now.
    pub(super) fn due(&self, urgent: bool) -> Instant {
        if urgent { self.retry_at } else { self.renew_at }
    }

    /// A write ended at `now` and said what follows.
    pub(super) fn after(&mut self, next: Next, now: Instant, retry_period: Duration) {
        (self.renew_at, self.retry_at) = match next {
            Next::Renew => (now + retry_period, now),
            Next::Retry => (now + retry_period, now + retry_period),
            Next::Now => (now, now),
        };
    }
}
