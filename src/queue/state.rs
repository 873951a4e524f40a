//! The queue's bookkeeping under its one lock: client-go's queue, dirty and
//! processing sets, plus the delayed items.

use std::{
    collections::{HashMap, VecDeque, hash_map::Entry},
    hash::Hash,
};

use tokio::time::Instant;

use super::delayed::Delayed;

/// Where an item stands, for every item that needs processing or is being
/// processed: client-go's dirty and processing sets as one map, so an add,
/// a hand-out and a release each hash the item once.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Needs processing: queued, or processing and added again (W3).
    dirty: bool,
    /// Handed out and its guard still alive.
    processing: bool,
}

#[derive(Debug)]
pub(super) struct State<T> {
    /// Items ready to hand out, oldest first. Every item here is dirty and
    /// not processing.
    queue: VecDeque<T>,
    /// Items dirty, processing or both; no entry is neither. Hashed with
    /// foldhash: SipHash was a third of an add-take-release round, and
    /// foldhash's per-process random seed still keeps crafted object names
    /// from choosing collisions, as Go's seeded map hash does for client-go.
    marks: HashMap<T, Mark, foldhash::fast::RandomState>,
    /// How many items are processing.
    processing: usize,
    pub(super) delayed: Delayed<T>,
    pub(super) shutting_down: bool,
    /// `shutdown_with_drain` is waiting for nothing to be processing.
    pub(super) draining: bool,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            marks: HashMap::default(),
            processing: 0,
            delayed: Delayed::default(),
            shutting_down: false,
            draining: false,
        }
    }
}

impl<T: Hash + Eq + Clone> State<T> {
    /// W1–W3: returns true when the item joined the queue (a waiter should
    /// wake).
    pub(super) fn add(&mut self, item: T) -> bool {
        if self.shutting_down {
            return false;
        }
        match self.marks.entry(item) {
            // Already waiting (W1), or processing: then queued again when
            // released (W3).
            Entry::Occupied(mut entry) => {
                entry.get_mut().dirty = true;
                false
            }
            Entry::Vacant(entry) => {
                self.queue.push_back(entry.key().clone());
                entry.insert(Mark {
                    dirty: true,
                    processing: false,
                });
                true
            }
        }
    }

    /// Moves every delayed item due at `now` into the queue, earliest first
    /// (W6). Returns how many joined the queue.
    pub(super) fn promote(&mut self, now: Instant) -> usize {
        let mut joined = 0;
        while let Some(item) = self.delayed.pop_due(now) {
            joined += usize::from(self.add(item));
        }
        joined
    }

    /// Hands out the oldest queued item and marks it processing.
    pub(super) fn pop(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        if let Some(mark) = self.marks.get_mut(&item) {
            *mark = Mark {
                dirty: false,
                processing: true,
            };
        }
        self.processing += 1;
        Some(item)
    }

    /// Ends the processing of `item`; returns true when it was added again
    /// meanwhile and so joined the queue (W3).
    pub(super) fn done(&mut self, item: &T) -> bool {
        let Entry::Occupied(mut entry) = self.marks.entry(item.clone()) else {
            return false;
        };
        if !entry.get().processing {
            return false;
        }
        self.processing -= 1;
        if entry.get().dirty {
            entry.get_mut().processing = false;
            self.queue.push_back(item.clone());
            true
        } else {
            entry.remove();
            false
        }
    }

    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    pub(super) fn processing(&self) -> usize {
        self.processing
    }

    /// W9: refuses adds from now on and drops delayed items.
    pub(super) fn shut_down(&mut self) {
        self.shutting_down = true;
        self.delayed.clear();
    }
}
