//! One subscriber's pending notifications, in the shape its lag policy asks
//! for.

use std::collections::VecDeque;

use super::{Lag, coalesce::CoalesceQueue, initial_list::is_initial_added};
use crate::{key::ObjectKey, notification::Notification};

pub(crate) enum Queue<K> {
    /// `Unbounded` and `Bounded`: every notification in order. The bound is
    /// enforced by the distributor, which waits instead of pushing.
    Fifo(VecDeque<Notification<K>>),
    Coalesce(CoalesceQueue<K>),
}

impl<K> Queue<K> {
    pub(crate) fn for_lag(lag: Lag) -> Self {
        match lag {
            Lag::Unbounded | Lag::Bounded(_) => Queue::Fifo(VecDeque::new()),
            Lag::Coalesce => Queue::Coalesce(CoalesceQueue::new()),
        }
    }

    /// Queues `n`; returns the change in pending initial-list `Added`s.
    pub(crate) fn push(&mut self, key: &ObjectKey, n: Notification<K>) -> isize {
        match self {
            Queue::Fifo(q) => {
                let initial = is_initial_added(&n);
                q.push_back(n);
                isize::from(initial)
            }
            Queue::Coalesce(q) => q.push(key, n),
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Notification<K>> {
        match self {
            Queue::Fifo(q) => q.pop_front(),
            Queue::Coalesce(q) => q.pop(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Queue::Fifo(q) => q.len(),
            Queue::Coalesce(q) => q.len(),
        }
    }

    /// Keys holding a place in the queue: the notification count for a FIFO
    /// queue, the distinct pending keys for a coalescing one.
    pub(crate) fn pending_keys(&self) -> usize {
        match self {
            Queue::Fifo(q) => q.len(),
            Queue::Coalesce(q) => q.pending_keys(),
        }
    }
}
