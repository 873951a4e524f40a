//! What a reconcile asks the runner to do next.

use std::time::Duration;

/// What a reconcile (or an error policy) asks the runner to do with its key
/// next.
///
/// The name is this crate's; kube-runtime has a type of the same name in
/// `kube_runtime::controller`. A program that uses both imports one of them
/// under another name (`use kube_informer::runner::Action as Next;`).
///
/// After a successful reconcile, [`Done`](Self::Done) and
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
/// assert_eq!(Action::done(), Action::Done);
/// assert_eq!(Action::requeue(Duration::from_secs(30)), Action::RequeueAfter(Duration::from_secs(30)));
/// assert_eq!(Action::backoff(), Action::Backoff);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Nothing more to do until the key is added again.
    Done,
    /// Reconcile the key again after this delay (on tokio's clock), e.g. to
    /// poll something that sends no notifications.
    RequeueAfter(Duration),
    /// Queue the key again through the queue's rate limiter, its per-key
    /// exponential backoff ([`WorkQueue::add_rate_limited`](crate::queue::WorkQueue::add_rate_limited)):
    /// what a failed reconcile gets unless an error policy says otherwise.
    Backoff,
}

impl Action {
    /// [`Action::Done`].
    pub fn done() -> Self {
        Self::Done
    }

    /// [`Action::RequeueAfter`] `delay`.
    pub fn requeue(delay: Duration) -> Self {
        Self::RequeueAfter(delay)
    }

    /// [`Action::Backoff`].
    pub fn backoff() -> Self {
        Self::Backoff
    }
}
