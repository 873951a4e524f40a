//! The queue of a [`Lag::Coalesce`](super::Lag::Coalesce) subscriber: the
//! newest state per key, in the order keys first became pending.

use std::collections::BTreeMap;

use smallvec::SmallVec;

use super::initial_list::is_initial_added as is_initial;
use crate::{hash::KeyMap, key::ObjectKey, notification::Notification};

/// At most two notifications per key: `[X]` or `[Deleted, X]` where `X` is
/// not a `Deleted`.
type Pending<K> = SmallVec<[Notification<K>; 2]>;

/// L11: the queue holds a slot only for a key with something pending: a key
/// whose notifications cancel out (`Added + Deleted`) gives its slot back at
/// once, so memory is bounded by the keys with pending news, not by every
/// key ever touched. A key that becomes pending again queues at the tail.
pub(crate) struct CoalesceQueue<K> {
    /// Each pending key once, by the sequence number it got when it became
    /// pending: oldest first, and removable from the middle.
    order: BTreeMap<u64, ObjectKey>,
    /// Per key: its sequence number in `order` and what is pending.
    pending: KeyMap<ObjectKey, (u64, Pending<K>)>,
    next_seq: u64,
    len: usize,
}

/// What two consecutive notifications of one key become.
enum Merged<K> {
    One(Notification<K>),
    Both(Notification<K>, Notification<K>),
    Nothing,
}

/// The merge rules, oldest first. Sequences the informer never produces
/// (an update after a delete, an add after an add) still merge to a bounded
/// result that folds to the same final state.
fn merge<K>(older: Notification<K>, newer: Notification<K>) -> Merged<K> {
    use Notification::*;
    match (older, newer) {
        (
            Added {
                in_initial_list, ..
            },
            Updated { new, .. },
        ) => Merged::One(Added {
            object: new,
            in_initial_list,
        }),
        (
            Added {
                in_initial_list: a, ..
            },
            Added {
                object,
                in_initial_list: b,
            },
        ) => Merged::One(Added {
            object,
            in_initial_list: a || b,
        }),
        // The subscriber never saw the object: nothing to tell.
        (Added { .. }, Deleted { .. }) => Merged::Nothing,
        (
            Updated {
                old, resync: r1, ..
            },
            Updated {
                new, resync: r2, ..
            },
        ) => Merged::One(Updated {
            old,
            new,
            resync: r1 && r2,
        }),
        (Updated { old, .. }, Added { object, .. }) => Merged::One(Updated {
            old,
            new: object,
            resync: false,
        }),
        (Updated { .. }, deleted @ Deleted { .. }) => Merged::One(deleted),
        (Deleted { .. }, deleted @ Deleted { .. }) => Merged::One(deleted),
        // A recreate is news (a new uid): both stay.
        (deleted @ Deleted { .. }, other) => Merged::Both(deleted, other),
    }
}

fn count_initial<K>(pending: &Pending<K>) -> usize {
    pending.iter().filter(|n| is_initial(n)).count()
}

impl<K> CoalesceQueue<K> {
    pub(crate) fn new() -> Self {
        Self {
            order: BTreeMap::new(),
            pending: KeyMap::default(),
            next_seq: 0,
            len: 0,
        }
    }

    /// Queues `n` for `key`, merging it into what is pending for that key.
    /// Returns the change in the number of pending initial-list `Added`s.
    pub(crate) fn push(&mut self, key: &ObjectKey, n: Notification<K>) -> isize {
        let (seq, pending) = match self.pending.get_mut(key) {
            Some((seq, p)) => (*seq, p),
            None => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.order.insert(seq, key.clone());
                let (_, p) = self
                    .pending
                    .entry(key.clone())
                    .or_insert_with(|| (seq, Pending::new()));
                (seq, p)
            }
        };
        let (len_before, initial_before) = (pending.len(), count_initial(pending));
        match pending.pop() {
            None => pending.push(n),
            Some(last) => match merge(last, n) {
                Merged::One(m) => pending.push(m),
                Merged::Both(a, b) => {
                    pending.push(a);
                    pending.push(b);
                }
                Merged::Nothing => {}
            },
        }
        // `[Deleted, X] + Deleted` leaves two deletes: keep the newer only.
        if let [Notification::Deleted { .. }, Notification::Deleted { .. }] = pending.as_slice() {
            pending.remove(0);
        }
        let (len_after, initial_after) = (pending.len(), count_initial(pending));
        if pending.is_empty() {
            // Cancelled out: the slot goes (L11).
            self.pending.remove(key);
            self.order.remove(&seq);
        }
        self.len = self.len + len_after - len_before;
        initial_after as isize - initial_before as isize
    }

    /// The oldest pending key's oldest notification.
    pub(crate) fn pop(&mut self) -> Option<Notification<K>> {
        loop {
            let entry = self.order.first_entry()?;
            let key = entry.get();
            // `order` and `pending` hold the same keys, each non-empty; the
            // loop only guards against that ever breaking.
            let Some((_, pending)) = self.pending.get_mut(key).filter(|(_, p)| !p.is_empty())
            else {
                self.pending.remove(key);
                entry.remove();
                continue;
            };
            let n = pending.remove(0);
            if pending.is_empty() {
                self.pending.remove(key);
                entry.remove();
            }
            self.len -= 1;
            return Some(n);
        }
    }

    /// Pending notifications.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keys holding a slot: those with something pending (L11).
    pub(crate) fn pending_keys(&self) -> usize {
        self.order.len()
    }
}
