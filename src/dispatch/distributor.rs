//! The writer's side of dispatch: one queue per subscriber, resync rounds,
//! closing.
//!
//! Wakes can be batched ([`Distributor::distribute_batched`] then
//! [`Distributor::end_batch`]): a subscriber waiting for its next
//! notification is then woken once per batch rather than once per
//! notification. Waking a task parked on another worker thread costs a
//! futex call and a pass through the scheduler; during a burst, a subscriber
//! that keeps up would otherwise pay that for every event.

use std::{fmt, sync::Arc, task::Waker, time::Duration};

use tokio::{
    sync::{futures::Notified, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    EndReason, SubscribeOptions, Subscription,
    channel::{Channel, Offer, Phase},
    request::SubscribeRequest,
    resync::{MINIMUM_RESYNC_PERIOD, ResyncSchedule, effective_period},
};
use crate::{key::ObjectKey, notification::Notification};

/// Hands each notification to every subscriber's own queue.
///
/// It belongs to the informer's single writer task, which, for each batch of
/// deltas popped from the FIFO, updates the store, builds the
/// [`Notification`] and awaits [`distribute`](Distributor::distribute); and
/// between two batches registers subscribe requests (with the store snapshot
/// as replay, L1) and runs resync rounds
/// (`if distributor.should_resync(now) { fifo.resync() }`). You can drive one
/// from your own pipeline the same way.
///
/// Dropping a distributor closes it.
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use futures::StreamExt;
/// use kube_informer::{Notification, ObjectKey};
/// use kube_informer::dispatch::SubscribeOptions;
/// use kube_informer::unstable::dispatch::Distributor;
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (_synced, upstream) = watch::channel(false);
/// let mut distributor = Distributor::<String>::new(Duration::from_secs(10), upstream);
/// let mut a = distributor.subscribe(SubscribeOptions::default(), []);
/// let mut b = distributor.subscribe(SubscribeOptions::default(), []);
/// let key: ObjectKey = "default/x".parse()?;
/// distributor
///     .distribute(&key, Notification::Added { object: Arc::new("x".into()), in_initial_list: true })
///     .await;
/// assert_eq!(distributor.len(), 2);
/// assert!(a.next().await.is_some());
/// assert!(b.next().await.is_some());
/// # Ok(()) }
/// ```
pub struct Distributor<K> {
    listeners: Vec<Listener<K>>,
    resync_check_period: Duration,
    started: bool,
    closed: bool,
    upstream_synced: watch::Receiver<bool>,
    /// Wakers of receivers handed something in the current batch, woken by
    /// [`end_batch`](Distributor::end_batch).
    held: Vec<Waker>,
    /// Cancelled to stop: from then on nothing waits for room (L12).
    stop: Option<CancellationToken>,
    /// A stop was seen while a `Bounded` queue was full.
    stopping: bool,
}

struct Listener<K> {
    channel: Arc<Channel<K>>,
    resync: ResyncSchedule,
}

impl<K> Distributor<K> {
    /// A distributor for an informer whose resync check period is
    /// `resync_check_period` (zero: the informer never resyncs) and whose
    /// synced flag is `upstream_synced` (it turns `true` once the initial
    /// list was distributed).
    pub fn new(resync_check_period: Duration, upstream_synced: watch::Receiver<bool>) -> Self {
        Self {
            listeners: Vec::new(),
            resync_check_period,
            started: false,
            closed: false,
            upstream_synced,
            held: Vec::new(),
            stop: None,
            stopping: false,
        }
    }

    /// Registers a new subscriber at once; its queue starts with `replay` as
    /// `Added { in_initial_list: true }` (L1). After [`close`](Self::close)
    /// the subscription ends at once, its end reason
    /// [`EndReason::Stopped`] (L6).
    pub fn subscribe(
        &mut self,
        options: SubscribeOptions,
        replay: impl IntoIterator<Item = (ObjectKey, Arc<K>)>,
    ) -> Subscription<K> {
        let (subscription, request) = SubscribeRequest::new(options);
        self.register(request, replay);
        subscription
    }

    /// Registers a subscription asked for elsewhere with
    /// [`SubscribeRequest::new`]. Call it between two batches with the store
    /// snapshot as `replay`: the replay is queued before any later
    /// notification, with nothing interleaved (L1).
    ///
    /// Resync periods follow L3: under one second is raised to one second;
    /// before [`mark_started`](Self::mark_started) a period below the check
    /// period lowers the check period (and every subscriber's period is
    /// recomputed), after it such a period is raised to the check period.
    pub fn register(
        &mut self,
        request: SubscribeRequest<K>,
        replay: impl IntoIterator<Item = (ObjectKey, Arc<K>)>,
    ) {
        if self.closed {
            request.refuse();
            return;
        }
        let mut requested = request.options.resync;
        if !requested.is_zero() {
            requested = requested.max(MINIMUM_RESYNC_PERIOD);
            if requested < self.resync_check_period {
                if self.started {
                    requested = self.resync_check_period;
                } else {
                    self.set_resync_check_period(requested);
                }
            }
        }
        let resync = ResyncSchedule::new(requested, self.resync_check_period, Instant::now());
        let channel = Arc::clone(&request.channel);
        channel.open(replay, self.upstream_synced.clone());
        self.listeners.push(Listener { channel, resync });
    }

    fn set_resync_check_period(&mut self, check: Duration) {
        self.resync_check_period = check;
        for listener in &mut self.listeners {
            let period = effective_period(listener.resync.requested, check);
            listener.resync.deadline.set_period(period);
        }
    }

    /// Hands `notification` (about `key`) to every subscriber, or, for a
    /// resync update ([`Notification::is_resync`]), only to those in the due
    /// set of the current round (I3), and wakes the subscribers waiting for
    /// it.
    ///
    /// It never waits for `Unbounded` or `Coalesce` subscribers; it waits for
    /// room in a full `Bounded` subscriber's queue (L4), which holds up every
    /// other subscriber meanwhile, until the stop given to
    /// [`stop_on`](Self::stop_on) comes (L12). Not cancel-safe: a cancelled
    /// call may have delivered to some subscribers only.
    pub async fn distribute(&mut self, key: &ObjectKey, notification: Notification<K>) {
        self.distribute_batched(key, notification).await;
        self.end_batch();
    }

    /// Hands `notification` to the subscribers as
    /// [`distribute`](Self::distribute) does, but a subscriber waiting for
    /// its next notification is only woken by the next
    /// [`end_batch`](Self::end_batch) (or [`close`](Self::close)): a batch of
    /// notifications wakes each subscriber once, however many it was
    /// handed. The informer's writer batches the notifications of one round
    /// of FIFO pops this way.
    ///
    /// Nothing waits on a held wake: before waiting for room in a full
    /// `Bounded` queue the held wakes are delivered, so that subscriber can
    /// drain. Call [`end_batch`](Self::end_batch) before waiting for
    /// anything else, or subscribers on other tasks stall until you do.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use futures::StreamExt;
    /// use kube_informer::{Notification, ObjectKey};
    /// use kube_informer::dispatch::SubscribeOptions;
    /// use kube_informer::unstable::dispatch::Distributor;
    /// use tokio::sync::watch;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (_synced, upstream) = watch::channel(true);
    /// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
    /// let sub = distributor.subscribe(SubscribeOptions::default(), []);
    /// let consumer = tokio::spawn(sub.take(3).count());
    /// for name in ["a", "b", "c"] {
    ///     let key: ObjectKey = name.parse()?;
    ///     let object = Arc::new(name.to_string());
    ///     distributor
    ///         .distribute_batched(&key, Notification::Added { object, in_initial_list: false })
    ///         .await;
    /// }
    /// distributor.end_batch(); // the consumer is woken once for all three
    /// assert_eq!(consumer.await?, 3);
    /// # Ok(()) }
    /// ```
    pub async fn distribute_batched(&mut self, key: &ObjectKey, notification: Notification<K>) {
        let resync = notification.is_resync();
        let mut gone = false;
        for listener in &self.listeners {
            if resync && !listener.resync.due {
                continue;
            }
            let mut n = notification.clone();
            loop {
                // Ask to be woken before offering, so room made in between
                // is not missed.
                let space = listener.channel.space.notified();
                match listener.channel.offer(key, n, self.stopping) {
                    Offer::Queued(waker) => {
                        self.held.extend(waker);
                        break;
                    }
                    Offer::Gone => {
                        gone = true;
                        break;
                    }
                    Offer::Full(back) => {
                        n = back;
                        // The full receiver may be one whose wake is held.
                        wake_all(&mut self.held);
                        self.stopping = !room_or_stop(space, self.stop.as_ref()).await;
                    }
                }
            }
        }
        if gone {
            self.prune();
        }
    }

    /// Lets a stop end every wait for room (L12): once `stop` is cancelled,
    /// a full `Bounded` queue takes what it is handed past its bound rather
    /// than hold the caller up, so the notification being distributed
    /// reaches every subscriber at once and
    /// [`is_stopping`](Self::is_stopping) tells the caller to end its batch
    /// there. Without it, only room ends a wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use futures::StreamExt;
    /// use kube_informer::{Notification, ObjectKey};
    /// use kube_informer::dispatch::{Lag, SubscribeOptions};
    /// use kube_informer::unstable::dispatch::Distributor;
    /// use tokio::sync::watch;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (_synced, upstream) = watch::channel(true);
    /// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
    /// let stop = CancellationToken::new();
    /// distributor.stop_on(stop.clone());
    /// let full = distributor.subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)), []);
    /// let key: ObjectKey = "default/x".parse()?;
    /// let added = |v: &str| Notification::Added { object: Arc::new(v.to_string()), in_initial_list: false };
    /// distributor.distribute(&key, added("1")).await; // fills the queue
    /// stop.cancel();
    /// distributor.distribute(&key, added("2")).await; // past the bound: no wait
    /// assert!(distributor.is_stopping());
    /// distributor.close();
    /// assert_eq!(full.count().await, 2);
    /// # Ok(()) }
    /// ```
    pub fn stop_on(&mut self, stop: CancellationToken) {
        self.stop = Some(stop);
    }

    /// Whether the stop given to [`stop_on`](Self::stop_on) ended a wait
    /// for room: from then on full `Bounded` queues take notifications past
    /// their bound, and the caller should stop handing them out once the
    /// one it is handing out has reached every subscriber (L12).
    pub fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// Ends a batch begun by [`distribute_batched`](Self::distribute_batched):
    /// wakes, once each, the subscribers that were waiting and have been
    /// handed something since the last batch ended. Cheap when there is
    /// nothing to wake.
    pub fn end_batch(&mut self) {
        wake_all(&mut self.held);
    }

    /// Starts a resync round at `now`: computes which subscribers are due
    /// (each due one's next resync moves to `now + period`) and says whether
    /// any is, i.e. whether the FIFO should resync now. The due set holds
    /// until the next call, so resync-type updates between two rounds (an
    /// unchanged object in a relist) reach the subscribers due in the last
    /// round. A subscriber registered since the last round counts as due
    /// until the next one, whatever its period (even zero): that is what
    /// client-go does, and the conformance scripts check it (I3).
    pub fn should_resync(&mut self, now: Instant) -> bool {
        self.prune();
        let mut any = false;
        for listener in &mut self.listeners {
            any |= listener.resync.check(now);
        }
        any
    }

    /// The resync check period in force (L3): how often the informer should
    /// call [`should_resync`](Self::should_resync). Zero: never.
    pub fn resync_check_period(&self) -> Duration {
        self.resync_check_period
    }

    /// Records that the informer started; from now on a short resync period
    /// no longer lowers the check period (L3).
    pub fn mark_started(&mut self) {
        self.started = true;
    }

    /// Closes: every subscription ends after yielding what is already queued
    /// for it (its [`end_reason`](Subscription::end_reason) is
    /// [`EndReason::Stopped`]), and later registrations are refused, ending
    /// at once with that reason.
    pub fn close(&mut self) {
        self.close_with(EndReason::Stopped);
    }

    /// Closes as [`close`](Self::close) does, telling every subscription
    /// `reason`. Only the first close counts.
    pub fn close_with(&mut self, reason: EndReason) {
        self.closed = true;
        self.end_batch();
        for listener in self.listeners.drain(..) {
            listener
                .channel
                .end(&Phase::Open, Phase::Closed(reason.clone()));
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Live subscribers (dropped subscriptions are pruned first).
    pub fn len(&mut self) -> usize {
        self.prune();
        self.listeners.len()
    }

    /// Whether no subscriber is live.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    fn prune(&mut self) {
        self.listeners.retain(|l| !l.channel.is_receiver_dropped());
    }
}

/// Waits for `space` (room in a full queue); `false` if `stop` came first,
/// or had come already.
async fn room_or_stop(space: Notified<'_>, stop: Option<&CancellationToken>) -> bool {
    let Some(stop) = stop else {
        space.await;
        return true;
    };
    tokio::select! {
        biased;
        () = stop.cancelled() => false,
        () = space => true,
    }
}

/// Wakes and forgets every waker in `held`.
fn wake_all(held: &mut Vec<Waker>) {
    // `drain` keeps the vector's capacity for the next batch.
    for waker in held.drain(..) {
        waker.wake();
    }
}

impl<K> Drop for Distributor<K> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<K> fmt::Debug for Distributor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Distributor")
            .field("subscribers", &self.listeners.len())
            .field("resync_check_period", &self.resync_check_period)
            .field("started", &self.started)
            .field("closed", &self.closed)
            .field("held_wakes", &self.held.len())
            .field("stopping", &self.stopping)
            .finish()
    }
}
