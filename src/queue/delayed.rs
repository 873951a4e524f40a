//! Items waiting for a deadline before they join the queue (W5, W6), and
//! which of those wait out an error backoff that holds (W13).

use std::{cmp::Ordering, collections::BinaryHeap, hash::Hash};

use tokio::time::Instant;

use crate::hash::{KeyMap, KeySet};

/// A min-heap of deadlines with one live deadline per item.
///
/// Moving an item's deadline earlier pushes a second heap entry and leaves the
/// old one behind as stale (it no longer matches `deadlines`); stale entries are
/// skipped when they surface, and the heap is rebuilt when they outnumber live
/// ones, so memory stays proportional to the number of distinct waiting items.
#[derive(Debug)]
pub(super) struct Delayed<T> {
    heap: BinaryHeap<Entry<T>>,
    /// The live deadline of each waiting item, with the sequence number of its
    /// heap entry.
    deadlines: KeyMap<T, (Instant, u64)>,
    /// Items whose live deadline is a backoff that holds (W13): plain
    /// delayed adds of them are absorbed, not scheduled.
    holds: KeySet<T>,
    next_seq: u64,
}

#[derive(Debug)]
struct Entry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

// Reversed so that `BinaryHeap` (a max-heap) yields the earliest deadline, and
// among equal deadlines the oldest `add_after` call.
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<T> Eq for Entry<T> {}

impl<T> Default for Delayed<T> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            deadlines: KeyMap::default(),
            holds: KeySet::default(),
            next_seq: 0,
        }
    }
}

impl<T: Hash + Eq + Clone> Delayed<T> {
    /// Schedules `item` for `at`, unless it already waits for an earlier or
    /// equal deadline. Returns true when this became the earliest deadline of
    /// all, so sleepers must re-arm their timers.
    /// An item waiting out a backoff that holds keeps that deadline (W13).
    pub(super) fn insert(&mut self, item: T, at: Instant) -> bool {
        if self.holds.contains(&item) {
            return false;
        }
        let seq = self.next_seq;
        match self.deadlines.get_mut(&item) {
            Some((current, _)) if *current <= at => return false,
            Some(live) => *live = (at, seq),
            None => {
                self.deadlines.insert(item.clone(), (at, seq));
            }
        }
        self.push(item, at, seq)
    }

    /// Schedules `item` for `at` as a backoff that holds (W13): `at`
    /// becomes its only deadline, earlier or later than the one it had.
    /// Returns true when this became the earliest deadline of all.
    pub(super) fn hold(&mut self, item: T, at: Instant) -> bool {
        let seq = self.next_seq;
        self.deadlines.insert(item.clone(), (at, seq));
        self.holds.insert(item.clone());
        self.push(item, at, seq)
    }

    /// Whether `item` waits out a backoff that holds (W13).
    pub(super) fn is_held(&self, item: &T) -> bool {
        self.holds.contains(item)
    }

    fn push(&mut self, item: T, at: Instant, seq: u64) -> bool {
        self.next_seq += 1;
        let earliest = self.next_deadline().is_none_or(|first| at < first);
        self.heap.push(Entry { at, seq, item });
        if self.heap.len() > 2 * self.deadlines.len() + 32 {
            self.compact();
        }
        earliest
    }

    /// Takes the first item whose deadline is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<T> {
        while let Some(top) = self.heap.peek() {
            if top.at > now {
                return None;
            }
            let entry = self.heap.pop()?;
            if self.is_live(&entry) {
                self.deadlines.remove(&entry.item);
                self.holds.remove(&entry.item);
                return Some(entry.item);
            }
        }
        None
    }

    /// The earliest live deadline; drops stale entries found on top.
    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if self.is_live(top) {
                return Some(top.at);
            }
            self.heap.pop();
        }
        None
    }

    /// Number of items waiting.
    pub(super) fn len(&self) -> usize {
        self.deadlines.len()
    }

    /// Forgets every waiting item.
    pub(super) fn clear(&mut self) {
        self.heap = BinaryHeap::new();
        self.deadlines = KeyMap::default();
        self.holds = KeySet::default();
    }

    fn is_live(&self, entry: &Entry<T>) -> bool {
        self.deadlines.get(&entry.item) == Some(&(entry.at, entry.seq))
    }

    fn compact(&mut self) {
        let heap = std::mem::take(&mut self.heap);
        self.heap = heap.into_iter().filter(|e| self.is_live(e)).collect();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn earlier_deadline_wins_and_stale_entries_stay_bounded() {
        let now = Instant::now();
        let mut delayed = Delayed::default();
        assert!(delayed.insert("a", now + Duration::from_secs(10)));
        assert!(!delayed.insert("a", now + Duration::from_secs(20)));
        for i in (1..1000).rev() {
            delayed.insert("a", now + Duration::from_millis(i));
        }
        assert!(delayed.heap.len() <= 2 * delayed.len() + 33);
        assert_eq!(
            delayed.next_deadline(),
            Some(now + Duration::from_millis(1))
        );
        assert_eq!(delayed.pop_due(now + Duration::from_millis(1)), Some("a"));
        assert_eq!(delayed.pop_due(now + Duration::from_secs(60)), None);
        assert_eq!(delayed.len(), 0);
    }

    #[test]
    fn w13_a_hold_replaces_the_deadline_and_absorbs_plain_ones_until_due() {
        let now = Instant::now();
        let mut delayed = Delayed::default();
        delayed.insert("a", now + Duration::from_millis(1));
        delayed.hold("a", now + Duration::from_millis(10));
        assert!(delayed.is_held(&"a"));
        assert!(!delayed.insert("a", now + Duration::from_millis(2)));
        assert_eq!(
            delayed.next_deadline(),
            Some(now + Duration::from_millis(10))
        );
        assert_eq!(delayed.pop_due(now + Duration::from_millis(9)), None);
        assert_eq!(delayed.pop_due(now + Duration::from_millis(10)), Some("a"));
        assert!(!delayed.is_held(&"a"));
        assert_eq!(delayed.len(), 0);
    }

    #[test]
    fn equal_deadlines_come_due_in_call_order() {
        let at = Instant::now() + Duration::from_secs(1);
        let mut delayed = Delayed::default();
        for item in ["c", "a", "b"] {
            delayed.insert(item, at);
        }
        let due: Vec<_> = std::iter::from_fn(|| delayed.pop_due(at)).collect();
        assert_eq!(due, ["c", "a", "b"]);
    }
}
