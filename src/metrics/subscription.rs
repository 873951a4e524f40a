//! What one subscriber was handed and how far behind it is.
//!
//! The counts live in the subscription's queue state and change under the
//! lock that guards the queue anyway, so counting costs no atomic at all.
//! The age of the oldest pending notification is worked out when someone
//! reads the stats, not on the hot path: see [`SubscriptionStats::lag`].

use std::{
    collections::VecDeque,
    sync::OnceLock,
    time::{Duration, Instant as StdInstant},
};

use parking_lot::Mutex;
use tokio::time::Instant;

use super::histogram::{DurationHistogram, Histogram};
use crate::notification::Notification;

/// Notifications handed to a subscriber, by kind.
///
/// # Examples
///
/// ```
/// use kube_informer::metrics::Delivered;
///
/// let delivered = Delivered::default();
/// assert_eq!(delivered.total(), 0);
/// assert_eq!(delivered.added, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivered {
    /// `Added`, initial list and replay included.
    pub added: u64,
    /// `Updated` that changed the object (a new resourceVersion).
    pub updated: u64,
    /// `Deleted`.
    pub deleted: u64,
    /// `Updated` by a resync (same resourceVersion).
    pub resync: u64,
}

impl Delivered {
    /// Every notification delivered.
    pub fn total(&self) -> u64 {
        self.added + self.updated + self.deleted + self.resync
    }

    /// The counts with their `kind` label values: `added`, `updated`,
    /// `deleted`, `resync` (what the Prometheus exporter labels them).
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    pub(crate) fn by_kind(&self) -> [(&'static str, u64); 4] {
        [
            ("added", self.added),
            ("updated", self.updated),
            ("deleted", self.deleted),
            ("resync", self.resync),
        ]
    }
}

/// The counts kept under the subscription's queue lock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SubscriptionCounts {
    delivered: Delivered,
    /// Notifications ever queued (before any coalescing).
    queued: u64,
    high_water: usize,
}

impl SubscriptionCounts {
    /// One notification joined the queue, which now holds `len`.
    pub(crate) fn queued(&mut self, len: usize) {
        self.queued += 1;
        self.high_water = self.high_water.max(len);
    }

    /// The subscriber took `n`.
    pub(crate) fn delivered<K>(&mut self, n: &Notification<K>) {
        let slot = match n {
            Notification::Added { .. } => &mut self.delivered.added,
            Notification::Updated { resync: true, .. } => &mut self.delivered.resync,
            Notification::Updated { .. } => &mut self.delivered.updated,
            Notification::Deleted { .. } => &mut self.delivered.deleted,
        };
        *slot += 1;
    }
}

/// What a subscription records outside its queue lock.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionRecorder {
    name: OnceLock<String>,
    handler: Histogram,
    lag: Mutex<LagProbe>,
}

impl SubscriptionRecorder {
    /// Names the subscription, unless it already has a name.
    pub(crate) fn name_once(&self, name: impl FnOnce() -> String) {
        let _ = self.name.get_or_init(name);
    }

    /// Names the subscription as its options say, if they name it.
    pub(crate) fn named(&self, name: Option<&str>) {
        if let Some(name) = name {
            self.name_once(|| name.to_owned());
        }
    }

    /// A handler call driven by `Subscription::handle` that started at
    /// `started` has returned.
    pub(crate) fn handled(&self, started: StdInstant) {
        self.handler.observe(started.elapsed());
    }

    /// The stats, from the counts and queue length read under the queue
    /// lock.
    pub(crate) fn snapshot(
        &self,
        counts: SubscriptionCounts,
        pending: usize,
        pending_keys: usize,
    ) -> SubscriptionStats {
        let lag = self
            .lag
            .lock()
            .observe(counts.queued, pending, Instant::now());
        SubscriptionStats {
            name: self.name.get().cloned().unwrap_or_default(),
            delivered: counts.delivered,
            pending,
            pending_keys,
            pending_high_water: counts.high_water,
            lag,
            handler_duration: self.handler.snapshot(),
        }
    }
}

/// How many observations of the queued count the lag probe keeps.
const LAG_MARKS: usize = 64;

/// Works out a lower bound on the age of the oldest pending notification
/// from the reads themselves: each read notes how many notifications had
/// been queued by then. The oldest pending one is number
/// `queued - pending + 1`; the first read that saw at least that many
/// queued proves it was already waiting then.
#[derive(Debug, Default)]
struct LagProbe {
    /// (notifications queued so far, when a read first saw that count),
    /// oldest first.
    marks: VecDeque<(u64, Instant)>,
}

impl LagProbe {
    fn observe(&mut self, queued: u64, pending: usize, now: Instant) -> Duration {
        if pending == 0 {
            self.marks.clear();
            return Duration::ZERO;
        }
        let oldest = queued.saturating_sub(pending as u64) + 1;
        while self.marks.front().is_some_and(|&(seen, _)| seen < oldest) {
            self.marks.pop_front();
        }
        if self.marks.back().is_none_or(|&(seen, _)| seen < queued) && self.marks.len() < LAG_MARKS
        {
            self.marks.push_back((queued, now));
        }
        self.marks
            .front()
            .map_or(Duration::ZERO, |&(_, at)| now.saturating_duration_since(at))
    }
}

/// What one subscription was handed and how far behind it is: see
/// [`Subscription::stats`](crate::Subscription::stats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriptionStats {
    /// The name given with [`SubscribeOptions::name`](crate::SubscribeOptions::name),
    /// or else its index among the informer's subscriptions (`"0"`, `"1"`,
    /// …); empty for a subscription made on a bare distributor without a
    /// name.
    pub name: String,
    /// Notifications the subscriber took, by kind.
    pub delivered: Delivered,
    /// Notifications queued and not yet taken.
    pub pending: usize,
    /// The keys holding a place in the subscriber's queue: with
    /// [`Lag::Coalesce`](crate::Lag::Coalesce) at most the number of keys
    /// with something pending, otherwise the same as `pending`.
    pub pending_keys: usize,
    /// The most notifications ever pending at once.
    pub pending_high_water: usize,
    /// How long the oldest pending notification has been waiting, at
    /// least; zero when nothing is pending.
    ///
    /// It is measured between reads, at no cost to the hot path: a read
    /// notes how many notifications had been queued so far, and a later
    /// read that finds the oldest pending one among those knows it has
    /// waited since. So the first read of a backlog says zero, and a
    /// stalled subscriber read every 15 s shows 15 s, 30 s, 45 s …
    pub lag: Duration,
    /// Time spent in the handler per notification, when the subscription
    /// is driven by [`Subscription::handle`](crate::Subscription::handle).
    pub handler_duration: DurationHistogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn lag_is_the_wait_since_a_read_first_saw_the_oldest_pending() {
        let mut probe = LagProbe::default();
        let start = Instant::now();
        // 5 queued, none taken: the first read knows nothing older.
        assert_eq!(probe.observe(5, 5, start), Duration::ZERO);
        let later = start + Duration::from_secs(10);
        // Two taken, three more queued: the oldest pending (number 3) was
        // already queued at the first read.
        assert_eq!(probe.observe(8, 6, later), Duration::from_secs(10));
        // All five of the first read taken: the oldest (number 6) was
        // first seen at the second read.
        let last = later + Duration::from_secs(5);
        assert_eq!(probe.observe(8, 3, last), Duration::from_secs(5));
        // Caught up.
        assert_eq!(probe.observe(8, 0, last), Duration::ZERO);
    }
}
