//! Driving a [`ResourceEventHandler`] from a [`Subscription`]: the bridge
//! for callback-style code.

use futures::StreamExt;

use super::{Subscription, handler::ResourceEventHandler};
use crate::notification::Notification;

impl<K> Subscription<K> {
    /// Drives `handler` with every notification until the stream ends: the
    /// future to spawn for callback-style code.
    ///
    /// The handler runs on the task that polls this future, so a slow or
    /// panicking handler affects only this subscription (and, under
    /// [`Lag::Bounded`](super::Lag::Bounded), the distributor).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use kube_informer::{Notification, ObjectKey};
    /// use kube_informer::dispatch::{Distributor, EventHandlerFuncs, SubscribeOptions};
    /// use tokio::sync::watch;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (_synced, upstream) = watch::channel(true);
    /// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
    /// let sub = distributor.subscribe(SubscribeOptions::default(), []);
    /// let task = tokio::spawn(sub.handle(
    ///     EventHandlerFuncs::new().on_add(|obj: &Arc<String>, _initial| println!("added {obj}")),
    /// ));
    /// let key: ObjectKey = "a".parse()?;
    /// distributor
    ///     .distribute(&key, Notification::Added { object: Arc::new("a".into()), in_initial_list: false })
    ///     .await;
    /// distributor.close();
    /// task.await?;
    /// # Ok(()) }
    /// ```
    pub fn handle<H>(self, mut handler: H) -> impl Future<Output = ()> + Send
    where
        H: ResourceEventHandler<K>,
        K: Send + Sync,
    {
        let mut stream = self;
        async move {
            while let Some(n) = stream.next().await {
                let started = std::time::Instant::now();
                match n {
                    Notification::Added {
                        object,
                        in_initial_list,
                    } => handler.on_add(&object, in_initial_list),
                    Notification::Updated { old, new, .. } => handler.on_update(&old, &new),
                    Notification::Deleted {
                        object,
                        final_state_unknown,
                    } => handler.on_delete(&object, final_state_unknown),
                }
                stream.channel().recorder.handled(started);
            }
        }
    }
}
