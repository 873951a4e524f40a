//! The state one subscription shares with the distributor: its queue, its
//! waker and its sync bookkeeping, under one short-held mutex.

use std::{mem, sync::Arc, task::Waker};

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::{EndReason, Lag, life::Life, queue::Queue};
use crate::{key::ObjectKey, notification::Notification};

/// Where a subscription is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Asked for, not yet registered by the writer.
    Requested,
    /// Registered: notifications arrive.
    Open,
    /// The distributor closed, for this reason: what is queued is the last
    /// of it.
    Closed(EndReason),
    /// Never registered: the informer had stopped, or its writer went
    /// away first (L6).
    Refused,
}

pub(crate) struct State<K> {
    pub(crate) queue: Queue<K>,
    /// Initial-list `Added`s queued and not yet yielded (L2).
    pub(crate) initial_pending: usize,
    pub(crate) phase: Phase,
    pub(crate) receiver_dropped: bool,
    /// The informer's synced flag, known once registered.
    pub(crate) upstream: Option<watch::Receiver<bool>>,
    /// The life of the informer feeding this subscription, which a waiting
    /// receiver observes; `None` for a bare distributor's subscription,
    /// which ends when the distributor closes.
    pub(crate) life: Option<Arc<Life>>,
    pub(crate) counts: crate::metrics::SubscriptionCounts,
    waker: Option<Waker>,
}

pub(crate) struct Channel<K> {
    pub(crate) state: Mutex<State<K>>,
    pub(crate) lag: Lag,
    /// The receiver made room or went away (wakes a `Bounded` distributor).
    pub(crate) space: Notify,
    /// `initial_pending` reached zero or the phase changed.
    pub(crate) changed: Notify,
    pub(crate) recorder: crate::metrics::SubscriptionRecorder,
}

/// The outcome of offering a notification to one subscriber.
pub(crate) enum Offer<K> {
    /// Queued; the receiver's waker if it was waiting for this, for the
    /// caller to wake (at once, or once at the end of its batch).
    Queued(Option<Waker>),
    /// `Bounded` and full: here it is back.
    Full(Notification<K>),
    /// The subscription was dropped (or is no longer open).
    Gone,
}

impl<K> Channel<K> {
    pub(crate) fn new(lag: Lag) -> Self {
        Self {
            state: Mutex::new(State {
                queue: Queue::for_lag(lag),
                initial_pending: 0,
                phase: Phase::Requested,
                receiver_dropped: false,
                upstream: None,
                life: None,
                counts: Default::default(),
                waker: None,
            }),
            lag,
            space: Notify::new(),
            changed: Notify::new(),
            recorder: Default::default(),
        }
    }

    /// Queues `n` unless the queue is bounded and full (and not asked to
    /// take it `past_bound`, as on a stop, L12), or nobody listens.
    /// The receiver is not woken here: a waiting receiver's waker comes back
    /// in [`Offer::Queued`] and is taken out of the state, so however many
    /// notifications follow before the receiver polls again, it is handed
    /// out once.
    pub(crate) fn offer(&self, key: &ObjectKey, n: Notification<K>, past_bound: bool) -> Offer<K> {
        let waker = {
            let mut state = self.state.lock();
            if state.receiver_dropped || state.phase != Phase::Open {
                return Offer::Gone;
            }
            if let Lag::Bounded(cap) = self.lag
                && !past_bound
                && state.queue.len() >= cap.max(1)
            {
                return Offer::Full(n);
            }
            let before = state.initial_pending;
            state.push(key, n);
            let drained = before > 0 && state.initial_pending == 0;
            (state.waker.take(), drained)
        };
        let (waker, drained) = waker;
        if drained {
            // A coalesced add-then-delete can finish the initial list.
            self.changed.notify_waiters();
        }
        Offer::Queued(waker)
    }

    /// Registers: queues the replay (whole, whatever the bound) and opens.
    pub(crate) fn open(
        &self,
        replay: impl IntoIterator<Item = (ObjectKey, std::sync::Arc<K>)>,
        upstream: watch::Receiver<bool>,
    ) {
        let waker = {
            let mut state = self.state.lock();
            if state.phase != Phase::Requested {
                return;
            }
            for (key, object) in replay {
                state.push(
                    &key,
                    Notification::Added {
                        object,
                        in_initial_list: true,
                    },
                );
            }
            state.upstream = Some(upstream);
            state.phase = Phase::Open;
            state.waker.take()
        };
        self.changed.notify_waiters();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Moves to `to` if still in `from`, waking the receiver.
    pub(crate) fn end(&self, from: &Phase, to: Phase) {
        let waker = {
            let mut state = self.state.lock();
            if state.phase != *from {
                return;
            }
            state.phase = to;
            state.waker.take()
        };
        self.changed.notify_waiters();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The receiver went away: free its queue and release a waiting
    /// distributor.
    pub(crate) fn drop_receiver(&self) {
        let queue = {
            let mut state = self.state.lock();
            state.receiver_dropped = true;
            state.initial_pending = 0;
            let empty = Queue::for_lag(self.lag);
            mem::replace(&mut state.queue, empty)
        };
        // Notifications (and maybe the last Arc of some objects) are freed
        // outside the lock.
        drop(queue);
        self.space.notify_one();
        // A sync waiter on this subscription cannot sync any more.
        self.changed.notify_waiters();
    }

    /// The life of the informer feeding this subscription, if attached.
    pub(crate) fn life(&self) -> Option<Arc<Life>> {
        self.state.lock().life.clone()
    }

    /// The feeding informer ended with `reason`. A running informer closed
    /// every subscription before it ended, so this changes nothing then;
    /// one that ended without ever running has no run loop to close them,
    /// and nothing was queued for them: the observer closes its own.
    pub(crate) fn close_after_end(&self, reason: EndReason) {
        self.end(&Phase::Open, Phase::Closed(reason));
        self.end(&Phase::Requested, Phase::Refused);
    }

    /// The reason the subscription ended, once it has.
    pub(crate) fn end_reason(&self) -> Option<EndReason> {
        match &self.state.lock().phase {
            Phase::Requested | Phase::Open => None,
            Phase::Closed(reason) => Some(reason.clone()),
            Phase::Refused => Some(EndReason::Stopped),
        }
    }

    pub(crate) fn is_receiver_dropped(&self) -> bool {
        self.state.lock().receiver_dropped
    }
}

impl<K> State<K> {
    fn push(&mut self, key: &ObjectKey, n: Notification<K>) {
        let change = self.queue.push(key, n);
        self.counts.queued(self.queue.len());
        self.initial_pending = self.initial_pending.saturating_add_signed(change);
    }

    /// Registers the receiver's waker, replacing an older one.
    pub(crate) fn set_waker(&mut self, waker: &Waker) {
        match &self.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => self.waker = Some(waker.clone()),
        }
    }

    pub(crate) fn upstream_synced(&self) -> bool {
        self.upstream.as_ref().is_some_and(|u| *u.borrow())
    }
}
