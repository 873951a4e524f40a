//! A handle that reads one stage's metrics from anywhere.

use std::{fmt, sync::Arc};

use super::informer::InformerMetrics;

/// Reads a stage's metrics snapshot `M` from anywhere (a metrics endpoint,
/// a collector registered once). Each stage makes its own:
///
/// - [`Informer::metrics_reader`](crate::Informer::metrics_reader) gives a
///   `MetricsReader` (of [`InformerMetrics`]) that holds no share of the
///   informer's lifetime: once the informer is gone,
///   [`read`](Self::read) says `None`;
/// - [`WorkQueue::metrics_reader`](crate::WorkQueue::metrics_reader) gives
///   a `MetricsReader<WorkQueueMetrics>` that keeps a handle on the queue;
/// - [`KeyGate::metrics_reader`](crate::shard::KeyGate::metrics_reader)
///   gives a `MetricsReader<ShardMetrics>` that keeps the gate and the
///   store it counts owned keys in.
///
/// The `register_*` functions of the `prometheus` feature take one, so the
/// exporter knows the snapshots and nothing of the stages.
///
/// [`WorkQueueMetrics`]: super::WorkQueueMetrics
/// [`ShardMetrics`]: super::ShardMetrics
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, source::Event};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).build();
/// let reader = informer.metrics_reader();
/// assert_eq!(reader.read().unwrap().store.objects, 0);
/// drop(informer);
/// assert!(reader.read().is_none());
/// ```
pub struct MetricsReader<M = InformerMetrics> {
    read: Arc<dyn Fn() -> Option<M> + Send + Sync>,
}

impl<M> MetricsReader<M> {
    /// A reader that calls `read`; `None` means the stage is gone.
    pub(crate) fn new(read: impl Fn() -> Option<M> + Send + Sync + 'static) -> Self {
        Self {
            read: Arc::new(read),
        }
    }

    /// The stage's metrics now, or `None` once it is gone.
    pub fn read(&self) -> Option<M> {
        (self.read)()
    }
}

// Not derived: a derive would ask `M: Clone` and `M: Debug` of the snapshot.
impl<M> Clone for MetricsReader<M> {
    fn clone(&self) -> Self {
        Self {
            read: Arc::clone(&self.read),
        }
    }
}

impl<M> fmt::Debug for MetricsReader<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsReader").finish_non_exhaustive()
    }
}
