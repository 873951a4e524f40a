//! The work queue's metrics, with client-go's names and meanings: depth,
//! adds, queue duration, work duration, unfinished work, longest running
//! processor, retries.
//!
//! Everything is kept under the queue's own lock and timed with the clock
//! reading the queue takes anyway (to promote delayed items), so recording
//! adds no lock, no atomic and no clock read of its own: two map updates
//! per item handed out, as in client-go.

use std::{collections::HashMap, hash::Hash, time::Duration};

use tokio::time::Instant;

use super::histogram::{DurationHistogram, Histogram};

/// Counts and times kept beside the queue's state.
#[derive(Debug)]
pub(crate) struct WorkQueueRecorder<T> {
    /// The clock reading of the current locked operation.
    now: Instant,
    adds: u64,
    retries: u64,
    /// When each waiting item was first added since it was last handed out.
    added_at: HashMap<T, Instant>,
    /// When each item being processed was handed out.
    started_at: HashMap<T, Instant>,
    queue_duration: Histogram,
    work_duration: Histogram,
}

impl<T> Default for WorkQueueRecorder<T> {
    fn default() -> Self {
        Self {
            now: Instant::now(),
            adds: 0,
            retries: 0,
            added_at: HashMap::new(),
            started_at: HashMap::new(),
            queue_duration: Histogram::default(),
            work_duration: Histogram::default(),
        }
    }
}

impl<T: Hash + Eq + Clone> WorkQueueRecorder<T> {
    /// The clock reading the queue took for this operation.
    pub(crate) fn at(&mut self, now: Instant) {
        self.now = now;
    }

    /// `item` became dirty (queued, or due again after its processing).
    pub(crate) fn added(&mut self, item: &T) {
        self.adds += 1;
        if !self.added_at.contains_key(item) {
            self.added_at.insert(item.clone(), self.now);
        }
    }

    /// `add_rate_limited` was called.
    pub(crate) fn retried(&mut self) {
        self.retries += 1;
    }

    /// `item` was handed out to a worker.
    pub(crate) fn started(&mut self, item: &T) {
        if let Some(added) = self.added_at.remove(item) {
            self.queue_duration
                .observe(self.now.saturating_duration_since(added));
        }
        self.started_at.insert(item.clone(), self.now);
    }

    /// The worker holding `item` is done with it.
    pub(crate) fn finished(&mut self, item: &T) {
        if let Some(started) = self.started_at.remove(item) {
            self.work_duration
                .observe(self.now.saturating_duration_since(started));
        }
    }

    /// The metrics now, given the queue's depth.
    pub(crate) fn snapshot(&self, depth: usize, now: Instant) -> WorkQueueMetrics {
        let running = self
            .started_at
            .values()
            .map(|&started| now.saturating_duration_since(started));
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
