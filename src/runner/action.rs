//! What a reconcile asks the runner to do next.

use std::time::Duration;

/// What a reconcile (or an error policy) asks the runner to do with its key
/// next.
///
/// kube-runtime's `controller::Action` has the same two constructors with
/// the same meaning: [`await_change()`](Self::await_change) and
/// [`requeue(delay)`](Self::requeue). This one has a third,
/// [`backoff()`](Self::backoff), for the work queue's per-key exponential
/// backoff, and is an enum a runner matches on.
///
/// After a successful reconcile, [`AwaitChange`](Self::AwaitChange) and
/// [`RequeueAfter`](Self::RequeueAfter) forget the key's failures (the rate
/// limiter starts again from its smallest delay next time);
/// [`Backoff`](Self::Backoff) counts one more.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::runner::Action;
///
/// assert_eq!(Action::await_change(), Action::AwaitChange);
/// assert_eq!(Action::requeue(Duration::from_secs(30)), Action::RequeueAfter(Duration::from_secs(30)));
/// assert_eq!(Action::backoff(), Action::Backoff);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Nothing more to do until a trigger queues the key again.
    AwaitChange,
    /// Reconcile the key again after this delay (on tokio's clock), e.g. to
    /// poll something that sends no notifications.
    RequeueAfter(Duration),
    /// Queue the key again through the queue's rate limiter, its per-key
    /// exponential backoff ([`WorkQueue::add_rate_limited`](crate::queue::WorkQueue::add_rate_limited)):
    /// what a failed reconcile gets unless an error policy says otherwise.
    Backoff,
}

impl Action {
    /// [`Action::AwaitChange`]: reconcile the key again only when a
    /// trigger queues it (kube-runtime's `Action::await_change`).
    #[must_use]
    pub const fn await_change() -> Self {
        Self::AwaitChange
    }

    /// [`Action::RequeueAfter`] `delay` (kube-runtime's `Action::requeue`).
    #[must_use]
    pub const fn requeue(delay: Duration) -> Self {
        Self::RequeueAfter(delay)
    }

    /// [`Action::Backoff`]: the queue's per-key exponential backoff.
    #[must_use]
    pub const fn backoff() -> Self {
        Self::Backoff
    }
}
