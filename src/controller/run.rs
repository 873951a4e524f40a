//! Running a [`Controller`]: start and sync its informers, feed its queue,
//! reconcile until it is shut down.

use std::{fmt, future::Future, pin::pin, sync::Arc};

use futures::{
    Stream, StreamExt,
    future::{self, ready},
    stream::{self, BoxStream},
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{
    Controller, Error, Observed,
    observed::Tombstones,
    reconcile::{Failed, Reconcile},
};
use crate::{
    Notification,
    dispatch::Subscription,
    ext::ChangedOnly,
    ext::NotificationStreamExt,
    factory::InformerFactory,
    key::ObjectKey,
    runner::{Action, OnCancel, ReconcileError, Runner},
    shard::{KeyGate, ShardEvent, ShardedStream},
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
            false,
            move |observed: Observed<K>, ctx| reconcile(observed.into_object(), ctx),
            move |observed: Observed<K>, error: &E, ctx| {
                error_policy(observed.into_object(), error, ctx)
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
        self.start(true, reconcile, error_policy, ctx)
    }

    fn start<C, R, Fut, E, P>(
        self,
        track_deletions: bool,
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
            concurrency,
            gate,
            shutdown,
            sync_timeout,
            setup_errors,
            recorder,
            name,
        } = self;
        let store = informer.store();
        let tombstones = track_deletions.then(|| Arc::new(Tombstones::new()));
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
                    queue.feed(stream::select_all(feeds)).await;
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
            let mut runner = Runner::new(queue.clone())
                .concurrency(concurrency)
                .cancel_on(graceful.clone(), OnCancel::Finish);
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

/// The keys of the controller's own objects: changes that pass the
/// predicate, deletions recorded for a deletion-aware run, only owned keys
/// (and every key acquired) when sharded.
fn main_feed<K: Watchable>(
    subscription: ChangedOnly<Subscription<K>>,
    store: Store<K>,
    predicate: Option<super::builder::SharedPredicate<K>>,
    tombstones: Option<Arc<Tombstones<K>>>,
    gate: Option<KeyGate>,
) -> BoxStream<'static, ObjectKey> {
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
            .filter_map(|notification| ready(key_of(&notification)))
            .boxed(),
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
                        key_of(&notification)
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

fn key_of<K: Watchable>(notification: &Notification<K>) -> Option<ObjectKey> {
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
fn owned_only(feed: BoxStream<'static, ObjectKey>, gate: KeyGate) -> BoxStream<'static, ObjectKey> {
    feed.filter(move |key| ready(gate.owns(key))).boxed()
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
