//! A controller's plain settings: what its builder methods set and what
//! its run reads when it builds the queue, the runner and its feeds.

use std::{fmt, sync::Arc, time::Duration};

use tracing::Level;

use crate::{
    key::ObjectKey,
    queue::{DEFAULT_PRIORITY_AGEING, RateLimiter, WorkQueue},
};

/// How long [`run`](super::Controller::run) waits for the caches by default
/// before it reports [`SyncError::TimedOut`](crate::informer::SyncError):
/// two minutes, as controller-runtime's `CacheSyncTimeout`.
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Every setting of a controller that is a value: no live part in it.
#[derive(Clone, Debug)]
pub(super) struct Settings {
    /// The name on spans, logs and metrics.
    pub(super) name: String,
    /// The most reconciles at once; 0 for no bound (C6).
    pub(super) concurrency: usize,
    /// How long a key's triggers must be quiet before it is queued (C14).
    pub(super) debounce: Duration,
    /// The queue's rate limiter, when not the default one.
    pub(super) rate_limiter: Option<SharedLimiter>,
    /// W13 on the queue.
    pub(super) backoff_holds: bool,
    /// W14 on the queue (C10).
    pub(super) priorities: bool,
    /// W15 on the queue.
    pub(super) priority_ageing: Duration,
    /// How long the run waits for its informers (C3).
    pub(super) sync_timeout: Duration,
    /// The level failed reconciles are logged at, if at all (C13).
    pub(super) reconcile_error_log: Option<Level>,
}

impl Settings {
    /// The defaults of a controller named `name`.
    pub(super) fn new(name: String) -> Self {
        Self {
            name,
            concurrency: 0,
            debounce: Duration::ZERO,
            rate_limiter: None,
            backoff_holds: false,
            priorities: false,
            priority_ageing: DEFAULT_PRIORITY_AGEING,
            sync_timeout: DEFAULT_SYNC_TIMEOUT,
            reconcile_error_log: None,
        }
    }

    /// The work queue these settings describe, made when the controller
    /// runs.
    pub(super) fn queue(&self) -> WorkQueue {
        let queue = match &self.rate_limiter {
            Some(limiter) => WorkQueue::with_rate_limiter(limiter.clone()),
            None => WorkQueue::new(),
        };
        queue
            .backoff_holds(self.backoff_holds)
            .priorities(self.priorities)
            .priority_ageing(self.priority_ageing)
    }

    /// The runner's bound: `concurrency`, or none for 0 (C6).
    pub(super) fn runner_concurrency(&self) -> usize {
        match self.concurrency {
            0 => usize::MAX,
            n => n,
        }
    }
}

/// A rate limiter the settings share with the queue they make.
#[derive(Clone)]
pub(super) struct SharedLimiter(Arc<dyn RateLimiter<ObjectKey>>);

impl SharedLimiter {
    pub(super) fn new<R: RateLimiter<ObjectKey> + 'static>(limiter: R) -> Self {
        Self(Arc::new(limiter))
    }
}

impl RateLimiter<ObjectKey> for SharedLimiter {
    fn when(&self, item: &ObjectKey) -> Duration {
        self.0.when(item)
    }

    fn forget(&self, item: &ObjectKey) {
        self.0.forget(item);
    }

    fn requeues(&self, item: &ObjectKey) -> usize {
        self.0.requeues(item)
    }
}

impl fmt::Debug for SharedLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RateLimiter")
    }
}
