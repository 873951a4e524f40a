//! Feeding a [`WorkQueue`] from any stream (the step from notifications to
//! keys).

use std::{future::Future, hash::Hash};

use futures::{Stream, StreamExt};

use super::WorkQueue;

impl<T: Hash + Eq + Clone + Send + 'static> WorkQueue<T> {
    /// Adds every item of `items` to the queue, until the stream ends or the
    /// queue shuts down. The returned future owns a handle on the queue, so it
    /// can be spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::stream;
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.feed(stream::iter(["a", "b", "a"])).await;
    /// assert_eq!(queue.len(), 2);
    /// # }
    /// ```
    pub fn feed<S>(&self, items: S) -> impl Future<Output = ()> + Send + 'static
    where
        S: Stream<Item = T> + Send + 'static,
    {
        let queue = self.clone();
        async move {
            let mut items = std::pin::pin!(items);
            while !queue.is_shutting_down() {
                match items.next().await {
                    Some(item) => queue.add(item),
                    None => break,
                }
            }
        }
    }

    /// As [`feed`](Self::feed) for a stream of results, such as
    /// [`keys()`](crate::ext::NotificationStreamExt::keys) of a subscription:
    /// `Ok` items are added, each `Err` goes to `on_error` and the feed goes
    /// on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, Client};
    /// use kube_informer::{prelude::*, queue::WorkQueue};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let informer = Informer::builder(Api::<ConfigMap>::all(Client::try_default().await?)).build();
    /// let queue = WorkQueue::new();
    /// tokio::spawn(queue.feed_results(
    ///     informer.subscribe(SubscribeOptions::default())?.keys(),
    ///     |error| tracing::warn!(%error, "notification without a key"),
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn feed_results<S, E, F>(
        &self,
        items: S,
        mut on_error: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: Stream<Item = Result<T, E>> + Send + 'static,
        F: FnMut(E) + Send + 'static,
    {
        let queue = self.clone();
        async move {
            let mut items = std::pin::pin!(items);
            while !queue.is_shutting_down() {
                match items.next().await {
                    Some(Ok(item)) => queue.add(item),
                    Some(Err(error)) => on_error(error),
                    None => break,
                }
            }
        }
    }
}
