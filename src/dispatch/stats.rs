//! Reading a subscription's [`SubscriptionStats`], from its handle or, type
//! erased, from the informer that feeds it.

use std::sync::{Arc, Weak};

use super::{Subscription, channel::Channel};
use crate::metrics::{StatsProbe, SubscriptionStats};

impl<K> Channel<K> {
    fn stats(&self) -> SubscriptionStats {
        let (counts, pending) = {
            let state = self.state.lock();
            (state.counts, state.queue.len())
        };
        self.recorder.snapshot(counts, pending)
    }
}

impl<K: Send + Sync> StatsProbe for Channel<K> {
    fn stats(&self) -> Option<SubscriptionStats> {
        (!self.is_receiver_dropped()).then(|| Channel::stats(self))
    }

    fn name_once(&self, name: &mut dyn FnMut() -> String) {
        self.recorder.name_once(name);
    }
}

impl<K> Subscription<K> {
    /// What this subscriber was handed and how far behind it is: deliveries
    /// by kind, pending notifications now and at most, the age of the
    /// oldest pending one, and handler time under [`handle`](Self::handle).
    /// Reading takes the queue's lock for a moment; recording costs no
    /// atomic operation.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, SubscribeOptions, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::informer::Error> {
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
    ///     ..Default::default()
    /// };
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let mut audit = informer.subscribe(SubscribeOptions::default().name("audit"))?;
    /// informer.run().await?;
    /// assert_eq!(audit.stats().pending, 1);
    /// audit.next().await;
    /// let stats = audit.stats();
    /// assert_eq!((stats.name.as_str(), stats.delivered.added, stats.pending), ("audit", 1, 0));
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> SubscriptionStats {
        self.channel().stats()
    }
}

impl<K: Send + Sync + 'static> Subscription<K> {
    /// The stats of this subscription for whoever keeps a list of them;
    /// it does not keep the subscription alive.
    pub(crate) fn stats_probe(&self) -> Weak<dyn StatsProbe> {
        let channel: Arc<dyn StatsProbe> = Arc::clone(self.channel()) as _;
        Arc::downgrade(&channel)
    }
}
