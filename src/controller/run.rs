//! Running a [`Controller`]: start and sync its informers, feed its queue,
//! reconcile until it is shut down.

use std::{fmt, future::Future, pin::pin, sync::Arc};

use futures::{
    FutureExt, Stream, StreamExt,
    future::{self, OptionFuture},
    stream,
};
use tokio::task::JoinHandle;

use super::{
    Controller, Error, Observed,
    debounce::debounced,
    observed::Tombstones,
    own_writes::OwnWritesGate,
    reconcile::{Failed, Reconcile},
    shutdown::Stop,
    triggers::{self, Connected, Feed, SyncWait},
};
use crate::{
    factory::InformerFactory,
    key::ObjectKey,
    metrics::MetricsReader,
    queue::WorkQueue,
    runner::{Action, OnCancel, Runner},
    source::Watchable,
};

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
    ) -> impl Stream<Item = Result<(ObjectKey, Action), Error<E>>> + Send + 'static
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
    ///         Ok::<_, kube::Error>(if observed.is_deleted() { Action::await_change() } else { Action::backoff() })
    ///     },
    ///     |_observed, _error, _ctx| Action::backoff(),
    ///     Arc::new(()),
    /// );
    /// let mut outcomes = std::pin::pin!(outcomes);
    /// outcomes.next().await.unwrap()?; // present
    /// Api::<ConfigMap>::namespaced(server.client(), "default").delete("app", &DeleteParams::default()).await?;
    /// loop {
    ///     // The last state is handed to the reconciler once the object is gone.
    ///     if outcomes.next().await.unwrap()?.1 == Action::AwaitChange { break; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn run_with_deletions<C, R, Fut, E, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Result<(ObjectKey, Action), Error<E>>> + Send + 'static
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
    ///     .reconcile_on(pokes)
    ///     .run_by_key(
    ///         |key: ObjectKey, observed: Option<Observed<ConfigMap>>, _ctx: Arc<()>| async move {
    ///             if observed.is_none() {
    ///                 println!("{key} is unknown: clean up what names it");
    ///             }
    ///             Ok::<_, kube::Error>(Action::await_change())
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
    ) -> impl Stream<Item = Result<(ObjectKey, Action), Error<E>>> + Send + 'static
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
    ) -> impl Stream<Item = Result<(ObjectKey, Action), Error<E>>> + Send + 'static
    where
        C: Send + Sync + 'static,
        R: Fn(ObjectKey, Option<Observed<K>>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Result<Action, E>>> + Send + 'static,
        P: Fn(ObjectKey, Option<Observed<K>>, &E, Arc<C>) -> Action + Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
    {
        let Controller {
            informer,
            dyntype: _,
            factory,
            own_factory,
            triggers,
            filter,
            settings,
            gate,
            own_writes,
            shutdown,
            mut setup_errors,
            recorder,
            queue_metrics,
        } = self;
        let store = informer.store();
        let tombstones = (entry != Entry::Present).then(|| Arc::new(Tombstones::new()));
        // Every trigger subscribes now, the controller's own objects first:
        // its feed, its informer's sync and its cache.
        let main = triggers::subscribe(&informer).map(|changes| {
            let feed = triggers::main_feed(
                changes,
                store.clone(),
                filter,
                tombstones.clone(),
                gate.clone(),
            );
            Connected::informer(feed, &informer)
        });
        let mut feeds: Vec<Feed> = Vec::new();
        let mut syncs: Vec<SyncWait> = Vec::new();
        let mut caches = Vec::new();
        let connected = std::iter::once(main).chain(triggers.into_iter().map(|trigger| {
            trigger.connect().map(|connected| match &gate {
                Some(gate) => Connected {
                    feed: triggers::owned_only(connected.feed, gate.clone()),
                    ..connected
                },
                None => connected,
            })
        }));
        for connected in connected {
            match connected {
                Ok(Connected { feed, sync, cache }) => {
                    feeds.push(feed);
                    syncs.extend(sync);
                    caches.extend(cache);
                }
                Err(error) => setup_errors.push(error),
            }
        }
        let queue = settings.queue();
        let _ = queue_metrics.set(MetricsReader::from(&queue));
        let feed = debounced(stream::select_all(feeds).boxed(), settings.config.debounce);
        let per_key = Arc::new(Reconcile {
            store,
            tombstones,
            reconcile,
            error_policy,
            ctx,
            recorder: recorder.clone(),
            name: settings.name.as_str().into(),
            unknown_keys: entry == Entry::ByKey,
            own_writes: own_writes.map(|(log, deadline)| OwnWritesGate {
                log,
                deadline,
                caches,
                recorder,
            }),
            error_log: settings.config.reconcile_error_log,
        });
        let run = Run {
            queue,
            factory,
            own_factory,
        };
        async_stream::stream! {
            if let Some(error) = setup_errors.into_iter().next() {
                yield Err(Error::Setup(error));
                run.close().await;
                return;
            }
            let stop = shutdown.start();
            let _feed = run.feed(feed);
            match run.sync(syncs, settings.config.sync_timeout, &stop).await {
                Synced::Yes => {
                    #[cfg_attr(not(feature = "shard"), allow(unused_mut))]
                    let mut runner = Runner::new(run.queue.clone())
                        .concurrency(settings.runner_concurrency())
                        .cancel_on(stop.graceful.clone(), OnCancel::Finish);
                    #[cfg(feature = "shard")]
                    if let Some(gate) = gate {
                        runner = runner.gate(gate);
                    }
                    let reconciles = runner
                        .run(
                            move |key| per_key.of(key),
                            |_key: &ObjectKey, failed: &Failed<E>| failed.next,
                        )
                        .take_until(stop.forced.clone().cancelled_owned());
                    let mut reconciles = pin!(reconciles);
                    while let Some(outcome) = reconciles.next().await {
                        yield outcome.map_err(unwrap_failed);
                    }
                }
                Synced::Failed(error) => yield Err(Error::Sync(error)),
                Synced::Stopped => {}
            }
            run.close().await;
        }
    }
}

/// The live parts of a running controller that outlast its reconciles:
/// its queue, and the factory it may have to start and shut down.
struct Run {
    queue: WorkQueue,
    factory: Option<InformerFactory>,
    own_factory: bool,
}

/// How the wait for the informers' sync ended (C3).
enum Synced {
    Yes,
    Failed(crate::informer::SyncError),
    /// A graceful shutdown came first.
    Stopped,
}

impl Run {
    /// Starts the factory's informers and feeds `feed` into the queue from
    /// a task that ends with the returned guard; when every trigger has
    /// ended, the queue shuts down, so what is queued is reconciled and
    /// then the stream ends (C7).
    fn feed(&self, feed: Feed) -> AbortOnDrop {
        if let Some(factory) = &self.factory {
            factory.start();
        }
        let queue = self.queue.clone();
        AbortOnDrop(tokio::spawn(async move {
            queue.feed_with_priority(feed).await;
            queue.shutdown();
        }))
    }

    /// Waits for every informer's sync, up to `timeout` each, or for a
    /// graceful shutdown (C3).
    async fn sync(
        &self,
        syncs: Vec<SyncWait>,
        timeout: std::time::Duration,
        stop: &Stop,
    ) -> Synced {
        let waits = pin!(future::try_join_all(
            syncs.into_iter().map(|wait| wait(timeout))
        ));
        let stopped = pin!(stop.graceful.cancelled());
        match future::select(waits, stopped).await {
            future::Either::Left((Ok(_), _)) => Synced::Yes,
            future::Either::Left((Err(error), _)) => Synced::Failed(error),
            future::Either::Right(((), _)) => Synced::Stopped,
        }
    }

    /// The one end of every run: the queue shuts down, and a factory the
    /// controller made is shut down too.
    async fn close(self) {
        self.queue.shutdown();
        if let (true, Some(factory)) = (self.own_factory, &self.factory) {
            factory.shutdown().await;
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

/// A spawned task, aborted when the stream that spawned it is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The controller's error inside the runner's: the runner reports a failed
/// reconcile, whose error is the controller's (with the action its policy
/// chose); its other variants carry nothing of the reconciler's and pass
/// through as they are.
fn unwrap_failed<E>(error: Error<Failed<E>>) -> Error<E> {
    match error {
        Error::Reconcile { error, .. } => error.error,
        Error::Panicked { key, message } => Error::Panicked { key, message },
        Error::ObjectNotFound { key } => Error::ObjectNotFound { key },
        Error::Sync(error) => Error::Sync(error),
        Error::Setup(error) => Error::Setup(error),
    }
}
