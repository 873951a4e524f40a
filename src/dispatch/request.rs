//! [`SubscribeRequest`]: a subscription asked for on one task and
//! registered by the writer on another.

use std::{fmt, sync::Arc};

use super::{
    SubscribeOptions, Subscription,
    channel::{Channel, Phase},
};

/// The writer's half of a subscription asked for from another task: hand it
/// to [`Distributor::register`](super::Distributor::register) between two
/// batches. Dropping it unregistered ends the [`Subscription`], its end
/// reason [`EndReason::Stopped`](super::EndReason::Stopped) (L6), so a
/// subscriber never hangs on an informer that is gone.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use kube_informer::dispatch::{EndReason, SubscribeOptions};
/// use kube_informer::unstable::dispatch::SubscribeRequest;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (mut sub, request) = SubscribeRequest::<String>::new(SubscribeOptions::default());
/// drop(request); // e.g. the informer's writer task is gone
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.end_reason(), Some(EndReason::Stopped));
/// # }
/// ```
pub struct SubscribeRequest<K> {
    pub(crate) channel: Arc<Channel<K>>,
    pub(crate) options: SubscribeOptions,
}

impl<K> SubscribeRequest<K> {
    /// A subscription waiting to be registered, and the request that
    /// registers it.
    pub fn new(options: SubscribeOptions) -> (Subscription<K>, Self) {
        let channel = Arc::new(Channel::new(options.lag));
        channel.recorder.named(options.name);
        let subscription = Subscription::from_channel(Arc::clone(&channel));
        (subscription, Self { channel, options })
    }

    /// The options the subscriber asked for.
    pub fn options(&self) -> SubscribeOptions {
        self.options
    }

    /// Ends the subscription unregistered: the informer has stopped.
    pub fn refuse(self) {
        self.channel.end(&Phase::Requested, Phase::Refused);
    }
}

impl<K> Drop for SubscribeRequest<K> {
    fn drop(&mut self) {
        self.channel.end(&Phase::Requested, Phase::Refused);
    }
}

impl<K> fmt::Debug for SubscribeRequest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscribeRequest")
            .field("options", &self.options)
            .finish()
    }
}
