//! A handle that reads an informer's metrics without keeping it alive.

use std::{fmt, sync::Arc};

use super::informer::InformerMetrics;

/// Reads an informer's [`InformerMetrics`] from anywhere (a metrics
/// endpoint, a collector registered once), without holding a share of its
/// lifetime: once the informer is gone, [`read`](Self::read) says `None`.
/// Made by [`Informer::metrics_reader`](crate::Informer::metrics_reader).
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
#[derive(Clone)]
pub struct MetricsReader {
    read: Arc<dyn Fn() -> Option<InformerMetrics> + Send + Sync>,
}

impl MetricsReader {
    pub(crate) fn new(read: impl Fn() -> Option<InformerMetrics> + Send + Sync + 'static) -> Self {
        Self {
            read: Arc::new(read),
        }
    }

    /// The informer's metrics now, or `None` once it is gone.
    pub fn read(&self) -> Option<InformerMetrics> {
        (self.read)()
    }
}

impl fmt::Debug for MetricsReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsReader").finish_non_exhaustive()
    }
}
