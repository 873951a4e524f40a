//! Reading an informer's metrics: its recorder's counts and its stages'
//! sizes, gathered into one [`InformerMetrics`].

use std::sync::{Arc, Weak};

use kube::Resource;

use super::{Informer, core::Core};
use crate::metrics::{FifoMetrics, InformerMetrics, MetricsReader, StoreMetrics};

impl<K: Resource + Send + Sync + 'static> Informer<K> {
    /// What this informer did and holds now: its source's requests,
    /// events, relists and errors, its FIFO's and store's sizes, and every
    /// open subscription's [`stats`](crate::Subscription::stats). See the
    /// [`metrics`](crate::metrics) module and `METRICS.md`.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, SubscribeOptions, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::informer::Error> {
    /// let events = futures::stream::iter([
    ///     Ok::<_, std::io::Error>(Event::<ConfigMap>::ListStart),
    ///     Ok(Event::ListDone { resource_version: "1".into() }),
    /// ]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let _audit = informer.subscribe(SubscribeOptions::default().name("audit"))?;
    /// informer.run().await?;
    /// let metrics = informer.metrics();
    /// assert!(metrics.store.synced);
    /// assert_eq!(metrics.subscriptions[0].name, "audit");
    /// # Ok(()) }
    /// ```
    pub fn metrics(&self) -> InformerMetrics {
        read(self.core())
    }

    /// A handle that reads [`metrics`](Self::metrics) from anywhere without
    /// keeping this informer alive; see [`MetricsReader`].
    pub fn metrics_reader(&self) -> MetricsReader {
        let core: Weak<Core<K>> = Arc::downgrade(self.core());
        MetricsReader::new(move || core.upgrade().map(|core| read(&core)))
    }
}

fn read<K: Resource + Send + Sync + 'static>(core: &Core<K>) -> InformerMetrics {
    InformerMetrics {
        resource: core.resource.clone(),
        source: core.metrics.source.snapshot(),
        fifo: FifoMetrics {
            keys: core.fifo.len(),
            deltas: core.fifo.pending_deltas(),
        },
        store: StoreMetrics {
            objects: core.store.len(),
            synced: core.store.has_synced(),
            time_to_first_sync: core.metrics.synced_after(),
        },
        errors: core.reporter.count(),
        subscriptions: core.metrics.subscriptions(),
    }
}
