//! Objects that only notifications hold, freed on the writer's thread once
//! every subscriber has dropped them (IR2).
//!
//! A notification is often the last holder of the object it carries: the
//! object an update replaced, a deleted object, and in a compact cache every
//! decoded object. Left alone, whichever subscriber drops it last frees it,
//! on its own thread, into the heap of the thread that decoded it, while
//! that thread decodes the next events from the same heap. Under glibc's
//! malloc that is a wait on the arena's lock for both
//! (`benches/compare/NOTES.md`, "One poll per event"). The writer keeps a
//! reference to each such object and, between two rounds of pops, frees
//! those no one else holds any more, on the thread that decodes the watch
//! (`benches/compare/NOTES.md`, "Replaced objects freed by the writer").
//! A writer that goes idle lets go of what it holds after a second, so a
//! quiet informer keeps no object alive for this.

use std::{collections::VecDeque, sync::Arc};

use crate::notification::Notification;

/// The most objects held at once. Subscribers read in order, so the oldest
/// are dropped first; at this many (a subscriber far behind, or one that
/// keeps objects), those already dropped are freed and, if half are still
/// held, the oldest are let go: whoever drops them last frees them, as
/// without this.
const MOST_HELD: usize = 512;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Reclaim<K> {
    held: VecDeque<Arc<K>>,
}

impl<K> Default for Reclaim<K> {
    fn default() -> Self {
        Self {
            held: VecDeque::new(),
        }
    }
}

impl<K> Reclaim<K> {
    /// Keeps a reference to each object `notification` is the only holder
    /// of, before it is handed out.
    pub(crate) fn hold(&mut self, notification: &Notification<K>) {
        match notification {
            Notification::Updated { old, new, .. } => {
                self.hold_if_sole(old);
                self.hold_if_sole(new);
            }
            Notification::Added { object, .. } | Notification::Deleted { object, .. } => {
                self.hold_if_sole(object);
            }
        }
    }

    fn hold_if_sole(&mut self, object: &Arc<K>) {
        if Arc::strong_count(object) != 1 {
            return;
        }
        if self.held.len() == MOST_HELD {
            self.free_unheld_all();
            // Still this many held: a subscriber is far behind. Let the
            // older half go at once, so the next scan is half a bound away
            // rather than at the next notification.
            if self.held.len() > MOST_HELD / 2 {
                let excess = self.held.len() - MOST_HELD / 2;
                self.held.drain(..excess);
            }
        }
        self.held.push_back(Arc::clone(object));
    }

    /// Frees, oldest first, the objects no one else holds, up to the first
    /// one still held: the cheap check between two rounds.
    pub(crate) fn free_unheld(&mut self) {
        while self
            .held
            .front()
            .is_some_and(|object| Arc::strong_count(object) == 1)
        {
            self.held.pop_front();
        }
    }

    /// Whether any object is held.
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Frees every object no one else holds and lets go of the others,
    /// which whoever drops them last frees: for a writer gone idle.
    pub(crate) fn release_all(&mut self) {
        self.free_unheld_all();
        self.held.clear();
    }

    /// Frees every object no one else holds.
    fn free_unheld_all(&mut self) {
        self.held.retain(|object| Arc::strong_count(object) > 1);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn updated(old: &Arc<u32>, new: &Arc<u32>) -> Notification<u32> {
        Notification::Updated {
            old: Arc::clone(old),
            new: Arc::clone(new),
            resync: false,
        }
    }

    #[test]
    fn ir2_an_object_only_a_notification_holds_is_freed_here_once_handed_out_and_dropped() {
        let mut reclaim = Reclaim::default();
        let old = Arc::new(1);
        let new = Arc::new(2);
        let notification = updated(&old, &new);
        // The store still holds `new`; `old` is the notification's alone.
        drop(old);
        reclaim.hold(&notification);
        assert_eq!(reclaim.len(), 1);
        let Notification::Updated { old, .. } = &notification else {
            unreachable!()
        };
        let watched = Arc::downgrade(old);
        reclaim.free_unheld();
        assert_eq!(reclaim.len(), 1, "a subscriber still holds it");
        drop(notification);
        assert!(
            watched.upgrade().is_some(),
            "the subscriber's drop did not free it"
        );
        reclaim.free_unheld();
        assert_eq!(reclaim.len(), 0);
        assert!(watched.upgrade().is_none(), "freed by the writer");
    }

    #[test]
    fn ir2_a_subscriber_far_behind_keeps_the_held_objects_bounded() {
        let mut reclaim = Reclaim::default();
        let mut waiting = Vec::new();
        for i in 0..4 * MOST_HELD as u32 {
            let notification = Notification::Deleted {
                object: Arc::new(i),
                final_state_unknown: false,
            };
            reclaim.hold(&notification);
            waiting.push(notification);
            assert!(reclaim.len() <= MOST_HELD);
        }
        // The ones let go are freed by the subscriber, as without this.
        let first = Arc::downgrade(waiting[0].object());
        drop(waiting);
        assert!(first.upgrade().is_none());
        reclaim.free_unheld();
        assert_eq!(reclaim.len(), 0);
    }

    #[test]
    fn ir2_a_kept_object_stops_the_cheap_check_but_not_the_bound() {
        let mut reclaim = Reclaim::default();
        let kept = Notification::Deleted {
            object: Arc::new(0),
            final_state_unknown: false,
        };
        reclaim.hold(&kept);
        for i in 1..=2 * MOST_HELD as u32 {
            let notification = Notification::Deleted {
                object: Arc::new(i),
                final_state_unknown: false,
            };
            reclaim.hold(&notification);
        }
        // All but the kept one were dropped; the cheap check stops at it.
        reclaim.free_unheld();
        assert!(reclaim.len() > 1);
        assert!(reclaim.len() <= MOST_HELD);
        reclaim.free_unheld_all();
        assert_eq!(reclaim.len(), 1);
        drop(kept);
        reclaim.free_unheld();
        assert_eq!(reclaim.len(), 0);
    }
}
