//! [`EndReason`]: why a subscription ended.

/// Why a [`Subscription`](super::Subscription) ended: read it with
/// [`Subscription::end_reason`](super::Subscription::end_reason).
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, dispatch::{EndReason, SubscribeOptions}, source::Event};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let informer = Informer::<ConfigMap>::builder_from_stream(
///     futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>(),
/// )
/// .build();
/// let mut sub = informer.subscribe(SubscribeOptions::default())?;
/// assert_eq!(sub.end_reason(), None);
/// informer.run().await?; // an empty source ends at once
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.end_reason(), Some(EndReason::Finished));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndReason {
    /// Asked to stop: `Informer::stop`, its cancellation token, nothing left
    /// that could observe it, or its `run` future dropped. Also the reason
    /// of a subscription refused because the informer had stopped.
    Stopped,
    /// The informer's source of events ended and everything it produced was
    /// handed out.
    Finished,
    /// Code the informer ran panicked and the informer stopped; the panic
    /// message.
    Panicked(String),
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stopped => f.write_str("the informer stopped"),
            Self::Finished => f.write_str("the informer's source ended"),
            Self::Panicked(message) => write!(f, "the informer stopped after a panic: {message}"),
        }
    }
}
