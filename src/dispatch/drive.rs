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
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, dispatch::{EventHandlerFuncs, SubscribeOptions}, source::Event};
    ///
    /// # fn cm(name: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.namespace = Some("default".into());
    /// #     c.metadata.resource_version = Some("1".into());
    /// #     c
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm("a")))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let sub = informer.subscribe(SubscribeOptions::default())?;
    /// let task = tokio::spawn(sub.handle(
    ///     EventHandlerFuncs::new()
    ///         .on_add(|cm: &Arc<ConfigMap>, _initial| println!("added {:?}", cm.metadata.name)),
    /// ));
    /// informer.run().await?;
    /// task.await?; // the handler returns once the subscription ends
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
