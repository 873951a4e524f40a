//! [`Shared`]: the state of a [`WorkQueue`](super::WorkQueue) behind its
//! lock, the wakeups of its consumers, and its rate limiter; one per queue,
//! shared by every handle and every [`WorkItem`](super::WorkItem) guard.

use std::{hash::Hash, sync::Arc};

use parking_lot::{Mutex, MutexGuard};
use tokio::{sync::Notify, time::Instant};

use super::{lazy_now::LazyNow, rate_limit::RateLimiter, state::State};

/// What [`Shared::take`] found.
enum Take<T> {
    Item(T),
    Closed,
    Wait(Option<Instant>),
}

pub(super) struct Shared<T> {
    pub(super) state: Mutex<State<T>>,
    /// Waiting consumers: `notify_one` per item that joins the queue,
    /// `notify_waiters` when the earliest deadline moves or on shutdown.
    pub(super) items: Notify,
    /// `shutdown_with_drain` callers, woken when nothing is processing.
    pub(super) drained: Notify,
    pub(super) limiter: Box<dyn RateLimiter<T>>,
}

impl<T: Hash + Eq + Clone> Shared<T> {
    /// Locks the state after moving due delayed items into the queue; wakes
    /// for those are the caller's job through the count.
    /// Also returns this operation's clock reading, taken when first
    /// needed (promoting, or timing an item for the metrics).
    pub(super) fn lock_promoted(&self) -> (MutexGuard<'_, State<T>>, usize, LazyNow) {
        let mut now = LazyNow::default();
        let mut state = self.state.lock();
        let joined = state.promote(&mut now);
        (state, joined, now)
    }

    /// Pops the oldest queued item under the lock, or says why there is
    /// none: shut down, or the earliest delayed deadline (if any) to wait
    /// for.
    fn take(this: &Arc<Self>) -> Take<T> {
        let (mut state, joined, mut now) = this.lock_promoted();
        let taken = match state.pop(&mut now) {
            Some(item) => Take::Item(item),
            None if state.shutting_down => Take::Closed,
            None => Take::Wait(state.delayed.next_deadline()),
        };
        drop(state);
        this.wake(joined);
        taken
    }

    /// Wakes one waiting consumer per item that joined the queue, after the
    /// lock is released.
    pub(super) fn wake(&self, joined: usize) {
        for _ in 0..joined {
            self.items.notify_one();
        }
    }

    pub(super) async fn next(this: &Arc<Self>) -> Option<T> {
        // A queued item needs no waiter registration: take it at once.
        match Self::take(this) {
            Take::Item(item) => return Some(item),
            Take::Closed => return None,
            Take::Wait(_) => {}
        }
        loop {
            // Registered before the state is read, so an add or a new
            // earliest deadline between the read and the wait is not lost.
            let notified = this.items.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let deadline = match Self::take(this) {
                Take::Item(item) => return Some(item),
                Take::Closed => return None,
                Take::Wait(deadline) => deadline,
            };
            match deadline {
                Some(deadline) => {
                    tokio::select! {
                        biased;
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Ends the processing of `item` (W3, W4, W10).
    pub(super) fn done(&self, item: &T) {
        let (joined, drained) = {
            // Due items join first, so they stay ahead of the released item.
            let (mut state, promoted, mut now) = self.lock_promoted();
            let joined = promoted + usize::from(state.done(item, &mut now));
            (joined, state.processing() == 0 && state.draining)
        };
        self.wake(joined);
        if drained {
            self.drained.notify_waiters();
        }
    }
}
