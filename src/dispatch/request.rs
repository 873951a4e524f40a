//! [`SubscribeRequest`]: a subscription asked for on one task and
//! registered by the writer on another.

use std::{any::Any, fmt, sync::Arc};

use super::{
    Error, SubscribeOptions, Subscription,
    channel::{Channel, Phase},
    end::Life,
};

/// The writer's half of a subscription asked for from another task: hand it
/// to [`Distributor::register`](super::Distributor::register) between two
/// batches. Dropping it unregistered ends the [`Subscription`] with
/// [`Error::Stopped`] (L6), so a subscriber never hangs on an informer that
/// is gone.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use kube_informer::dispatch::{Error, SubscribeOptions};
/// use kube_informer::unstable::dispatch::SubscribeRequest;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (mut sub, request) = SubscribeRequest::<String>::new(SubscribeOptions::default());
/// drop(request); // e.g. the informer's writer task is gone
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.error(), Some(Error::Stopped));
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

    /// Ends the subscription unregistered, with `reason`.
    pub fn refuse(self, reason: Error) {
        self.channel.end(&Phase::Requested, Phase::Refused(reason));
    }
}

impl<K> Drop for SubscribeRequest<K> {
    fn drop(&mut self) {
        self.channel
            .end(&Phase::Requested, Phase::Refused(Error::Stopped));
    }
}

impl<K> fmt::Debug for SubscribeRequest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscribeRequest")
            .field("options", &self.options)
            .finish()
    }
}

impl<K> Subscription<K> {
    /// Ties the subscription to the informer that feeds it: `keep_alive` is
    /// held for as long as the subscription lives (a share of the informer's
    /// lifetime), and `life` is the informer's life, whose end a waiting
    /// receiver observes.
    pub(crate) fn attach(&mut self, keep_alive: Arc<dyn Any + Send + Sync>, life: Arc<Life>) {
        self.keep_alive = Some(keep_alive);
        self.channel().state.lock().life = Some(life);
    }
}
