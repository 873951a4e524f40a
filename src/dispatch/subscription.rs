//! [`Subscription`]: one subscriber's stream of notifications.

use std::{
    any::Any,
    fmt,
    future::Future,
    pin::Pin,
    sync::{Arc, Weak},
    task::{Context, Poll},
};

use futures::{Stream, StreamExt, stream::FusedStream};

use super::{
    EndReason, Lag, SyncStatus,
    channel::{Channel, Phase},
    handler::ResourceEventHandler,
    initial_list::is_initial_added,
    life::{Ended, Life},
    sync_status::{Upstream, UpstreamSync, wait_until_synced},
};
use crate::{
    metrics::{StatsProbe, SubscriptionStats},
    notification::Notification,
    sync_error::SyncError,
};

/// One subscriber's stream of [`Notification`]s.
///
/// It first yields the initial list (or, when subscribing late, the whole
/// cache as `Added { in_initial_list: true }`, L1), then live notifications,
/// and ends once the informer stopped and everything queued for it was
/// yielded; [`end_reason`](Subscription::end_reason) then says why.
/// Dropping it unsubscribes (L5). A subscription from an informer holds a
/// share of that informer's lifetime: the informer keeps running while it is
/// held (see [Lifetime](crate::Informer#lifetime)).
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, Notification, dispatch::{EndReason, SubscribeOptions}, source::Event};
///
/// # fn cm(name: &str) -> ConfigMap {
/// #     let mut c = ConfigMap::default();
/// #     c.metadata.name = Some(name.into());
/// #     c.metadata.namespace = Some("default".into());
/// #     c.metadata.resource_version = Some("1".into());
/// #     c
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let events = futures::stream::iter([
///     Ok::<_, std::io::Error>(Event::ListStart),
///     Ok(Event::Listed(cm("a"))),
///     Ok(Event::ListDone { resource_version: "1".into() }),
///     Ok(Event::Deleted(cm("a"))),
/// ]);
/// let informer = Informer::builder_from_stream(events).build();
/// let mut sub = informer.subscribe(SubscribeOptions::default())?;
/// informer.run().await?; // the source ends, so the informer does too
///
/// let status = sub.sync_status();
/// assert!(!status.has_synced()); // the listed item was not yielded yet
/// assert!(matches!(sub.next().await, Some(Notification::Added { in_initial_list: true, .. })));
/// assert!(status.has_synced());
/// assert!(matches!(sub.next().await, Some(Notification::Deleted { .. })));
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.end_reason(), Some(EndReason::Finished));
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Subscription<K> {
    channel: Arc<Channel<K>>,
    terminated: bool,
    /// A share of the lifetime of the informer feeding this subscription.
    pub(super) keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    /// Waits for the feeding informer's end while the queue is empty.
    end_wait: Option<Pin<Box<Ended>>>,
    /// The end was seen (the channel is closed); not polled again.
    end_seen: bool,
    /// The feeding informer's wait for its first sync.
    upstream: Upstream,
}

impl<K> Subscription<K> {
    pub(super) fn from_channel(channel: Arc<Channel<K>>) -> Self {
        Self {
            channel,
            terminated: false,
            keep_alive: None,
            end_wait: None,
            end_seen: false,
            upstream: None,
        }
    }

    pub(super) fn channel(&self) -> &Arc<Channel<K>> {
        &self.channel
    }

    /// Waits until [`SyncStatus::has_synced`]. It answers
    /// as its informer's
    /// [`wait_until_synced`](crate::Informer::wait_until_synced) does while
    /// the informer has not synced (a refusal, I7, or
    /// [`SyncError::Stopped`], I9), then waits for this subscriber's
    /// initial list; [`SyncError::Stopped`] also if the subscription ended
    /// (refused, or the informer stopped) before it could sync. It has no
    /// deadline of its own (I12): wrap it in [`tokio::time::timeout`] for
    /// one. Cancel-safe.
    ///
    /// Items count as delivered when this stream yields them, so awaiting
    /// this on the task that should be polling the stream waits forever
    /// once there is an initial list: poll the stream elsewhere, or use a
    /// [`SyncStatus`] from [`sync_status`](Subscription::sync_status).
    // Hidden (outside semver): awaited on the task that polls the stream it
    // never ends; `sync_status()` is the way. The tests use it.
    #[doc(hidden)]
    pub async fn wait_until_synced(&self) -> Result<(), SyncError> {
        wait_until_synced(&self.channel, &self.upstream).await
    }

    /// A handle on this subscription's sync state that other tasks can keep
    /// and await while this stream is consumed.
    pub fn sync_status(&self) -> SyncStatus<K> {
        SyncStatus::new(Arc::clone(&self.channel), self.upstream.clone())
    }

    /// Why this subscription ends: `None` while it is open, the reason once
    /// its informer stopped or refused it. The stream still yields what was
    /// queued before it ends.
    ///
    /// See [`EndReason`] for an example.
    pub fn end_reason(&self) -> Option<EndReason> {
        self.channel.end_reason()
    }

    /// The notifications queued and not yet yielded: how far this
    /// subscriber lags. One lock and a length, cheap enough to read after
    /// every notification; [`stats`](Subscription::stats) has it too, with
    /// the rest of the subscriber's figures.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, SubscribeOptions, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::informer::Error> {
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
    ///     ..Default::default()
    /// };
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let mut slow = informer.subscribe(SubscribeOptions::default())?;
    /// informer.run().await?;
    /// assert_eq!(slow.pending(), 1);
    /// slow.next().await;
    /// assert_eq!(slow.pending(), 0);
    /// # Ok(()) }
    /// ```
    // Hidden (outside semver): `stats().pending` is the documented way; this
    // cheaper read is for the benchmarks and tests.
    #[doc(hidden)]
    pub fn pending(&self) -> usize {
        self.channel.state.lock().queue.len()
    }

    /// The lag policy of this subscription: the one its
    /// [`SubscribeOptions`](super::SubscribeOptions) asked for. For the
    /// crate's tests; the subscriber chose it.
    #[doc(hidden)]
    pub fn lag(&self) -> Lag {
        self.channel.lag
    }

    /// Polls the feeding informer's end, if attached, while the queue is
    /// empty. Returns true when it has just ended (the caller looks at the
    /// queue and phase again).
    fn poll_end(&mut self, cx: &mut Context<'_>) -> bool {
        if self.end_seen {
            return false;
        }
        let Some(life) = self.channel.life() else {
            return false;
        };
        let wait = self.end_wait.get_or_insert_with(|| Box::pin(life.ended()));
        let Poll::Ready(reason) = wait.as_mut().poll(cx) else {
            return false;
        };
        self.end_wait = None;
        self.end_seen = true;
        self.channel.close_after_end(reason);
        true
    }
    /// What this subscriber was handed and how far behind it is: deliveries
    /// by kind, pending notifications now and at most, the age of the
    /// oldest pending one, and handler time under [`handle`](Self::handle).
    /// Reading takes the queue's lock for a moment; recording costs no
    /// atomic operation.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, SubscribeOptions, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::informer::Error> {
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
    ///     ..Default::default()
    /// };
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let mut audit = informer.subscribe(SubscribeOptions::default().name("audit"))?;
    /// informer.run().await?;
    /// assert_eq!(audit.stats().pending, 1);
    /// audit.next().await;
    /// let stats = audit.stats();
    /// assert_eq!((stats.name.as_str(), stats.delivered.added, stats.pending), ("audit", 1, 0));
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> SubscriptionStats {
        self.channel().stats()
    }

    /// Drives `handler` with every notification until the stream ends: the
    /// future to spawn for callback-style code.
    ///
    /// The handler runs on the task that polls this future, so a slow or
    /// panicking handler affects only this subscription (and, under
    /// [`Lag::Bounded`](super::Lag::Bounded), the distributor).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, dispatch::{ResourceEventHandler, SubscribeOptions}, source::Event};
    ///
    /// struct Printer;
    /// impl ResourceEventHandler<ConfigMap> for Printer {
    ///     fn on_add(&mut self, cm: &Arc<ConfigMap>, _in_initial_list: bool) {
    ///         println!("added {:?}", cm.metadata.name);
    ///     }
    /// }
    ///
    /// # fn cm(name: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.namespace = Some("default".into());
    /// #     c.metadata.resource_version = Some("1".into());
    /// #     c
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm("a")))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let sub = informer.subscribe(SubscribeOptions::default())?;
    /// let task = tokio::spawn(sub.handle(Printer));
    /// informer.run().await?;
    /// task.await?; // the handler returns once the subscription ends
    /// # Ok(()) }
    /// ```
    pub fn handle<H>(self, mut handler: H) -> impl Future<Output = ()> + Send
    where
        H: ResourceEventHandler<K>,
        K: Send + Sync,
    {
        let mut stream = self;
        async move {
            while let Some(n) = stream.next().await {
                let started = std::time::Instant::now();
                match n {
                    Notification::Added {
                        object,
                        in_initial_list,
                    } => handler.on_add(&object, in_initial_list),
                    Notification::Updated { old, new, .. } => handler.on_update(&old, &new),
                    Notification::Deleted {
                        object,
                        final_state_unknown,
                    } => handler.on_delete(&object, final_state_unknown),
                }
                stream.channel().recorder.handled(started);
            }
        }
    }

    /// Ties the subscription to the informer that feeds it: `keep_alive` is
    /// held for as long as the subscription lives (a share of the informer's
    /// lifetime), and `life` is the informer's life, whose end a waiting
    /// receiver observes.
    pub(crate) fn attach(
        &mut self,
        keep_alive: Arc<dyn Any + Send + Sync>,
        life: Arc<Life>,
        upstream: Weak<dyn UpstreamSync>,
    ) {
        self.keep_alive = Some(keep_alive);
        self.upstream = Some(upstream);
        self.channel().state.lock().life = Some(life);
    }
}

impl<K: Send + Sync + 'static> Subscription<K> {
    /// The stats of this subscription for whoever keeps a list of them;
    /// it does not keep the subscription alive.
    pub(crate) fn stats_probe(&self) -> Weak<dyn StatsProbe> {
        let channel: Arc<dyn StatsProbe> = Arc::clone(self.channel()) as _;
        Arc::downgrade(&channel)
    }
}

impl<K> Stream for Subscription<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.terminated {
                return Poll::Ready(None);
            }
            let mut state = self.channel.state.lock();
            if let Some(n) = state.queue.pop() {
                state.counts.delivered(&n);
                let mut drained = false;
                if is_initial_added(&n) {
                    state.initial_pending = state.initial_pending.saturating_sub(1);
                    drained = state.initial_pending == 0;
                }
                drop(state);
                if drained {
                    self.channel.changed.notify_waiters();
                }
                if matches!(self.channel.lag, Lag::Bounded(_)) {
                    self.channel.space.notify_one();
                }
                return Poll::Ready(Some(n));
            }
            match state.phase {
                Phase::Requested | Phase::Open => {
                    state.set_waker(cx.waker());
                    drop(state);
                    if self.poll_end(cx) {
                        continue;
                    }
                    return Poll::Pending;
                }
                Phase::Closed(_) | Phase::Refused => {
                    drop(state);
                    self.terminated = true;
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.terminated {
            return (0, Some(0));
        }
        let state = self.channel.state.lock();
        match state.phase {
            Phase::Closed(_) | Phase::Refused => (state.queue.len(), Some(state.queue.len())),
            Phase::Requested | Phase::Open => (state.queue.len(), None),
        }
    }
}

impl<K> FusedStream for Subscription<K> {
    fn is_terminated(&self) -> bool {
        self.terminated
    }
}

impl<K> Drop for Subscription<K> {
    fn drop(&mut self) {
        self.channel.drop_receiver();
    }
}

impl<K> fmt::Debug for Subscription<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.channel.state.lock();
        f.debug_struct("Subscription")
            .field("lag", &self.channel.lag)
            .field("phase", &state.phase)
            .field("pending", &state.queue.len())
            .field("terminated", &self.terminated)
            .finish()
    }
}
