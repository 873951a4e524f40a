//! The [`WorkQueue`] handle and the shared state behind it.

use std::{fmt, future::Future, hash::Hash, sync::Arc, time::Duration};

use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio::{sync::Notify, time::Instant};

use super::{
    config::QueueConfig,
    guard::WorkItem,
    lazy_now::LazyNow,
    priority::Priority,
    rate_limit::{RateLimiter, default_rate_limiter},
    shared::Shared,
    state::State,
};
use crate::{
    key::ObjectKey,
    metrics::{MetricsReader, WorkQueueMetrics},
};

/// A work queue with client-go's rules: one place per waiting item, one
/// holder per item, delayed and rate-limited adds (see the [module
/// docs](super) for the rules W1–W12), and two options of its own: error
/// backoffs that hold (W13) and priorities with ageing (W14, W15).
///
/// Cheap to clone: clones share one queue. Items come out wrapped in a
/// [`WorkItem`] guard; dropping the guard ends the item's processing.
///
/// # Examples
///
/// ```
/// use kube_informer::queue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new();
/// queue.add("a");
/// queue.add("b");
/// queue.add("a"); // already waiting: not queued twice
/// assert_eq!(queue.len(), 2);
///
/// let first = queue.next().await.unwrap();
/// assert_eq!(*first, "a");
/// queue.add("a"); // being processed: comes back once the guard drops
/// drop(first);
///
/// let order: Vec<_> = [queue.next().await.unwrap(), queue.next().await.unwrap()]
///     .iter()
///     .map(|item| **item)
///     .collect();
/// assert_eq!(order, ["b", "a"]);
/// # }
/// ```
pub struct WorkQueue<T = ObjectKey> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Hash + Eq + Clone> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("WorkQueue")
            .field("queued", &state.queued())
            .field("processing", &state.processing())
            .field("delayed", &state.delayed.len())
            .field("shutting_down", &state.shutting_down)
            .field("backoff_holds", &state.backoff_holds)
            .field("priorities", &state.ready.priorities())
            .field("priority_ageing", &state.ready.ageing())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> WorkQueue<T> {
    /// An empty queue with client-go's settings: [`QueueConfig::default()`]
    /// and [`default_rate_limiter`] (W8).
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default(), default_rate_limiter())
    }

    /// An empty queue with `config`'s options (W13–W15) whose
    /// [`add_rate_limited`](Self::add_rate_limited) asks `limiter`. The
    /// settings apply to every clone of the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::{QueueConfig, WorkQueue, item_exponential};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::with_config(
    ///     QueueConfig { backoff_holds: true, ..QueueConfig::default() },
    ///     item_exponential(Duration::from_secs(1), Duration::from_secs(60)),
    /// );
    /// queue.add_rate_limited("a");
    /// let start = tokio::time::Instant::now();
    /// let item = queue.next().await.unwrap();
    /// assert_eq!((*item, start.elapsed()), ("a", Duration::from_secs(1)));
    /// # }
    /// ```
    pub fn with_config<R: RateLimiter<T> + 'static>(config: QueueConfig, limiter: R) -> Self {
        let mut state = State::default();
        state.backoff_holds = config.backoff_holds;
        state.ready.set_priorities(config.priorities);
        state.ready.set_ageing(config.priority_ageing);
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                items: Notify::new(),
                drained: Notify::new(),
                limiter: Box::new(limiter),
            }),
        }
    }

    /// Marks `item` as needing processing (W1–W3): it joins the tail of the
    /// queue unless it is already waiting there; an item being processed is
    /// queued again when its guard drops. Ignored once the queue is shutting
    /// down (W9), and, with [`backoff_holds`](QueueConfig::backoff_holds) on, while
    /// the item waits out an error backoff, which it then joins (W13).
    ///
    /// With [`priorities`](QueueConfig::priorities) on, this is an add at
    /// [`Priority::High`].
    pub fn add(&self, item: T) {
        self.add_with_priority(item, Priority::High);
    }

    /// As [`add`](Self::add), at `priority` (W14): with
    /// [`priorities`](QueueConfig::priorities) on, a high item is handed out
    /// before every low one that has not aged (W15). An item queued low and
    /// added high moves up to the tail of the high items; one queued high
    /// and added low stays where it is; an item being processed and added
    /// again rejoins at the highest level it was added at meanwhile. With
    /// priorities off (the default) the priority is ignored: this is
    /// [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::with_config(QueueConfig { priorities: true, ..QueueConfig::default() }, default_rate_limiter());
    /// queue.add_with_priority("a", Priority::Low);
    /// queue.add_with_priority("b", Priority::Low);
    /// queue.add_with_priority("c", Priority::High);
    /// queue.add_with_priority("b", Priority::High); // moves up, behind c
    /// let mut order = Vec::new();
    /// while let Some(item) = queue.try_next() {
    ///     order.push(*item);
    /// }
    /// assert_eq!(order, ["c", "b", "a"]);
    /// # }
    /// ```
    pub fn add_with_priority(&self, item: T, priority: Priority) {
        let joined = {
            let (mut state, promoted, mut now) = self.shared.lock_promoted();
            promoted + usize::from(state.add(item, priority, &mut now))
        };
        self.shared.wake(joined);
    }

    /// Adds `item` once `delay` has passed on tokio's clock (W5). A zero
    /// delay adds at once. If the item is already waiting for a deadline the
    /// earlier deadline wins. A delayed item is independent of the queue: if
    /// it is added meanwhile it is handed out, and the delayed add still
    /// happens when due (as in client-go). Ignored once shutting down, and,
    /// with [`backoff_holds`](QueueConfig::backoff_holds) on, while the item waits
    /// out an error backoff (W13).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// let start = tokio::time::Instant::now();
    /// queue.add_after("a", Duration::from_secs(5));
    /// queue.add_after("a", Duration::from_secs(2)); // earlier deadline wins
    /// assert_eq!(queue.len(), 0);
    /// let item = queue.next().await.unwrap();
    /// assert_eq!(*item, "a");
    /// assert_eq!(start.elapsed(), Duration::from_secs(2));
    /// # }
    /// ```
    pub fn add_after(&self, item: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(item);
        }
        let now = Instant::now();
        let (joined, earliest) = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            let joined = state.promote(&mut LazyNow::at(now));
            (joined, state.delayed.insert(item, now + delay))
        };
        self.shared.wake(joined);
        if earliest {
            // Sleeping consumers re-arm their timers for the new deadline.
            self.shared.items.notify_waiters();
        }
    }

    /// Adds `item` after the delay the rate limiter gives it (W7): by
    /// default 5 ms doubling per failure up to 1,000 s, and at most 10 per
    /// second overall after a burst of 100.
    ///
    /// With [`backoff_holds`](QueueConfig::backoff_holds) on (W13), the item then
    /// waits out this backoff whatever comes: adds and delayed adds of it
    /// join the deadline, and a rate-limited add while it waits asks the
    /// limiter nothing (the failure was counted for this deadline).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a"); // 5 ms
    /// queue.add_rate_limited("a"); // 10 ms, the earlier deadline stays
    /// assert_eq!(queue.requeues(&"a"), 2);
    /// let item = queue.next().await.unwrap();
    /// queue.forget(&item); // it worked: start again at 5 ms next time
    /// assert_eq!(queue.requeues(&"a"), 0);
    /// # }
    /// ```
    pub fn add_rate_limited(&self, item: T) {
        if !self.shared.state.lock().backoff_holds {
            let delay = self.shared.limiter.when(&item);
            self.shared.state.lock().metrics.retried();
            return self.add_after(item, delay);
        }
        if !self.shared.state.lock().ask_backoff(&item) {
            return;
        }
        // The limiter is user code: asked without the lock.
        let delay = self.shared.limiter.when(&item);
        let now = Instant::now();
        let (joined, earliest) = {
            let mut state = self.shared.state.lock();
            state.metrics.retried();
            let joined = state.promote(&mut LazyNow::at(now));
            if delay.is_zero() {
                // Nothing to wait out: an add like any other.
                state.unask(&item);
                let added = state.add(item, Priority::High, &mut LazyNow::at(now));
                (joined + usize::from(added), false)
            } else {
                (joined, state.hold(item, now + delay))
            }
        };
        self.shared.wake(joined);
        if earliest {
            self.shared.items.notify_waiters();
        }
    }

    /// How many items wait at `priority` (W11 by level): with
    /// [`priorities`](QueueConfig::priorities) off, all of them wait at
    /// [`Priority::High`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::queue::{Priority, QueueConfig, WorkQueue, default_rate_limiter};
    ///
    /// let queue = WorkQueue::with_config(QueueConfig { priorities: true, ..QueueConfig::default() }, default_rate_limiter());
    /// queue.add_with_priority("a", Priority::Low);
    /// queue.add("b");
    /// assert_eq!((queue.len_at(Priority::High), queue.len_at(Priority::Low)), (1, 1));
    /// ```
    // Hidden (outside semver): a look inside the queue for the tests.
    #[doc(hidden)]
    pub fn len_at(&self, priority: Priority) -> usize {
        let (len, joined) = {
            let (state, joined, _) = self.shared.lock_promoted();
            (state.ready.len_at(priority), joined)
        };
        self.shared.wake(joined);
        len
    }

    /// Makes the rate limiter forget `item`'s failures (W7). Does not remove
    /// the item from the queue.
    pub fn forget(&self, item: &T) {
        self.shared.limiter.forget(item);
    }

    /// How many failures of `item` the rate limiter remembers (W7).
    pub fn requeues(&self, item: &T) -> usize {
        self.shared.limiter.requeues(item)
    }

    /// Waits for an item and hands it out, or returns `None` once the queue
    /// is shutting down and nothing is queued (W9). The item is processing
    /// until the returned guard drops.
    ///
    /// Cancel safe: an item leaves the queue only when this future returns
    /// it.
    pub async fn next(&self) -> Option<WorkItem<T>> {
        let item = Shared::next(&self.shared).await?;
        Some(WorkItem::new(Arc::clone(&self.shared), item))
    }

    /// Hands out a queued item without waiting.
    pub fn try_next(&self) -> Option<WorkItem<T>> {
        let (item, joined) = {
            let (mut state, joined, mut now) = self.shared.lock_promoted();
            (state.pop(&mut now), joined)
        };
        self.shared.wake(joined);
        item.map(|item| WorkItem::new(Arc::clone(&self.shared), item))
    }

    /// How many items wait to be handed out (W11): neither items being
    /// processed nor delayed items count, until they are queued.
    pub fn len(&self) -> usize {
        let (len, joined) = {
            let (state, joined, _) = self.shared.lock_promoted();
            (state.queued(), joined)
        };
        self.shared.wake(joined);
        len
    }

    /// Whether no item waits to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses new items, drops delayed ones, and lets consumers take what is
    /// queued; then [`next`](Self::next) returns `None` (W9). Stops a
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) from waiting.
    pub fn shutdown(&self) {
        let joined = {
            // Items already due join before the doors close, as they would
            // have with a timer task.
            let (mut state, joined, _) = self.shared.lock_promoted();
            state.shut_down();
            state.draining = false;
            joined
        };
        self.shared.wake(joined);
        self.shared.items.notify_waiters();
        self.shared.drained.notify_waiters();
    }

    /// As [`shutdown`](Self::shutdown), then waits until every handed-out
    /// guard has dropped (W10).
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// let item = queue.next().await.unwrap();
    /// tokio::spawn(async move { drop(item) });
    /// queue.shutdown_with_drain().await;
    /// assert!(queue.is_shutting_down());
    /// # }
    /// ```
    pub async fn shutdown_with_drain(&self) {
        let joined = {
            let (mut state, joined, _) = self.shared.lock_promoted();
            state.shut_down();
            state.draining = true;
            joined
        };
        self.shared.wake(joined);
        self.shared.items.notify_waiters();
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            {
                let state = self.shared.state.lock();
                if state.processing() == 0 || !state.draining {
                    return;
                }
            }
            drained.await;
        }
    }

    /// Whether [`shutdown`](Self::shutdown) or
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// How many items are being processed (guards alive).
    // Hidden (outside semver): a look inside the queue for the tests.
    #[doc(hidden)]
    pub fn processing(&self) -> usize {
        self.shared.state.lock().processing()
    }

    /// The queue's metrics with client-go's meanings: depth, adds, time
    /// waiting and time held, unfinished work, longest running processor,
    /// retries. See [`WorkQueueMetrics`](crate::metrics::WorkQueueMetrics).
    ///
    /// To read them later or elsewhere, convert the queue into a
    /// [`MetricsReader`] (`MetricsReader::from(&queue)`, which keeps a
    /// handle on the queue), or hand `&queue` to
    /// `metrics::register` (feature `prometheus`).
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::<&str>::new();
    /// queue.add("a");
    /// queue.add("a"); // already waiting: not an add
    /// queue.add_rate_limited("b");
    /// let item = queue.next().await.unwrap();
    /// let metrics = queue.metrics();
    /// assert_eq!((metrics.depth, metrics.adds, metrics.retries), (0, 1, 1));
    /// drop(item);
    /// assert_eq!(queue.metrics().work_duration.count, 1);
    /// # }
    /// ```
    pub fn metrics(&self) -> WorkQueueMetrics {
        let (metrics, joined) = {
            let (state, joined, mut now) = self.shared.lock_promoted();
            (
                state
                    .metrics
                    .snapshot(state.queued(), state.running(now.get())),
                joined,
            )
        };
        self.shared.wake(joined);
        metrics
    }
}

/// A reader of the queue's [`metrics`](WorkQueue::metrics) from anywhere; it
/// keeps a handle on the queue.
///
/// # Examples
///
/// ```
/// use kube_informer::{WorkQueue, metrics::MetricsReader};
///
/// let queue = WorkQueue::<&str>::new();
/// let reader = MetricsReader::from(&queue);
/// queue.add("a");
/// assert_eq!(reader.read().unwrap().depth, 1);
/// ```
impl<T: Hash + Eq + Clone + Send + Sync + 'static> From<&WorkQueue<T>>
    for MetricsReader<WorkQueueMetrics>
{
    fn from(queue: &WorkQueue<T>) -> Self {
        let queue = queue.clone();
        MetricsReader::new(move || Some(queue.metrics()))
    }
}

// Feeding the queue from any stream: the step from notifications to keys.
impl<T: Hash + Eq + Clone + Send + 'static> WorkQueue<T> {
    /// Adds every item of `items` to the queue, until the stream ends or the
    /// queue shuts down. The returned future owns a handle on the queue, so it
    /// can be spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::stream;
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.feed(stream::iter(["a", "b", "a"])).await;
    /// assert_eq!(queue.len(), 2);
    /// # }
    /// ```
    pub fn feed<S>(&self, items: S) -> impl Future<Output = ()> + Send + 'static
    where
        S: Stream<Item = T> + Send + 'static,
    {
        let queue = self.clone();
        async move {
            let mut items = std::pin::pin!(items);
            while !queue.is_shutting_down() {
                match items.next().await {
                    Some(item) => queue.add(item),
                    None => break,
                }
            }
        }
    }

    /// As [`feed`](Self::feed) for a stream of items with their priority
    /// (W14): the controller's feed of every trigger.
    #[cfg(feature = "controller")]
    pub(crate) fn feed_with_priority<S>(
        &self,
        items: S,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: Stream<Item = (T, Priority)> + Send + 'static,
    {
        let queue = self.clone();
        async move {
            let mut items = std::pin::pin!(items);
            while !queue.is_shutting_down() {
                match items.next().await {
                    Some((item, priority)) => queue.add_with_priority(item, priority),
                    None => break,
                }
            }
        }
    }

    /// As [`feed`](Self::feed) for a stream of results, such as
    /// [`keys()`](crate::ext::NotificationStreamExt::keys) of a subscription:
    /// `Ok` items are added, each `Err` goes to `on_error` and the feed goes
    /// on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, Client};
    /// use kube_informer::{prelude::*, queue::WorkQueue};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let informer = Informer::builder(Api::<ConfigMap>::all(Client::try_default().await?)).build();
    /// let queue = WorkQueue::new();
    /// tokio::spawn(queue.feed_results(
    ///     informer.subscribe(SubscribeOptions::default())?.keys(),
    ///     |error| tracing::warn!(%error, "notification without a key"),
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn feed_results<S, E, F>(
        &self,
        items: S,
        mut on_error: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: Stream<Item = Result<T, E>> + Send + 'static,
        F: FnMut(E) + Send + 'static,
    {
        let queue = self.clone();
        async move {
            let mut items = std::pin::pin!(items);
            while !queue.is_shutting_down() {
                match items.next().await {
                    Some(Ok(item)) => queue.add(item),
                    Some(Err(error)) => on_error(error),
                    None => break,
                }
            }
        }
    }
}
