//! A handle that reads one stage's metrics from anywhere.

use std::{fmt, sync::Arc};

use super::informer::InformerMetrics;

/// Reads a stage's metrics snapshot `M` from anywhere (a metrics endpoint,
/// a collector registered once, an OpenTelemetry callback). A stage's
/// `metrics()` is its snapshot now; its reader is made from the stage:
///
/// - `MetricsReader::from(&informer)` (of [`InformerMetrics`]) holds no
///   share of the informer's lifetime: once the informer is gone,
///   [`read`](Self::read) says `None`;
/// - `MetricsReader::from(&queue)` (of [`WorkQueueMetrics`]) keeps a handle
///   on the [`WorkQueue`](crate::WorkQueue);
/// - `MetricsReader::<ControllerMetrics>::from(&controller)` and
///   `MetricsReader::<WorkQueueMetrics>::from(&controller)` read a
///   [`Controller`](crate::controller::Controller)'s reconciles and its
///   queue on after `run` has taken it;
/// - `MetricsReader::from((&gate, store))` reads a
///   [`KeyGate`](crate::shard::KeyGate)'s [`ShardMetrics`](super::ShardMetrics),
///   keeping the gate and the store it counts owned keys in.
///
/// The `register` function of the `prometheus` feature takes a reader or
/// the stage itself, so the exporter knows the snapshots and nothing of the
/// stages.
///
/// [`WorkQueueMetrics`]: super::WorkQueueMetrics
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, metrics::MetricsReader, source::Event};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).build();
/// let reader = MetricsReader::from(&informer);
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
