//! The work queue's metrics, with client-go's names and meanings: depth,
//! adds, queue duration, work duration, unfinished work, longest running
//! processor, retries.
//!
//! Counts and histograms are kept under the queue's own lock; the times
//! they are built from live in the queue's item map beside each item's
//! dirty and processing marks, read from the one clock reading each locked
//! operation takes. Recording adds no lock and no map of its own.

use std::time::Duration;

use super::histogram::{DurationHistogram, Histogram};

/// Counts and times kept beside the queue's state.
#[derive(Debug, Default)]
pub(crate) struct WorkQueueRecorder {
    adds: u64,
    retries: u64,
    queue_duration: Histogram,
    work_duration: Histogram,
}

impl WorkQueueRecorder {
    /// An item became dirty (queued, or due again after its processing).
    pub(crate) fn added(&mut self) {
        self.adds += 1;
    }

    /// `add_rate_limited` was called.
    pub(crate) fn retried(&mut self) {
        self.retries += 1;
    }

    /// An item was handed out after waiting `waited` since its add.
    pub(crate) fn started(&mut self, waited: Duration) {
        self.queue_duration.observe(waited);
    }

    /// A worker let go of an item it held for `held`.
    pub(crate) fn finished(&mut self, held: Duration) {
        self.work_duration.observe(held);
    }

    /// The metrics now, given the queue's depth and how long each item
    /// being processed has been held.
    pub(crate) fn snapshot(
        &self,
        depth: usize,
        running: impl Iterator<Item = Duration>,
    ) -> WorkQueueMetrics {
        let (unfinished_work, longest_running_processor) = running
            .fold((Duration::ZERO, Duration::ZERO), |(sum, max), d| {
                (sum + d, max.max(d))
            });
        WorkQueueMetrics {
            depth,
            adds: self.adds,
            queue_duration: self.queue_duration.snapshot(),
            work_duration: self.work_duration.snapshot(),
            unfinished_work,
            longest_running_processor,
            retries: self.retries,
        }
    }
}

/// A [`WorkQueue`](crate::WorkQueue)'s metrics, as client-go's work queue
/// reports them: see [`WorkQueue::metrics`](crate::WorkQueue::metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkQueueMetrics {
    /// Items waiting to be handed out (client-go's `depth`).
    pub depth: usize,
    /// Adds that made an item need processing; an add of an item already
    /// waiting is not counted (`adds_total`).
    pub adds: u64,
    /// How long items waited from their add to being handed out
    /// (`queue_duration_seconds`).
    pub queue_duration: DurationHistogram,
    /// How long workers held items (`work_duration_seconds`).
    pub work_duration: DurationHistogram,
    /// The time the items being processed now have been held, summed
    /// (`unfinished_work_seconds`): it grows while a worker is stuck.
    pub unfinished_work: Duration,
    /// How long the item held longest now has been held
    /// (`longest_running_processor_seconds`).
    pub longest_running_processor: Duration,
    /// `add_rate_limited` calls (`retries_total`).
    pub retries: u64,
}
