//! The queue's bookkeeping under its one lock: client-go's queue, dirty and
//! processing sets, plus the delayed items.

use std::{
    collections::{HashSet, VecDeque},
    hash::Hash,
};

use tokio::time::Instant;

use super::delayed::Delayed;

#[derive(Debug)]
pub(super) struct State<T> {
    /// Items ready to hand out, oldest first. Every item here is in `dirty`
    /// and not in `processing`.
    queue: VecDeque<T>,
    /// Items that need processing: queued ones, and processing ones added
    /// again (W3).
    dirty: HashSet<T>,
    /// Items handed out whose guard is still alive.
    processing: HashSet<T>,
    pub(super) delayed: Delayed<T>,
    pub(super) shutting_down: bool,
    /// `shutdown_with_drain` is waiting for `processing` to empty.
    pub(super) draining: bool,
    pub(super) metrics: crate::metrics::WorkQueueRecorder<T>,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            delayed: Delayed::default(),
            shutting_down: false,
            draining: false,
            metrics: Default::default(),
        }
    }
}

impl<T: Hash + Eq + Clone> State<T> {
    /// W1–W3: returns true when the item joined the queue (a waiter should
    /// wake).
    pub(super) fn add(&mut self, item: T) -> bool {
        if self.shutting_down || self.dirty.contains(&item) {
            return false;
        }
        self.metrics.added(&item);
        if self.processing.contains(&item) {
            self.dirty.insert(item);
            return false;
        }
        self.dirty.insert(item.clone());
        self.queue.push_back(item);
        true
    }

    /// Moves every delayed item due at `now` into the queue, earliest first
    /// (W6). Returns how many joined the queue.
    pub(super) fn promote(&mut self, now: Instant) -> usize {
        self.metrics.at(now);
        let mut joined = 0;
        while let Some(item) = self.delayed.pop_due(now) {
            joined += usize::from(self.add(item));
        }
        joined
    }

    /// Hands out the oldest queued item and marks it processing.
    pub(super) fn pop(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        self.dirty.remove(&item);
        self.processing.insert(item.clone());
        self.metrics.started(&item);
        Some(item)
    }

    /// Ends the processing of `item`; returns true when it was added again
    /// meanwhile and so joined the queue (W3).
    pub(super) fn done(&mut self, item: &T) -> bool {
        self.processing.remove(item);
        self.metrics.finished(item);
        if self.dirty.contains(item) {
            self.queue.push_back(item.clone());
            true
        } else {
            false
        }
    }

    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    pub(super) fn processing(&self) -> usize {
        self.processing.len()
    }

    /// W9: refuses adds from now on and drops delayed items.
    pub(super) fn shut_down(&mut self) {
        self.shutting_down = true;
        self.delayed.clear();
    }
}
