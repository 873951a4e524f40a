//! Why a subscription ended, and the signal that tells a waiting receiver
//! its source was asked to stop.

use std::{fmt, sync::Arc};

use tokio_util::sync::CancellationToken;

/// Why a [`Subscription`](super::Subscription) ended: read it with
/// [`Subscription::end_reason`](super::Subscription::end_reason).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// use kube_informer::dispatch::{Distributor, EndReason, SubscribeOptions};
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (_synced, upstream) = watch::channel(false);
/// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
/// let mut sub = distributor.subscribe(SubscribeOptions::default(), []);
/// assert_eq!(sub.end_reason(), None);
/// distributor.close_with(EndReason::Finished);
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.end_reason(), Some(EndReason::Finished));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndReason {
    /// Asked to stop: `Informer::stop`, its cancellation token, nothing left
    /// that could observe it, or its `run` future dropped. Also the reason
    /// of a subscription refused because the informer had stopped.
    #[error("the informer stopped")]
    Stopped,
    /// The informer's source of events ended and everything it produced was
    /// handed out.
    #[error("the informer's source ended")]
    Finished,
    /// Code the informer ran panicked and the informer stopped; the panic
    /// message.
    #[error("the informer stopped after a panic: {0}")]
    Panicked(String),
}

/// Lets a receiver that waits on an empty queue notice that its source was
/// asked to stop even when nothing drives the source (an informer whose
/// `run` was never polled): `on_stop` is called once the token is
/// cancelled, and is expected to close the distributor (or to leave that to
/// a running writer, which closes it itself).
#[derive(Clone)]
pub(crate) struct StopSignal {
    pub(crate) token: CancellationToken,
    pub(crate) on_stop: Arc<dyn Fn() + Send + Sync>,
}

impl fmt::Debug for StopSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopSignal")
            .field("cancelled", &self.token.is_cancelled())
            .finish_non_exhaustive()
    }
}
