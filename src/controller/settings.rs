//! A controller's plain settings: its public [`Config`] and what its
//! builder methods set, which its run reads when it builds the queue, the
//! runner and its feeds.

use std::{fmt, sync::Arc, time::Duration};

use tracing::Level;

use crate::{
    key::ObjectKey,
    queue::{QueueConfig, RateLimiter, WorkQueue, default_rate_limiter},
};

/// How long [`run`](super::Controller::run) waits for the caches by default
/// before it reports [`SyncError::TimedOut`](crate::informer::SyncError):
/// two minutes, as controller-runtime's `CacheSyncTimeout`.
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// How a [`Controller`](super::Controller) runs its reconciles: one plain
/// value with every setting of its run, given with
/// [`Controller::with_config`](super::Controller::with_config), as
/// kube-runtime's `controller::Config`. `Config::default()` is no bound on
/// concurrency, no debounce, client-go's queue, a two-minute sync timeout
/// and no logging of failed reconciles.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{controller::{Config, Controller}, queue::QueueConfig};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(Config {
///     concurrency: 4,
///     debounce: Duration::from_secs(1),
///     queue: QueueConfig { priorities: true, ..QueueConfig::default() },
///     ..Config::default()
/// });
/// assert_eq!(controller.metrics().max_concurrent_reconciles, 4);
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// At most this many reconciles at once, never two of one key (C6);
    /// `0`, the default, sets no bound, as kube-runtime's
    /// `Config::concurrency`.
    ///
    /// No bound is safe by default because the work queue never hands one
    /// key out twice at once (W3): however many reconciles run, each key
    /// has at most one. Set a bound to spare the API server, or an
    /// external system, a burst of as many requests as there are keys
    /// (after a start, an initial list queues every object).
    pub concurrency: usize,
    /// Queues a key only once its triggers have been quiet for this long
    /// (C14): each trigger of a key that waits moves its turn to `debounce`
    /// after that trigger, never earlier, so a burst of changes to one
    /// object, or to the objects it owns, costs one reconcile.
    /// kube-runtime's `Config::debounce`. Zero, the default, queues each
    /// trigger at once.
    ///
    /// A requeue or backoff the reconcile asked for is not delayed. As in
    /// kube-runtime, an object changed more often than every `debounce`
    /// waits until its changes pause: keep it short (a second or two).
    pub debounce: Duration,
    /// The work queue's options: whether a failed key waits out its whole
    /// backoff (C5, W13) and whether live changes go before bulk work
    /// (C10, W14, W15). With
    /// [`priorities`](crate::queue::QueueConfig::priorities), the keys of
    /// an initial list (also the replay a controller gets when it
    /// subscribes to an informer already running), of each tick of
    /// [`reconcile_all_on`](super::Controller::reconcile_all_on) and of each
    /// [`resync`](super::Controller::resync) round are queued at
    /// [`Priority::Low`](crate::queue::Priority::Low), every other trigger
    /// at [`Priority::High`](crate::queue::Priority::High). The default is
    /// client-go's and controller-runtime's queue.
    pub queue: QueueConfig,
    /// How long [`run`](super::Controller::run) waits for its informers to
    /// sync before it reports [`Error::Sync`](super::Error::Sync) and ends
    /// (C3); [`DEFAULT_SYNC_TIMEOUT`] by default.
    pub sync_timeout: Duration,
    /// The level each failed or panicking reconcile is logged at, one line
    /// inside its `reconciling object` span, or none with `None`, the
    /// default (C13).
    ///
    /// The stream yields every failure either way
    /// ([`Error::Reconcile`](super::Error::Reconcile),
    /// [`Error::Panicked`](super::Error::Panicked)). As with kube-runtime's
    /// `Controller`, which logs none, the program that consumes the stream
    /// decides what to log, so by default nothing is logged twice. Set a
    /// level when the stream's errors are not logged, or to have the span's
    /// fields (`object.ref`, `reconcile.id`) on the line.
    pub reconcile_error_log: Option<Level>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: 0,
            debounce: Duration::ZERO,
            queue: QueueConfig::default(),
            sync_timeout: DEFAULT_SYNC_TIMEOUT,
            reconcile_error_log: None,
        }
    }
}

/// Every setting of a controller that is a value: no live part in it.
#[derive(Clone, Debug)]
pub(super) struct Settings {
    /// The name on spans, logs and metrics.
    pub(super) name: String,
    /// The queue's rate limiter, when not the default one.
    pub(super) rate_limiter: Option<SharedLimiter>,
    /// What [`Controller::with_config`](super::Controller::with_config) set.
    pub(super) config: Config,
}

impl Settings {
    /// The defaults of a controller named `name`.
    pub(super) fn new(name: String) -> Self {
        Self {
            name,
            rate_limiter: None,
            config: Config::default(),
        }
    }

    /// The work queue these settings describe, made when the controller
    /// runs.
    pub(super) fn queue(&self) -> WorkQueue {
        match &self.rate_limiter {
            Some(limiter) => WorkQueue::with_config(self.config.queue, limiter.clone()),
            None => WorkQueue::with_config(self.config.queue, default_rate_limiter()),
        }
    }

    /// The runner's bound: `concurrency`, or none for 0 (C6).
    pub(super) fn runner_concurrency(&self) -> usize {
        match self.config.concurrency {
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
