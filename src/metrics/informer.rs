//! An informer's own counters and the snapshot that gathers every stage's.

use std::{
    sync::{
        Arc, OnceLock, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::time::Instant;

use super::{source::SourceMetrics, source::SourceRecorder, subscription::SubscriptionStats};
use crate::resource::WatchedResource;

/// A subscription's stats, read without knowing its object type.
pub(crate) trait StatsProbe: Send + Sync {
    /// The stats, or `None` once the subscriber dropped its stream.
    fn stats(&self) -> Option<SubscriptionStats>;
    /// Names the subscription unless it has a name.
    fn name_once(&self, name: &mut dyn FnMut() -> String);
}

/// What the informer records beside its stages' own counters.
pub(crate) struct InformerRecorder {
    pub(crate) source: Arc<SourceRecorder>,
    started: OnceLock<Instant>,
    synced_after: OnceLock<Duration>,
    subscriptions: Mutex<Vec<Weak<dyn StatsProbe>>>,
    subscribed: AtomicUsize,
}

impl std::fmt::Debug for InformerRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerRecorder")
            .field("source", &self.source)
            .field("synced_after", &self.synced_after.get())
            .finish_non_exhaustive()
    }
}

impl InformerRecorder {
    pub(crate) fn new(source: Arc<SourceRecorder>) -> Self {
        Self {
            source,
            started: OnceLock::new(),
            synced_after: OnceLock::new(),
            subscriptions: Mutex::new(Vec::new()),
            subscribed: AtomicUsize::new(0),
        }
    }

    /// `run` began: the clock of the time to first sync starts.
    pub(crate) fn started(&self) {
        let _ = self.started.set(Instant::now());
    }

    /// The store synced for the first time.
    pub(crate) fn synced(&self) {
        if let Some(started) = self.started.get() {
            let _ = self.synced_after.set(started.elapsed());
        }
    }

    /// A subscription joined; it is named by its index unless it has a name.
    pub(crate) fn subscribed(&self, probe: Weak<dyn StatsProbe>) {
        let index = self.subscribed.fetch_add(1, Ordering::Relaxed);
        if let Some(probe) = probe.upgrade() {
            probe.name_once(&mut || index.to_string());
        }
        let mut subscriptions = self.subscriptions.lock();
        subscriptions.retain(|probe| probe.strong_count() > 0);
        subscriptions.push(probe);
    }

    /// The stats of every subscription still read.
    pub(crate) fn subscriptions(&self) -> Vec<SubscriptionStats> {
        let probes: Vec<_> = self
            .subscriptions
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        probes.iter().filter_map(|probe| probe.stats()).collect()
    }

    pub(crate) fn synced_after(&self) -> Option<Duration> {
        self.synced_after.get().copied()
    }
}

/// What the informer's FIFO holds between its source and its store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FifoMetrics {
    /// Keys queued.
    pub keys: usize,
    /// Deltas queued, over all keys.
    pub deltas: usize,
}

/// The informer's cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreMetrics {
    /// Objects cached.
    pub objects: usize,
    /// Whether the first full list has been applied.
    pub synced: bool,
    /// From the start of `run` to the first sync.
    pub time_to_first_sync: Option<Duration>,
}

/// Everything an informer counts: see [`Informer::metrics`](crate::Informer::metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InformerMetrics {
    /// What it lists and watches; the metrics' `group`, `version`,
    /// `resource` and `namespace` labels.
    pub resource: WatchedResource,
    /// What its list/watch did.
    pub source: SourceMetrics,
    /// Its FIFO.
    pub fifo: FifoMetrics,
    /// Its store.
    pub store: StoreMetrics,
    /// Every error met while running: source errors, objects the FIFO or
    /// store refused, panics in user code.
    pub errors: u64,
    /// Its open subscriptions, in the order they subscribed.
    pub subscriptions: Vec<SubscriptionStats>,
}
