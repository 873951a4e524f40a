//! The receiving end: [`Subscription`], the request that registers it, and
//! its [`SyncStatus`].

use std::{
    fmt,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::{Stream, StreamExt, stream::FusedStream};

use super::{
    Error, Lag, SubscribeOptions,
    channel::{Channel, Phase},
    handler::ResourceEventHandler,
    queue::is_initial_added,
};
use crate::notification::Notification;

/// One subscriber's stream of [`Notification`]s.
///
/// It first yields the initial list (or, when subscribing late, the whole
/// cache as `Added { in_initial_list: true }`, L1), then live notifications,
/// and ends once the informer stopped and everything queued for it was
/// yielded. Dropping it unsubscribes (L5).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use futures::StreamExt;
/// use kube_informer::{Notification, ObjectKey};
/// use kube_informer::dispatch::{Distributor, SubscribeOptions};
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (synced, upstream) = watch::channel(false);
/// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
/// let key: ObjectKey = "default/a".parse()?;
/// let mut sub = distributor.subscribe(
///     SubscribeOptions::default(),
///     [(key.clone(), Arc::new("cached".to_string()))],
/// );
/// synced.send_replace(true);
/// distributor
///     .distribute(&key, Notification::Deleted { object: Arc::new("cached".into()), final_state_unknown: false })
///     .await;
/// distributor.close();
///
/// assert!(!sub.has_synced()); // the replayed item was not yielded yet
/// assert!(matches!(sub.next().await, Some(Notification::Added { in_initial_list: true, .. })));
/// assert!(sub.has_synced());
/// assert!(matches!(sub.next().await, Some(Notification::Deleted { .. })));
/// assert!(sub.next().await.is_none());
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Subscription<K> {
    channel: Arc<Channel<K>>,
    terminated: bool,
}

/// The writer's half of a subscription asked for from another task: hand it
/// to [`Distributor::register`](super::Distributor::register) between two
/// batches. Dropping it unregistered ends the [`Subscription`] with
/// [`Error::Stopped`] (L6), so a subscriber never hangs on an informer that
/// is gone.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// use kube_informer::dispatch::{Error, SubscribeOptions, SubscribeRequest};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (mut sub, request) = SubscribeRequest::<String>::new(SubscribeOptions::default());
/// drop(request); // e.g. the informer's writer task is gone
/// assert!(sub.next().await.is_none());
/// assert_eq!(sub.error(), Some(Error::Stopped));
/// # }
/// ```
pub struct SubscribeRequest<K> {
    pub(crate) channel: Arc<Channel<K>>,
    pub(crate) options: SubscribeOptions,
}

impl<K> SubscribeRequest<K> {
    /// A subscription waiting to be registered, and the request that
    /// registers it.
    pub fn new(options: SubscribeOptions) -> (Subscription<K>, Self) {
        let channel = Arc::new(Channel::new(options.lag_policy()));
        let subscription = Subscription {
            channel: Arc::clone(&channel),
            terminated: false,
        };
        (subscription, Self { channel, options })
    }

    /// The options the subscriber asked for.
    pub fn options(&self) -> SubscribeOptions {
        self.options
    }

    /// Ends the subscription unregistered, with `reason`.
    pub fn refuse(self, reason: Error) {
        self.channel.end(&Phase::Requested, Phase::Refused(reason));
    }
}

impl<K> Drop for SubscribeRequest<K> {
    fn drop(&mut self) {
        self.channel
            .end(&Phase::Requested, Phase::Refused(Error::Stopped));
    }
}

impl<K> fmt::Debug for SubscribeRequest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscribeRequest")
            .field("options", &self.options)
            .finish()
    }
}

impl<K> Subscription<K> {
    /// Whether the informer has synced and this subscriber has been yielded
    /// every initial-list item queued for it (L2).
    pub fn has_synced(&self) -> bool {
        sync_state(&self.channel) == SyncState::Synced
    }

    /// Waits until [`has_synced`](Subscription::has_synced); `false` if the
    /// subscription ended (refused, or the informer stopped) before it could
    /// sync. Cancel-safe.
    ///
    /// Items count as delivered when this stream yields them, so awaiting
    /// this on the task that should be polling the stream waits forever
    /// once there is an initial list: poll the stream elsewhere, or use a
    /// [`SyncStatus`] from [`sync_status`](Subscription::sync_status).
    pub async fn wait_until_synced(&self) -> bool {
        wait_until_synced(&self.channel).await
    }

    /// A handle on this subscription's sync state that other tasks can keep
    /// and await while this stream is consumed.
    pub fn sync_status(&self) -> SyncStatus<K> {
        SyncStatus {
            channel: Arc::clone(&self.channel),
        }
    }

    /// Why this subscription ended without being registered, if it did.
    pub fn error(&self) -> Option<Error> {
        match &self.channel.state.lock().phase {
            Phase::Refused(e) => Some(e.clone()),
            _ => None,
        }
    }

    /// The notifications queued and not yet yielded.
    pub fn pending(&self) -> usize {
        self.channel.state.lock().queue.len()
    }

    /// The keys holding a place in this subscriber's queue: for
    /// [`Lag::Coalesce`] at most the number of distinct keys, otherwise the
    /// same as [`pending`](Subscription::pending).
    pub fn pending_keys(&self) -> usize {
        self.channel.state.lock().queue.pending_keys()
    }

    /// The lag policy of this subscription.
    pub fn lag(&self) -> Lag {
        self.channel.lag
    }

    /// Drives `handler` with every notification until the stream ends: the
    /// future to spawn for callback-style code.
    ///
    /// The handler runs on the task that polls this future, so a slow or
    /// panicking handler affects only this subscription (and, under
    /// [`Lag::Bounded`], the distributor).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use kube_informer::{Notification, ObjectKey};
    /// use kube_informer::dispatch::{Distributor, EventHandlerFuncs, SubscribeOptions};
    /// use tokio::sync::watch;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (_synced, upstream) = watch::channel(true);
    /// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
    /// let sub = distributor.subscribe(SubscribeOptions::default(), []);
    /// let task = tokio::spawn(sub.handle(
    ///     EventHandlerFuncs::new().on_add(|obj: &Arc<String>, _initial| println!("added {obj}")),
    /// ));
    /// let key: ObjectKey = "a".parse()?;
    /// distributor
    ///     .distribute(&key, Notification::Added { object: Arc::new("a".into()), in_initial_list: false })
    ///     .await;
    /// distributor.close();
    /// task.await?;
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
            }
        }
    }
}

impl<K> Stream for Subscription<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.terminated {
            return Poll::Ready(None);
        }
        let mut state = self.channel.state.lock();
        if let Some(n) = state.queue.pop() {
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
                Poll::Pending
            }
            Phase::Closed | Phase::Refused(_) => {
                drop(state);
                self.terminated = true;
                Poll::Ready(None)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.terminated {
            return (0, Some(0));
        }
        let state = self.channel.state.lock();
        match state.phase {
            Phase::Closed | Phase::Refused(_) => (state.queue.len(), Some(state.queue.len())),
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

/// A clonable view of one [`Subscription`]'s sync state (L2), for tasks
/// other than the one consuming it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// use kube_informer::dispatch::{Distributor, SubscribeOptions};
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (synced, upstream) = watch::channel(false);
/// let mut distributor = Distributor::<String>::new(Duration::ZERO, upstream);
/// let mut sub = distributor.subscribe(SubscribeOptions::default(), []);
/// let status = sub.sync_status();
/// let waiter = tokio::spawn(async move { status.wait_until_synced().await });
/// synced.send_replace(true);
/// assert!(waiter.await.unwrap());
/// # drop(sub.next());
/// # }
/// ```
pub struct SyncStatus<K> {
    channel: Arc<Channel<K>>,
}

impl<K> SyncStatus<K> {
    /// Same as [`Subscription::has_synced`].
    pub fn has_synced(&self) -> bool {
        sync_state(&self.channel) == SyncState::Synced
    }

    /// Same as [`Subscription::wait_until_synced`].
    pub async fn wait_until_synced(&self) -> bool {
        wait_until_synced(&self.channel).await
    }
}

impl<K> Clone for SyncStatus<K> {
    fn clone(&self) -> Self {
        Self {
            channel: Arc::clone(&self.channel),
        }
    }
}

impl<K> fmt::Debug for SyncStatus<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncStatus")
            .field("synced", &self.has_synced())
            .finish()
    }
}

#[derive(Debug, PartialEq, Eq)]
enum SyncState {
    Synced,
    Waiting,
    /// It cannot sync any more: refused, or closed before upstream synced.
    Never,
}

fn sync_state<K>(channel: &Channel<K>) -> SyncState {
    let state = channel.state.lock();
    let upstream = state.upstream_synced();
    match state.phase {
        Phase::Refused(_) => SyncState::Never,
        Phase::Requested => SyncState::Waiting,
        _ if upstream && state.initial_pending == 0 => SyncState::Synced,
        Phase::Closed if !upstream => SyncState::Never,
        Phase::Open | Phase::Closed => SyncState::Waiting,
    }
}

async fn wait_until_synced<K>(channel: &Channel<K>) -> bool {
    loop {
        let changed = channel.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match sync_state(channel) {
            SyncState::Synced => return true,
            SyncState::Never => return false,
            SyncState::Waiting => {}
        }
        let upstream = channel.state.lock().upstream.clone();
        match upstream {
            Some(mut upstream) if !*upstream.borrow() => {
                // A dropped sender leaves the flag as it is; the next phase
                // change (close) wakes `changed`.
                let upstream_synced = async move {
                    if upstream.wait_for(|s| *s).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    _ = changed => {}
                    _ = upstream_synced => {}
                }
            }
            _ => changed.await,
        }
    }
}
