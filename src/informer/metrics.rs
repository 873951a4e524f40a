//! Gathering an informer's metrics: its recorder's counts and its stages'
//! sizes, as one [`InformerMetrics`] (read by `Informer::metrics`).

use kube::Resource;

use super::core::Core;
use crate::metrics::{FifoMetrics, InformerMetrics, StoreMetrics};

pub(super) fn read<K: Resource + Send + Sync + 'static>(core: &Core<K>) -> InformerMetrics {
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
