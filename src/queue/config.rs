//! [`QueueConfig`]: the settings of a work queue, as one plain value.

use std::time::Duration;

use super::priority::DEFAULT_PRIORITY_AGEING;

/// How a [`WorkQueue`](super::WorkQueue) orders and holds its items: the
/// two options it has beyond client-go's queue, each off by default, so
/// `QueueConfig::default()` is client-go's queue.
///
/// A plain value (no live part): a [`WorkQueue`](super::WorkQueue) takes it
/// with [`with_config`](super::WorkQueue::with_config), a controller in its
/// [`Config`](crate::controller::Config). The rate limiter is not a setting
/// but a live object with its own memory of failures: it is passed beside
/// the config.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
///
/// let config = QueueConfig {
///     priorities: true,
///     priority_ageing: Duration::from_secs(30),
///     ..QueueConfig::default()
/// };
/// let queue = WorkQueue::with_config(config, default_rate_limiter());
/// queue.add_with_priority("listed", Priority::Low);
/// queue.add("changed");
/// assert_eq!(*queue.try_next().unwrap(), "changed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Whether an error backoff holds (W13); off by default.
    ///
    /// Off, the queue keeps client-go's rule (W5): a deadline from
    /// [`add_rate_limited`](super::WorkQueue::add_rate_limited) is
    /// independent of the queue, so an add that comes meanwhile (a resync,
    /// an unrelated watch event) hands the item out at once, and if that
    /// reconcile fails too the limiter counts one more failure: the
    /// reconcile runs before its backoff and the backoff grows faster than
    /// one step per deadline.
    ///
    /// On, an item waiting out a backoff is handed out only when it comes
    /// due: [`add`](super::WorkQueue::add) and
    /// [`add_after`](super::WorkQueue::add_after) of it join that deadline
    /// (they do nothing), a rate-limited add of it asks the limiter
    /// nothing, and the backoff replaces any deadline the item had. An item
    /// queued or added while processing when its rate-limited add comes
    /// leaves the queue and waits too. [`forget`](super::WorkQueue::forget)
    /// does not end a backoff under way. Delays that are not backoffs
    /// ([`add_after`](super::WorkQueue::add_after) of an item not held)
    /// keep W5.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::{QueueConfig, WorkQueue, default_rate_limiter};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let config = QueueConfig { backoff_holds: true, ..QueueConfig::default() };
    /// let queue = WorkQueue::with_config(config, default_rate_limiter());
    /// let start = tokio::time::Instant::now();
    /// queue.add_rate_limited("a"); // failed: back off 5 ms
    /// queue.add("a"); // a resync: joins the backoff
    /// queue.add_rate_limited("a"); // counted once per deadline
    /// assert_eq!((queue.len(), queue.requeues(&"a")), (0, 1));
    /// let item = queue.next().await.unwrap();
    /// assert_eq!(start.elapsed(), Duration::from_millis(5));
    /// # drop(item);
    /// # }
    /// ```
    pub backoff_holds: bool,

    /// Whether [`Priority::Low`](super::Priority::Low) items wait behind
    /// [`Priority::High`](super::Priority::High) ones (W14), until they age
    /// (W15); off by default.
    ///
    /// Off, the queue is client-go's: one first-in first-out queue, so a
    /// change made while an initial list of 50,000 keys drains waits for
    /// all of them. On, items added with
    /// [`add_with_priority`](super::WorkQueue::add_with_priority) at
    /// `Priority::Low` (the keys of an initial list or a resync) are handed
    /// out only when no high item waits, except that once the oldest of
    /// them has waited [`priority_ageing`](Self::priority_ageing), every
    /// hand-out that follows a high item's goes to the oldest low item.
    /// What a user can rely on: an item queued low with `p` low items
    /// ahead of it is handed out at the latest by the `2 × (p + 1)`-th
    /// hand-out after it has waited the ageing bound, however many high
    /// items come; and high items get at least every second hand-out.
    /// [`add`](super::WorkQueue::add), delayed and rate-limited adds are
    /// high.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let config = QueueConfig { priorities: true, priority_ageing: Duration::from_secs(1), ..QueueConfig::default() };
    /// let queue = WorkQueue::with_config(config, default_rate_limiter());
    /// queue.add_with_priority("listed", Priority::Low);
    /// queue.add("changed-1");
    /// queue.add("changed-2");
    /// assert_eq!(*queue.try_next().unwrap(), "changed-1");
    /// tokio::time::advance(Duration::from_secs(1)).await;
    /// // "listed" has aged: it goes next, then the high items again.
    /// assert_eq!(*queue.try_next().unwrap(), "listed");
    /// assert_eq!(*queue.try_next().unwrap(), "changed-2");
    /// # }
    /// ```
    pub priorities: bool,

    /// How long an item queued at [`Priority::Low`](super::Priority::Low)
    /// waits before it ages (W15): from then on, the hand-out after each
    /// high item's goes to the oldest low item.
    /// [`DEFAULT_PRIORITY_AGEING`] (10 s) by default. Zero shares the
    /// hand-outs evenly between the levels whenever both have items;
    /// [`Duration::MAX`] never ages, so low items wait for as long as high
    /// ones come. Applies only with [`priorities`](Self::priorities) on.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
    ///
    /// // Every low item has aged at once: the levels take turns.
    /// let config = QueueConfig { priorities: true, priority_ageing: Duration::ZERO, ..QueueConfig::default() };
    /// let queue = WorkQueue::with_config(config, default_rate_limiter());
    /// for item in ["h1", "h2"] {
    ///     queue.add(item);
    /// }
    /// for item in ["l1", "l2"] {
    ///     queue.add_with_priority(item, Priority::Low);
    /// }
    /// let order: Vec<_> = std::iter::from_fn(|| queue.try_next().map(|item| *item)).collect();
    /// assert_eq!(order, ["l1", "h1", "l2", "h2"]);
    /// ```
    pub priority_ageing: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            backoff_holds: false,
            priorities: false,
            priority_ageing: DEFAULT_PRIORITY_AGEING,
        }
    }
}
