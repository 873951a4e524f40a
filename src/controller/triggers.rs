//! A controller's triggers: what it keeps for each `owns`, `watches`,
//! `reconcile_on`, `reconcile_all_on` and `resync` until it runs, and the
//! feed of keys each one becomes then (C2, C10, C11), the main feed of its
//! own objects included.

use std::{fmt, future::ready, sync::Arc, time::Duration};

use futures::{
    FutureExt, Stream, StreamExt,
    future::BoxFuture,
    stream::{self, BoxStream},
};

use super::{observed::Tombstones, own_writes::Cache};
#[cfg(feature = "shard")]
pub(super) use crate::shard::KeyGate;
#[cfg(feature = "shard")]
use crate::shard::ShardEvent;
use crate::{
    Notification,
    dispatch::{SubscribeOptions, Subscription},
    ext::{ChangedOnly, NotificationStreamExt},
    informer::{self, Informer, SyncError},
    key::ObjectKey,
    queue::Priority,
    runner::controller_owner_key_with,
    source::Watchable,
    store::Store,
};

/// Without the `shard` feature a controller has no gate: none can be made,
/// and its `gate` is always `None`.
#[cfg(not(feature = "shard"))]
#[derive(Clone)]
pub(super) enum KeyGate {}

/// Keys to queue, each with its priority (C10).
pub(super) type Feed = BoxStream<'static, (ObjectKey, Priority)>;

/// A change filter on a pair of states, shared by the controller's main
/// feed.
pub(super) type SharedFilter<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// Waits up to a timeout for one informer's sync.
pub(super) type SyncWait =
    Box<dyn FnOnce(Duration) -> BoxFuture<'static, Result<(), SyncError>> + Send>;

/// The name subscriptions of a controller carry.
const SUBSCRIBER: &str = "controller";

/// What a trigger becomes when the controller runs: its keys, and for a
/// trigger with an informer of its own, the wait for its sync (C3) and
/// its cache for the read-your-own-writes gate (RW7).
pub(super) struct Connected {
    pub(super) feed: Feed,
    pub(super) sync: Option<SyncWait>,
    pub(super) cache: Option<Cache>,
}

/// One source of keys, kept until the controller runs.
pub(super) struct Trigger {
    kind: &'static str,
    connect: Box<dyn FnOnce() -> Result<Connected, informer::Error> + Send>,
}

impl Trigger {
    /// The controller owner of each changed state of `children`'s objects
    /// that is of the controller's type (`owner`).
    pub(super) fn owns<K, C>(children: Informer<C>, owner: Arc<K::DynamicType>) -> Self
    where
        K: Watchable,
        C: Watchable,
    {
        Self::new("owns", move || {
            let changes = subscribe(&children)?;
            let feed = changes
                .flat_map(move |notification| {
                    let keys = states(&notification)
                        .filter_map(|child| controller_owner_key_with::<K, C>(child, &owner));
                    with_priority(distinct(keys), Priority::of(&notification))
                })
                .boxed();
            Ok(Connected::informer(feed, &children))
        })
    }

    /// The keys `mapper` names for each changed state of `watched`'s
    /// objects.
    pub(super) fn watches<W, I, M>(watched: Informer<W>, mapper: M) -> Self
    where
        W: Watchable,
        I: IntoIterator<Item = ObjectKey>,
        M: Fn(&W) -> I + Send + Sync + 'static,
    {
        Self::new("watches", move || {
            let changes = subscribe(&watched)?;
            let feed = changes
                .flat_map(move |notification| {
                    let keys = states(&notification).flat_map(&mapper);
                    with_priority(distinct(keys), Priority::of(&notification))
                })
                .boxed();
            Ok(Connected::informer(feed, &watched))
        })
    }

    /// Every key `keys` yields, high.
    pub(super) fn keys<S>(keys: S) -> Self
    where
        S: Stream<Item = ObjectKey> + Send + 'static,
    {
        Self::new("reconcile_on", move || {
            Ok(Connected::feed(
                keys.map(|key| (key, Priority::High)).boxed(),
            ))
        })
    }

    /// Every key `store` holds at each tick, low.
    pub(super) fn every_key_on<K, S>(store: Store<K>, ticks: S) -> Self
    where
        K: Watchable,
        S: Stream<Item = ()> + Send + 'static,
    {
        Self::new("reconcile_all_on", move || {
            Ok(Connected::feed(
                ticks
                    .flat_map(move |()| with_priority(store.list_keys(), Priority::Low))
                    .boxed(),
            ))
        })
    }

    /// The key of each resync notification of a subscription to
    /// `informer` with resync `period`, low (C11).
    pub(super) fn resync<K: Watchable>(informer: Informer<K>, period: Duration) -> Self {
        Self::new("resync", move || {
            let options = SubscribeOptions::default()
                .name("controller-resync")
                .resync(period);
            let subscription = informer.subscribe(options)?;
            Ok(Connected::feed(
                subscription
                    .filter_map(|n| {
                        let key = if n.is_resync() { key_of(&n) } else { None };
                        ready(key.map(|key| (key, Priority::Low)))
                    })
                    .boxed(),
            ))
        })
    }

    fn new(
        kind: &'static str,
        connect: impl FnOnce() -> Result<Connected, informer::Error> + Send + 'static,
    ) -> Self {
        Self {
            kind,
            connect: Box::new(connect),
        }
    }

    /// Subscribes what the trigger watches, once, when the controller runs.
    pub(super) fn connect(self) -> Result<Connected, informer::Error> {
        (self.connect)()
    }
}

impl fmt::Debug for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind)
    }
}

impl Connected {
    /// A feed with no informer of its own.
    fn feed(feed: Feed) -> Self {
        Self {
            feed,
            sync: None,
            cache: None,
        }
    }

    /// A feed from `informer`'s changes.
    pub(super) fn informer<W: Watchable>(feed: Feed, informer: &Informer<W>) -> Self {
        Self {
            feed,
            sync: Some(sync_wait(informer)),
            cache: Some(Cache::new(informer.watched_resource(), informer.store())),
        }
    }
}

/// The changes of `informer`: no resyncs (C2), no update that changed
/// nothing.
pub(super) fn subscribe<W: Watchable>(
    informer: &Informer<W>,
) -> Result<ChangedOnly<Subscription<W>>, informer::Error> {
    informer
        .subscribe(SubscribeOptions::default().name(SUBSCRIBER))
        .map(ChangedOnly::new)
}

fn sync_wait<W: Watchable>(informer: &Informer<W>) -> SyncWait {
    let informer = informer.clone();
    Box::new(move |timeout| async move { informer.wait_for_sync(timeout).await }.boxed())
}

/// The keys of the controller's own objects, with their priority (C10):
/// changes that pass the filter, deletions recorded for a deletion-aware
/// run, only owned keys (and every key acquired) when sharded.
pub(super) fn main_feed<K: Watchable>(
    subscription: ChangedOnly<Subscription<K>>,
    #[cfg_attr(not(feature = "shard"), allow(unused_variables))] store: Store<K>,
    filter: Option<SharedFilter<K>>,
    tombstones: Option<Arc<Tombstones<K>>>,
    gate: Option<KeyGate>,
) -> Feed {
    let notifications = subscription.inspect(move |notification| {
        if let Some(tombstones) = &tombstones {
            record(tombstones, notification);
        }
    });
    let notifications = match filter {
        Some(filter) => notifications
            .filter_changes(move |old: &K, new: &K| filter(old, new))
            .boxed(),
        None => notifications.boxed(),
    };
    match gate {
        None => notifications
            .filter_map(|notification| ready(prioritized_key(&notification)))
            .boxed(),
        #[cfg(not(feature = "shard"))]
        Some(gate) => match gate {},
        #[cfg(feature = "shard")]
        Some(gate) => gate
            .filter(notifications, store)
            .filter_map(|event| {
                ready(match event {
                    // The guard is the runner's to take again when the
                    // reconcile starts; the feed only queues the key.
                    ShardEvent::Change {
                        notification,
                        guard,
                    } => {
                        drop(guard);
                        prioritized_key(&notification)
                    }
                    ShardEvent::Lost { .. } => None,
                })
            })
            .boxed(),
    }
}

/// Only the keys `gate` owns now (the runner's gate checks again when the
/// reconcile starts).
#[cfg(feature = "shard")]
pub(super) fn owned_only(feed: Feed, gate: KeyGate) -> Feed {
    feed.filter(move |(key, _)| ready(gate.owns(key))).boxed()
}

/// Without the `shard` feature there is no gate to filter by.
#[cfg(not(feature = "shard"))]
pub(super) fn owned_only(_feed: Feed, gate: KeyGate) -> Feed {
    match gate {}
}

/// Keeps the last state of each deleted object until its deletion is
/// reconciled or the key comes back.
fn record<K: Watchable>(tombstones: &Tombstones<K>, notification: &Notification<K>) {
    let Some(key) = key_of(notification) else {
        return;
    };
    match notification {
        Notification::Deleted { object, .. } => tombstones.deleted(key, object.clone()),
        Notification::Added { .. } | Notification::Updated { .. } => tombstones.present(&key),
    }
}

/// The key of `notification` with its priority (C10).
fn prioritized_key<K: Watchable>(notification: &Notification<K>) -> Option<(ObjectKey, Priority)> {
    key_of(notification).map(|key| (key, Priority::of(notification)))
}

fn key_of<K: Watchable>(notification: &Notification<K>) -> Option<ObjectKey> {
    match ObjectKey::from_object(&**notification.object()) {
        Ok(key) => Some(key),
        Err(error) => {
            tracing::warn!(%error, "controller: a notification's object has no key; skipped");
            None
        }
    }
}

/// The states a notification carries: both of an update, the one of an
/// addition or deletion.
fn states<K>(notification: &Notification<K>) -> impl Iterator<Item = &K> {
    let (first, second) = match notification {
        Notification::Updated { old, new, .. } => (&**new, Some(&**old)),
        Notification::Added { object, .. } | Notification::Deleted { object, .. } => {
            (&**object, None)
        }
    };
    std::iter::once(first).chain(second)
}

/// `keys`, each with `priority`, as a stream.
fn with_priority(
    keys: Vec<ObjectKey>,
    priority: Priority,
) -> stream::Iter<impl Iterator<Item = (ObjectKey, Priority)>> {
    stream::iter(keys.into_iter().map(move |key| (key, priority)))
}

/// `keys` without repeats, in order (two states usually name one key).
fn distinct(keys: impl Iterator<Item = ObjectKey>) -> Vec<ObjectKey> {
    let mut out: Vec<ObjectKey> = Vec::new();
    for key in keys {
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}
