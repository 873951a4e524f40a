//! What a reconcile asks the runner to do next.

use std::time::Duration;

/// The outcome of a successful reconcile.
///
/// Either way the runner forgets the key's failures (the rate limiter starts
/// again from its smallest delay next time).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::runner::Action;
///
/// assert_eq!(Action::done(), Action::Done);
/// assert_eq!(Action::requeue(Duration::from_secs(30)), Action::RequeueAfter(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Nothing more to do until the key is added again.
    Done,
    /// Reconcile the key again after this delay (on tokio's clock), e.g. to
    /// poll something that sends no notifications.
    RequeueAfter(Duration),
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
}
