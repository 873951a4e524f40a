//! The queue's bookkeeping under its one lock: client-go's queue, dirty and
//! processing sets, plus the delayed items and the levels of ready items.

use std::{collections::hash_map::Entry, hash::Hash, time::Duration};

use tokio::time::Instant;

use super::{delayed::Delayed, lazy_now::LazyNow, priority::Priority, ready::Ready};
use crate::{
    hash::{KeyMap, KeySet},
    metrics::WorkQueueRecorder,
};

/// Where an item stands, for every item that needs processing or is being
/// processed: client-go's dirty and processing sets (and its metrics' add
/// and start times) as one map, so an add, a hand-out and a release each
/// hash the item once.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Needs processing (queued, or processing and added again, W3): since
    /// when, for the queue-duration metric.
    dirty_since: Option<Instant>,
    /// Handed out and its guard still alive: since when, for the
    /// work-duration metric.
    processing_since: Option<Instant>,
}

#[derive(Debug)]
pub(super) struct State<T> {
    /// Items ready to hand out, by level, oldest first. Every item here is
    /// dirty and not processing.
    pub(super) ready: Ready<T>,
    /// Items dirty, processing or both; no entry is neither. Hashed as
    /// every map kept by key is (crate::hash: foldhash, seeded per process
    /// as Go's map hash is for client-go).
    marks: KeyMap<T, Mark>,
    /// How many items are processing.
    processing: usize,
    pub(super) delayed: Delayed<T>,
    pub(super) shutting_down: bool,
    /// `shutdown_with_drain` is waiting for nothing to be processing.
    pub(super) draining: bool,
    /// W13: error backoffs hold, instead of client-go's W5.
    pub(super) backoff_holds: bool,
    /// W13: items whose backoff the rate limiter is being asked for (outside
    /// the lock), so a concurrent rate-limited add does not count a second
    /// failure for the same deadline.
    backoff_asked: KeySet<T>,
    pub(super) metrics: WorkQueueRecorder,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        Self {
            ready: Ready::default(),
            marks: KeyMap::default(),
            processing: 0,
            delayed: Delayed::default(),
            shutting_down: false,
            draining: false,
            backoff_holds: false,
            backoff_asked: KeySet::default(),
            metrics: WorkQueueRecorder::default(),
        }
    }
}

impl<T: Hash + Eq + Clone> State<T> {
    /// W1–W3, at `priority` (W14): returns true when the item joined the
    /// queue (a waiter should wake). `now` is the clock reading of this
    /// locked operation.
    pub(super) fn add(&mut self, item: T, priority: Priority, now: &mut LazyNow) -> bool {
        if self.shutting_down || self.delayed.is_held(&item) {
            // A held item joins its backoff deadline instead (W13).
            return false;
        }
        let level = self.ready.level(priority);
        match self.marks.entry(item) {
            // Already waiting (W1), or processing: then queued again when
            // released (W3).
            Entry::Occupied(mut entry) => {
                let mark = entry.get_mut();
                if mark.dirty_since.is_none() {
                    // Processing: it rejoins at this level (W14).
                    mark.dirty_since = Some(now.get());
                    self.metrics.added();
                    if level == Priority::Low {
                        self.ready.rejoin_low(entry.key().clone());
                    }
                } else if level == Priority::High {
                    // If it was added low, it moves up, once (W14).
                    if mark.processing_since.is_some() {
                        self.ready.rejoin_high(entry.key());
                    } else {
                        self.ready.raise(entry.key());
                    }
                }
                false
            }
            Entry::Vacant(entry) => {
                self.ready.push(entry.key().clone(), level, now);
                entry.insert(Mark {
                    dirty_since: Some(now.get()),
                    processing_since: None,
                });
                self.metrics.added();
                true
            }
        }
    }

    /// W13: whether a rate-limited add of `item` should ask the limiter
    /// for a new backoff. Not when the item already waits out one (its
    /// failure is counted once per deadline) or another caller is asking
    /// for it right now; otherwise the item is marked as asked for until
    /// [`hold`](Self::hold) or [`unask`](Self::unask).
    pub(super) fn ask_backoff(&mut self, item: &T) -> bool {
        if self.shutting_down || self.delayed.is_held(item) || self.backoff_asked.contains(item) {
            return false;
        }
        self.backoff_asked.insert(item.clone());
        true
    }

    /// W13: the limiter answered zero: no backoff to hold.
    pub(super) fn unask(&mut self, item: &T) {
        self.backoff_asked.remove(item);
    }

    /// W13: `item` waits out its backoff until `at`, whatever it was doing:
    /// a deadline it had is replaced, a queued item leaves the queue, and
    /// an item processing and added again is not queued when its guard
    /// drops. Returns true when `at` became the earliest deadline of all.
    pub(super) fn hold(&mut self, item: T, at: Instant) -> bool {
        self.backoff_asked.remove(&item);
        if self.shutting_down {
            return false;
        }
        if let Entry::Occupied(mut entry) = self.marks.entry(item.clone())
            && entry.get().dirty_since.is_some()
        {
            if entry.get().processing_since.is_some() {
                entry.get_mut().dirty_since = None;
                self.ready.rejoin_high(&item);
            } else {
                entry.remove();
                self.ready.remove(&item);
            }
        }
        self.delayed.hold(item, at)
    }

    /// Moves every delayed item due at `now` into the queue, earliest first
    /// (W6), at high priority (W14). Returns how many joined the queue.
    pub(super) fn promote(&mut self, now: &mut LazyNow) -> usize {
        if self.delayed.len() == 0 {
            return 0;
        }
        let at = now.get();
        let mut joined = 0;
        while let Some(item) = self.delayed.pop_due(at) {
            joined += usize::from(self.add(item, Priority::High, now));
        }
        joined
    }

    /// Hands out the next queued item (W2, W14, W15) and marks it
    /// processing.
    pub(super) fn pop(&mut self, now: &mut LazyNow) -> Option<T> {
        let item = self.ready.pop(now)?;
        if let Some(mark) = self.marks.get_mut(&item) {
            let now = now.get();
            if let Some(since) = mark.dirty_since.take() {
                self.metrics.started(now.saturating_duration_since(since));
            }
            mark.processing_since = Some(now);
        }
        self.processing += 1;
        Some(item)
    }

    /// Ends the processing of `item`; returns true when it was added again
    /// meanwhile and so joined the queue (W3).
    pub(super) fn done(&mut self, item: &T, now: &mut LazyNow) -> bool {
        let Entry::Occupied(mut entry) = self.marks.entry(item.clone()) else {
            return false;
        };
        let Some(since) = entry.get_mut().processing_since.take() else {
            return false;
        };
        self.processing -= 1;
        self.metrics
            .finished(now.get().saturating_duration_since(since));
        if entry.get().dirty_since.is_some() {
            let level = self.ready.rejoin_level(item);
            self.ready.push(item.clone(), level, now);
            true
        } else {
            entry.remove();
            false
        }
    }

    pub(super) fn queued(&self) -> usize {
        self.ready.len()
    }

    pub(super) fn processing(&self) -> usize {
        self.processing
    }

    /// How long each item being processed now has been held.
    pub(super) fn running(&self, now: Instant) -> impl Iterator<Item = Duration> + '_ {
        self.marks
            .values()
            .filter_map(move |mark| mark.processing_since)
            .map(move |since| now.saturating_duration_since(since))
    }

    /// W9: refuses adds from now on and drops delayed items.
    pub(super) fn shut_down(&mut self) {
        self.shutting_down = true;
        self.delayed.clear();
        self.backoff_asked.clear();
    }
}
