//! The items ready to hand out, by level (W2, W14), which level the next
//! hand-out takes from (W15), and the level an item processing rejoins at.

use std::{collections::VecDeque, hash::Hash, time::Duration};

use tokio::time::Instant;

use super::{
    lazy_now::LazyNow,
    priority::{DEFAULT_PRIORITY_AGEING, Priority},
};
use crate::hash::{KeyMap, KeySet};

/// Ready items: one first-in first-out queue per level. With priorities
/// off every item is high, so this is one queue, client-go's.
///
/// The low queue drops items lazily: an item that moves up to high (W14) or
/// leaves for a backoff (W13) keeps a stale entry, recognised by its
/// sequence number no longer matching `low_live`; stale entries are skipped
/// when they reach the front, and the queue is rebuilt when they outnumber
/// live ones, so memory stays proportional to the items queued (W12).
#[derive(Debug)]
pub(super) struct Ready<T> {
    high: VecDeque<T>,
    low: VecDeque<Low<T>>,
    /// The sequence number of each live low entry.
    low_live: KeyMap<T, u64>,
    /// Items processing, added again at low priority only: they rejoin
    /// the low queue when their guard drops (W14). Every other item
    /// processing and added again rejoins high.
    rejoining_low: KeySet<T>,
    next_seq: u64,
    /// W14 on: low adds queue low.
    priorities: bool,
    /// How long a low item waits before it ages (W15).
    ageing: Duration,
    /// Whether the last hand-out was a low item (W15 alternates).
    last_was_low: bool,
}

#[derive(Debug)]
struct Low<T> {
    item: T,
    seq: u64,
    /// When it joined the low queue, for its age (W15).
    joined: Instant,
}

impl<T> Default for Ready<T> {
    fn default() -> Self {
        Self {
            high: VecDeque::new(),
            low: VecDeque::new(),
            low_live: KeyMap::default(),
            rejoining_low: KeySet::default(),
            next_seq: 0,
            priorities: false,
            ageing: DEFAULT_PRIORITY_AGEING,
            last_was_low: false,
        }
    }
}

impl<T: Hash + Eq + Clone> Ready<T> {
    /// Turns priorities on or off (W14). Meant for an empty queue: items
    /// already low stay low.
    pub(super) fn set_priorities(&mut self, on: bool) {
        self.priorities = on;
    }

    /// Sets the ageing bound (W15), which applies with priorities on.
    pub(super) fn set_ageing(&mut self, ageing: Duration) {
        self.ageing = ageing;
    }

    pub(super) fn priorities(&self) -> bool {
        self.priorities
    }

    pub(super) fn ageing(&self) -> Duration {
        self.ageing
    }

    /// The level `priority` is queued at: itself with priorities on, high
    /// otherwise.
    pub(super) fn level(&self, priority: Priority) -> Priority {
        if self.priorities {
            priority
        } else {
            Priority::High
        }
    }

    /// Queues `item`, not queued yet, at the tail of `level` (from
    /// [`level`](Self::level)).
    pub(super) fn push(&mut self, item: T, level: Priority, now: &mut LazyNow) {
        match level {
            Priority::High => self.high.push_back(item),
            Priority::Low => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.low_live.insert(item.clone(), seq);
                self.low.push_back(Low {
                    item,
                    seq,
                    joined: now.get(),
                });
            }
        }
    }

    /// W14: an item processing was added again at low priority (and not
    /// at high before, while processing).
    pub(super) fn rejoin_low(&mut self, item: T) {
        self.rejoining_low.insert(item);
    }

    /// W14: an item processing was added again at high priority, or is
    /// no longer to rejoin (a backoff that holds, W13).
    pub(super) fn rejoin_high(&mut self, item: &T) {
        if !self.rejoining_low.is_empty() {
            self.rejoining_low.remove(item);
        }
    }

    /// The level an item processing and added again rejoins at when its
    /// guard drops (W14).
    pub(super) fn rejoin_level(&mut self, item: &T) -> Priority {
        if !self.rejoining_low.is_empty() && self.rejoining_low.remove(item) {
            Priority::Low
        } else {
            Priority::High
        }
    }

    /// W14: a queued low item was added high: it moves to the tail of the
    /// high queue. Nothing happens to an item not queued low.
    pub(super) fn raise(&mut self, item: &T) {
        if self.low_live.is_empty() {
            return;
        }
        if let Some((item, _)) = self.low_live.remove_entry(item) {
            self.high.push_back(item);
            self.compact();
        }
    }

    /// Takes a queued item out of the queue (a backoff that holds, W13).
    pub(super) fn remove(&mut self, item: &T) {
        if !self.low_live.is_empty() && self.low_live.remove(item).is_some() {
            self.compact();
        } else if let Some(at) = self.high.iter().position(|queued| queued == item) {
            // Rare (a rate-limited add of an item that was neither held
            // nor processing), so a linear search is fine.
            self.high.remove(at);
        }
    }

    /// The next item to hand out (W2, W14, W15): the oldest high item,
    /// unless none is queued or the oldest low item has aged and the last
    /// hand-out was a high item; then the oldest low item.
    pub(super) fn pop(&mut self, now: &mut LazyNow) -> Option<T> {
        self.drop_stale_front();
        let low_first = match self.low.front() {
            None => false,
            Some(_) if self.high.is_empty() => true,
            Some(oldest) => {
                !self.last_was_low
                    && now.get().saturating_duration_since(oldest.joined) >= self.ageing
            }
        };
        let item = if low_first {
            let oldest = self.low.pop_front()?;
            self.low_live.remove(&oldest.item);
            self.compact();
            oldest.item
        } else {
            self.high.pop_front()?
        };
        // Only a hand-out counts: an empty poll leaves the turn as it was.
        self.last_was_low = low_first;
        Some(item)
    }

    /// How many items are queued, at both levels (W11).
    pub(super) fn len(&self) -> usize {
        self.high.len() + self.low_live.len()
    }

    /// How many items are queued at `level`.
    pub(super) fn len_at(&self, level: Priority) -> usize {
        match level {
            Priority::High => self.high.len(),
            Priority::Low => self.low_live.len(),
        }
    }

    fn is_live(&self, entry: &Low<T>) -> bool {
        self.low_live.get(&entry.item) == Some(&entry.seq)
    }

    fn drop_stale_front(&mut self) {
        while let Some(front) = self.low.front() {
            if self.is_live(front) {
                return;
            }
            self.low.pop_front();
        }
    }

    /// Rebuilds the low queue once stale entries outnumber live ones (W12),
    /// after every change that makes a stale entry or takes a live one.
    /// Each rebuild drops more stale entries than it keeps live ones, and
    /// each stale entry is dropped once, so the cost per change stays
    /// constant on average.
    fn compact(&mut self) {
        if self.low.len() > 2 * self.low_live.len() + 32 {
            let low = std::mem::take(&mut self.low);
            self.low = low
                .into_iter()
                .filter(|entry| self.is_live(entry))
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(ageing: Duration) -> Ready<u32> {
        let mut ready = Ready::default();
        ready.set_priorities(true);
        ready.set_ageing(ageing);
        ready
    }

    #[test]
    fn w12_stale_low_entries_stay_bounded_by_the_live_ones() {
        let mut ready = ready(Duration::from_secs(10));
        let mut now = LazyNow::at(Instant::now());
        for round in 0..1000 {
            ready.push(round, Priority::Low, &mut now);
            ready.raise(&round);
            assert_eq!(ready.pop(&mut now), Some(round));
        }
        assert!(ready.low.len() <= 2 * ready.low_live.len() + 33);
        assert_eq!(ready.len(), 0);
    }

    #[test]
    fn w12_stale_low_entries_stay_bounded_while_live_ones_are_handed_out() {
        let mut ready = ready(Duration::from_secs(10));
        let mut now = LazyNow::at(Instant::now());
        for item in 0..200 {
            ready.push(item, Priority::Low, &mut now);
        }
        // The later half moves up and is handed out: 100 stale entries
        // behind 100 live ones.
        for item in 100..200 {
            ready.raise(&item);
            assert_eq!(ready.pop(&mut now), Some(item));
        }
        while ready.pop(&mut now).is_some() {
            assert!(ready.low.len() <= 2 * ready.low_live.len() + 32);
        }
        assert!(ready.low.is_empty());
    }

    #[test]
    fn w14_a_stale_entry_does_not_stand_for_a_later_low_add() {
        let mut ready = ready(Duration::from_secs(10));
        let mut now = LazyNow::at(Instant::now());
        ready.push(1, Priority::Low, &mut now);
        ready.push(2, Priority::Low, &mut now);
        ready.raise(&1);
        assert_eq!(ready.pop(&mut now), Some(1));
        // 1 is low again, behind 2: its old entry ahead of 2 is stale.
        ready.push(1, Priority::Low, &mut now);
        assert_eq!(ready.pop(&mut now), Some(2));
        assert_eq!(ready.pop(&mut now), Some(1));
        assert_eq!(ready.pop(&mut now), None);
    }

    #[test]
    fn w14_off_every_level_is_one_queue() {
        let mut ready = Ready::default();
        let mut now = LazyNow::at(Instant::now());
        for item in [1, 2, 3] {
            let level = ready.level(if item == 2 {
                Priority::High
            } else {
                Priority::Low
            });
            ready.push(item, level, &mut now);
        }
        let order: Vec<_> = std::iter::from_fn(|| ready.pop(&mut now)).collect();
        assert_eq!(order, [1, 2, 3]);
    }
}
