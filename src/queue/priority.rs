//! [`Priority`]: the level an add asks for (W14), and the ageing bound that
//! keeps low items from waiting forever (W15).

use std::time::Duration;

use crate::notification::Notification;

/// How long an item queued at [`Priority::Low`] waits before it ages
/// (W15), unless [`QueueConfig::priority_ageing`](super::QueueConfig::priority_ageing)
/// sets another bound: ten seconds.
///
/// Long enough that a live change made while an initial list of tens of
/// thousands of keys drains goes first; short enough that a key of that
/// list, or of a periodic resync, is not held back by a steady stream of
/// changes for more than a few seconds beyond its share of the hand-outs.
pub const DEFAULT_PRIORITY_AGEING: Duration = Duration::from_secs(10);

/// The level an item is queued at when the queue keeps
/// [`priorities`](super::QueueConfig::priorities) (W14). Without them every
/// level is the same: one first-in first-out queue, as client-go's.
///
/// # Examples
///
/// ```
/// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::with_config(QueueConfig { priorities: true, ..QueueConfig::default() }, default_rate_limiter());
/// queue.add_with_priority("listed", Priority::Low);
/// queue.add("changed"); // `add` is `Priority::High`
/// assert_eq!(*queue.next().await.unwrap(), "changed");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Priority {
    /// A live change: handed out before low items (W14). What
    /// [`add`](super::WorkQueue::add) and delayed adds use.
    #[default]
    High,
    /// Bulk work with no one waiting on it: the items of an initial list,
    /// a resync, a periodic reconcile of everything. Handed out when no
    /// high item waits, or once aged (W15).
    Low,
}

impl Priority {
    /// The level for the key of `notification`: [`Low`](Self::Low) for an
    /// addition that is part of an initial list (or of a late subscriber's
    /// replay) and for a resync, [`High`](Self::High) for every other
    /// change.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_informer::{Notification, queue::Priority};
    ///
    /// let listed = Notification::Added { object: Arc::new(1), in_initial_list: true };
    /// let created = Notification::Added { object: Arc::new(1), in_initial_list: false };
    /// let resync = Notification::Updated { old: Arc::new(1), new: Arc::new(1), resync: true };
    /// assert_eq!(Priority::of(&listed), Priority::Low);
    /// assert_eq!(Priority::of(&resync), Priority::Low);
    /// assert_eq!(Priority::of(&created), Priority::High);
    /// ```
    pub fn of<K>(notification: &Notification<K>) -> Self {
        match notification {
            Notification::Added {
                in_initial_list: true,
                ..
            }
            | Notification::Updated { resync: true, .. } => Self::Low,
            Notification::Added { .. }
            | Notification::Updated { .. }
            | Notification::Deleted { .. } => Self::High,
        }
    }
}
