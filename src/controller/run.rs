//! Running a [`Controller`]: start and sync its informers, feed its queue,
//! reconcile until it is shut down.

use std::{fmt, future::Future, pin::pin, sync::Arc};

use futures::{
    FutureExt, Stream, StreamExt,
    future::{self, OptionFuture, ready},
    stream::{self, BoxStream},
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{
    Controller, Error, Observed,
    builder::KeyGate,
    observed::Tombstones,
    own_writes::OwnWritesGate,
    reconcile::{Failed, Reconcile},
};
#[cfg(feature = "shard")]
use crate::shard::{ShardEvent, ShardedStream};
use crate::{
    Notification,
    dispatch::Subscription,
    ext::ChangedOnly,
    ext::NotificationStreamExt,
    factory::InformerFactory,
    key::ObjectKey,
    queue::Priority,
    runner::{Action, OnCancel, ReconcileError, Runner},
    source::Watchable,
    store::Store,
};

/// One item of a controller's stream: the key reconciled and what it asked
/// for, or why a reconcile did not succeed.
pub type Outcome<E> = Result<(ObjectKey, Action), Error<E>>;

impl<K: Watchable> Controller<K> {
    /// Runs the controller: starts its informers (those of its factory not
    /// started yet), waits until they synced (C3), then reconciles each
    /// queued key with `reconcile(object, ctx)` and, when that fails, gives
    /// the key what `error_policy(object, &error, ctx)` returns (C5):
    /// [`Action::backoff()`] for the queue's per-key exponential backoff.
    ///
    /// The stream yields one item per reconcile (and one per queued key
    /// whose object is gone: [`Error::ObjectNotFound`]); it drives the
    /// controller while it is polled, and ends after a shutdown (C7), or
    /// when every trigger has ended and the queue is empty. A key whose
    /// object was deleted is not reconciled here; see
    /// [`run_with_deletions`](Self::run_with_deletions).
    ///
    /// See the [type docs](Controller) for an example.
    pub fn run<C, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Outcome<E>> + Send + 'static
    where
        C: Send + Sync + 'static,
        R: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        P: Fn(Arc<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
    {
        self.start(
            Entry::Present,
            move |_key, observed: Option<Observed<K>>, ctx| {
                OptionFuture::from(observed.map(|observed| reconcile(observed.into_object(), ctx)))
            },
            move |_key, observed: Option<Observed<K>>, error: &E, ctx| match observed {
                Some(observed) => error_policy(observed.into_object(), error, ctx),
                None => Action::Backoff,
            },
            ctx,
        )
    }

    /// As [`run`](Self::run), and a key whose object was deleted before its
    /// reconcile is reconciled too, with [`Observed::Deleted`] and the
    /// object's last known state (C4): cleanup that needs the object after
    /// it is gone. The record of deleted objects lives only as long as the
    /// process; across restarts, a finalizer
    /// ([`finalizer`](crate::finalizer)) is what holds the object until its
    /// cleanup ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, api::DeleteParams};
    /// use kube_informer::{controller::{Controller, Observed}, runner::Action};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// server.create(&cm)?;
    /// let api = Api::<ConfigMap>::all(server.client());
    /// let outcomes = Controller::new(api.clone()).run_with_deletions(
    ///     |observed: Observed<ConfigMap>, _ctx: Arc<()>| async move {
    ///         Ok::<_, kube::Error>(if observed.is_deleted() { Action::done() } else { Action::backoff() })
    ///     },
    ///     |_observed, _error, _ctx| Action::backoff(),
    ///     Arc::new(()),
    /// );
    /// let mut outcomes = std::pin::pin!(outcomes);
    /// outcomes.next().await.unwrap()?; // present
    /// Api::<ConfigMap>::namespaced(server.client(), "default").delete("app", &DeleteParams::default()).await?;
    /// loop {
    ///     // The last state is handed to the reconciler once the object is gone.
    ///     if outcomes.next().await.unwrap()?.1 == Action::Done { break; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn run_with_deletions<C, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Outcome<E>> + Send + 'static
    where
        C: Send + Sync + 'static,
        R: Fn(Observed<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        P: Fn(Observed<K>, &E, Arc<C>) -> Action + Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
    {
        self.start(
            Entry::WithDeletions,
            move |_key, observed: Option<Observed<K>>, ctx| {
                OptionFuture::from(observed.map(|observed| reconcile(observed, ctx)))
            },
            move |_key, observed: Option<Observed<K>>, error: &E, ctx| match observed {
                Some(observed) => error_policy(observed, error, ctx),
                None => Action::Backoff,
            },
            ctx,
        )
    }

    /// As [`run_with_deletions`](Self::run_with_deletions), keyed: every
    /// queued key is reconciled, with what the controller knows of its
    /// object: [`Observed::Present`], [`Observed::Deleted`], or `None` when
    /// the key is in neither the cache nor the record of deletions (C4): an
    /// object deleted before the process started, or never there, named by
    /// a `watches` mapper or a stream. It suits a reconciler that cleans up
    /// by key (objects it made that name the key), as a sweep after a
    /// restart does; the stream never yields [`Error::ObjectNotFound`]. The
    /// error policy gets the key.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{ObjectKey, controller::{Controller, Observed}, runner::Action};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let (poke, pokes) = futures::channel::mpsc::unbounded::<ObjectKey>();
    /// let outcomes = Controller::new(Api::<ConfigMap>::all(server.client()))
    ///     .watches_stream(pokes)
    ///     .run_by_key(
    ///         |key: ObjectKey, observed: Option<Observed<ConfigMap>>, _ctx: Arc<()>| async move {
    ///             if observed.is_none() {
    ///                 println!("{key} is unknown: clean up what names it");
    ///             }
    ///             Ok::<_, kube::Error>(Action::done())
    ///         },
    ///         |_key, _error, _ctx| Action::backoff(),
    ///         Arc::new(()),
    ///     );
    /// poke.unbounded_send("default/gone-before-we-started".parse()?)?;
    /// let mut outcomes = std::pin::pin!(outcomes);
    /// let (key, _action) = outcomes.next().await.unwrap()?;
    /// assert_eq!(key.as_str(), "default/gone-before-we-started");
    /// # Ok(()) }
    /// ```
    pub fn run_by_key<C, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Outcome<E>> + Send + 'static
    where
        C: Send + Sync + 'static,
        R: Fn(ObjectKey, Option<Observed<K>>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        P: Fn(ObjectKey, &E, Arc<C>) -> Action + Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
    {
        self.start(
            Entry::ByKey,
            move |key, observed, ctx| reconcile(key, observed, ctx).map(Some),
            move |key, _observed, error: &E, ctx| error_policy(key, error, ctx),
            ctx,
        )
    }

    /// Runs the controller with `reconcile` and `error_policy` as `entry`
    /// adapted them.
    fn start<C, R, Fut, E, P>(
        self,
        entry: Entry,
        reconcile: R,
        error_policy: P,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Outcome<E>> + Send + 'static
    where
        C: Send + Sync + 'static,
        R: Fn(ObjectKey, Option<Observed<K>>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Result<Action, E>>> + Send + 'static,
        P: Fn(ObjectKey, Option<Observed<K>>, &E, Arc<C>) -> Action + Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
    {
        let Controller {
            informer,
            main,
            dyntype: _,
            factory,
            own_factory,
            syncs,
            mut feeds,
            predicate,
            queue,
            backoff_holds: _,
            priorities: _,
            priority_ageing: _,
            concurrency,
            gate,
            shutdown,
            sync_timeout,
            setup_errors,
            recorder,
            name,
            caches,
            own_writes,
            reconcile_error_log,
        } = self;
        let own_writes = own_writes.map(|(log, deadline)| OwnWritesGate {
            log,
            deadline,
            caches,
            recorder: recorder.clone(),
        });
        let store = informer.store();
        let tombstones = (entry != Entry::Present).then(|| Arc::new(Tombstones::new()));
        #[cfg(feature = "shard")]
        if let Some(gate) = &gate {
            feeds = feeds
                .into_iter()
                .map(|feed| owned_only(feed, gate.clone()))
                .collect();
        }
        if let Some(main) = main {
            feeds.insert(
                0,
                main_feed(
                    main,
                    store.clone(),
                    predicate,
                    tombstones.clone(),
                    gate.clone(),
                ),
            );
        }
        let per_key = Arc::new(Reconcile {
            store,
            tombstones,
            reconcile,
            error_policy,
            ctx,
            recorder,
            name: name.into(),
            unknown_keys: entry == Entry::ByKey,
            own_writes,
            error_log: reconcile_error_log,
        });
        let own = own_factory.then(|| factory.clone()).flatten();
        async_stream::stream! {
            if let Some(error) = setup_errors.into_iter().next() {
                yield Err(Error::Setup(error));
                close(own.as_ref()).await;
                return;
            }
            let (graceful, forced, done) =
                (CancellationToken::new(), CancellationToken::new(), CancellationToken::new());
            shutdown.watch(&graceful, &forced, &done);
            let _done = done.drop_guard();
            if let Some(factory) = &factory {
                factory.start();
            }
            let _feed = AbortOnDrop(tokio::spawn({
                let queue = queue.clone();
                async move {
                    queue.feed_with_priority(stream::select_all(feeds)).await;
                    // Every trigger ended: what is queued is reconciled,
                    // then the stream ends (C7).
                    queue.shutdown();
                }
            }));
            let synced = {
                let waits = future::try_join_all(syncs.into_iter().map(|wait| wait(sync_timeout)));
                let stopped = graceful.clone();
                let waits = pin!(waits);
                let stopped = pin!(stopped.cancelled_owned());
                match future::select(waits, stopped).await {
                    future::Either::Left((synced, _)) => Some(synced),
                    future::Either::Right(((), _)) => None,
                }
            };
            match synced {
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    yield Err(Error::Sync(error));
                    queue.shutdown();
                    close(own.as_ref()).await;
                    return;
                }
                None => {
                    queue.shutdown();
                    close(own.as_ref()).await;
                    return;
                }
            }
            #[cfg_attr(not(feature = "shard"), allow(unused_mut))]
            let mut runner = Runner::new(queue.clone())
                .concurrency(concurrency)
                .cancel_on(graceful.clone(), OnCancel::Finish);
            #[cfg(feature = "shard")]
            if let Some(gate) = gate {
                runner = runner.gate(gate);
            }
            let reconciles = runner
                .run_with_error_policy(
                    move |key| per_key.of(key),
                    |_key: &ObjectKey, failed: &Failed<E>| failed.next,
                )
                .take_until(forced.cancelled_owned());
            let mut reconciles = pin!(reconciles);
            while let Some(outcome) = reconciles.next().await {
                yield outcome.map_err(|ReconcileError { error, .. }| error.error);
            }
            queue.shutdown();
            close(own.as_ref()).await;
        }
    }
}

/// What a run's entry hands its reconciler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// Objects in the cache ([`run`](Controller::run)).
    Present,
    /// And the last state of deleted ones
    /// ([`run_with_deletions`](Controller::run_with_deletions)).
    WithDeletions,
    /// Every queued key, with what is known of its object
    /// ([`run_by_key`](Controller::run_by_key)).
    ByKey,
}

/// The keys of the controller's own objects, with their priority (C10):
/// changes that pass the predicate, deletions recorded for a
/// deletion-aware run, only owned keys (and every key acquired) when
/// sharded.
fn main_feed<K: Watchable>(
    subscription: ChangedOnly<Subscription<K>>,
    #[cfg_attr(not(feature = "shard"), allow(unused_variables))] store: Store<K>,
    predicate: Option<super::builder::SharedPredicate<K>>,
    tombstones: Option<Arc<Tombstones<K>>>,
    gate: Option<KeyGate>,
) -> BoxStream<'static, (ObjectKey, Priority)> {
    let notifications = subscription.inspect(move |notification| {
        if let Some(tombstones) = &tombstones {
            record(tombstones, notification);
        }
    });
    let notifications = match predicate {
        Some(predicate) => notifications
            .predicate(move |old: &K, new: &K| predicate(old, new))
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
        Some(gate) => ShardedStream::new(notifications, store, gate)
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

pub(super) fn key_of<K: Watchable>(notification: &Notification<K>) -> Option<ObjectKey> {
    match ObjectKey::from_object(&**notification.object()) {
        Ok(key) => Some(key),
        Err(error) => {
            tracing::warn!(%error, "controller: a notification's object has no key; skipped");
            None
        }
    }
}

/// Only the keys `gate` owns now (the runner's gate checks again when the
/// reconcile starts).
#[cfg(feature = "shard")]
fn owned_only(
    feed: BoxStream<'static, (ObjectKey, Priority)>,
    gate: KeyGate,
) -> BoxStream<'static, (ObjectKey, Priority)> {
    feed.filter(move |(key, _)| ready(gate.owns(key))).boxed()
}

/// Shuts down a factory the controller made, if it made one.
async fn close(own: Option<&InformerFactory>) {
    if let Some(factory) = own {
        factory.shutdown().await;
    }
}

/// A spawned task, aborted when the stream that spawned it is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
