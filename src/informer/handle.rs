//! [`Informer`]: the cheap handle users clone, subscribe with and stop.

use std::{
    any::Any,
    fmt,
    sync::{Arc, Weak},
    time::Duration,
};

use futures::stream::FusedStream;
use kube::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) use super::parts::Parts;
use super::{
    core::{Core, Share},
    error::Error,
    known_objects::StoreKnownObjects,
    report::ErrorReporter,
    run,
    subscribe_route::SubscribeRoute,
    sync_progress::SyncProgress,
    sync_wait,
};
use crate::{
    dispatch::{Distributor, Life, SubscribeOptions, SubscribeRequest, Subscription, UpstreamSync},
    fifo::{DeltaFifo, FifoOptions},
    metrics::{InformerMetrics, MetricsReader},
    resource::WatchedResource,
    store::{Owner, Store, Writer},
    sync_error::SyncError,
};

/// A shared, indexed, watched cache of one kind of Kubernetes object, with
/// any number of subscribers.
///
/// Build one with [`Informer::builder`] (list/watch through a
/// [`kube::Api`]) or [`Informer::builder_from_stream`] (any stream of
/// [`source::Event`](crate::source::Event)s), then poll [`Informer::run`]
/// (usually `tokio::spawn(informer.run())`). Subscribe with
/// [`Informer::subscribe`] before or while it runs; read the cache with
/// [`Informer::store`].
///
/// Cloning is cheap and every clone is the same informer.
///
/// # Lifetime
///
/// L8: an informer lives while something can observe it, and no longer.
/// Every [`Informer`] clone, every [`Store`] from [`Informer::store`] (and
/// its clones and [`NamespacedStore`](crate::store::NamespacedStore)s),
/// every [`Subscription`] and every stream of [`errors`](Informer::errors)
/// holds a share of its lifetime, so a helper may build an informer, spawn
/// its `run` and return only its store, or a store and a subscription: the
/// informer keeps running and the store keeps filling.
///
/// It stops, ending every subscription and error stream and releasing every
/// sync waiter (L6, L7), at the first of:
///
/// - [`Informer::stop`], or the builder's
///   [`cancellation_token`](super::InformerBuilder::cancellation_token) cancelled;
/// - the end of its source (after handing out what was queued);
/// - user code it cannot skip panicking (L9, see
///   [`Callback`](super::Callback));
/// - the future [`Informer::run`] returned dropped once polled;
/// - the last share dropped: no handle, store, subscription or error stream
///   left.
///
/// The `run` future holds no share, so spawning it keeps nothing alive. A
/// share held by the informer's own user code (an `on_error` callback or a
/// transform that captured an `Informer` or its `Store`) keeps it alive
/// until it is stopped by one of the other ways. A [`Store`] built from a
/// [`Writer`] belongs to no informer and holds no share.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
/// use kube_informer::{Informer, Notification, dispatch::SubscribeOptions, source::Event};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cm = |name: &str| ConfigMap {
///     metadata: ObjectMeta {
///         namespace: Some("default".into()),
///         name: Some(name.into()),
///         resource_version: Some("1".into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// let events = futures::stream::iter([
///     Ok::<_, std::io::Error>(Event::ListStart),
///     Ok(Event::Listed(cm("a"))),
///     Ok(Event::ListDone { resource_version: "1".into() }),
///     Ok(Event::Added(cm("b"))),
/// ]);
/// let informer = Informer::builder_from_stream(events).build();
/// let mut subscription = informer.subscribe(SubscribeOptions::default())?;
/// tokio::spawn(informer.run());
///
/// let mut seen = Vec::new();
/// while let Some(notification) = subscription.next().await {
///     if let Notification::Added { object, in_initial_list } = notification {
///         seen.push((object.metadata.name.clone().unwrap(), in_initial_list));
///     }
/// }
/// assert_eq!(seen, [("a".to_string(), true), ("b".to_string(), false)]);
/// assert_eq!(informer.store().len(), 2);
/// # Ok(()) }
/// ```
pub struct Informer<K> {
    share: Arc<Share<K>>,
}

impl<K> Informer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// What this informer did and holds now: its source's requests,
    /// events, relists and errors, its FIFO's and store's sizes, and every
    /// open subscription's [`stats`](crate::Subscription::stats). See the
    /// [`metrics`](crate::metrics) module and `METRICS.md`.
    ///
    /// To read them later or elsewhere (a scrape, a collector), convert the
    /// informer into a [`MetricsReader`] (`MetricsReader::from(&informer)`),
    /// or hand `&informer` to
    /// `metrics::register` (feature `prometheus`): the reader holds no
    /// share of the informer's lifetime.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, SubscribeOptions, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::informer::Error> {
    /// let events = futures::stream::iter([
    ///     Ok::<_, std::io::Error>(Event::<ConfigMap>::ListStart),
    ///     Ok(Event::ListDone { resource_version: "1".into() }),
    /// ]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let _audit = informer.subscribe(SubscribeOptions::default().name("audit"))?;
    /// informer.run().await?;
    /// let metrics = informer.metrics();
    /// assert!(metrics.store.synced);
    /// assert_eq!(metrics.subscriptions[0].name, "audit");
    /// # Ok(()) }
    /// ```
    pub fn metrics(&self) -> InformerMetrics {
        super::metrics::read(self.core())
    }

    pub(crate) fn from_parts(parts: Parts<K>) -> Self {
        let writer = Writer::with_codec(parts.indexers, parts.cache);
        let store = writer.reader();
        let distributor = Distributor::new(parts.resync_check_period, store.watch_synced());
        let mut options =
            FifoOptions::default().known_objects(Arc::new(StoreKnownObjects(store.clone())));
        options.key_fn = parts.key_fn;
        options.transform = parts.transform;
        let stop = match parts.cancel {
            Some(token) => token.child_token(),
            None => CancellationToken::new(),
        };
        let core = Core {
            writer,
            store,
            fifo: DeltaFifo::new(options),
            life: Life::new(stop),
            reporter: ErrorReporter::new(parts.on_error),
            sync_progress: SyncProgress::new(),
            route: Mutex::new(SubscribeRoute::Unstarted {
                events: parts.events,
                distributor,
            }),
            resource: parts.resource.unwrap_or_else(WatchedResource::of_type::<K>),
            metrics: crate::metrics::InformerRecorder::new(parts.source_metrics),
        };
        Self {
            share: Arc::new(Share {
                core: Arc::new(core),
            }),
        }
    }

    pub(super) fn core(&self) -> &Arc<Core<K>> {
        &self.share.core
    }

    /// A share of this informer's lifetime (L8), for a holder that does not
    /// know `K`: the informer keeps running while any share is held.
    pub(crate) fn liveness(&self) -> Arc<dyn Any + Send + Sync> {
        self.share.erased()
    }

    /// Drives the informer: lists and watches, fills the store, notifies
    /// every subscriber, resyncs on time. Resolves once stopped.
    ///
    /// The future does not borrow or hold the handle, so
    /// `tokio::spawn(informer.run())` works and does not keep the informer
    /// alive. Runs once: a second call resolves to
    /// [`Error::AlreadyRunning`]. Errors met while running do not end it;
    /// they go to [`Informer::errors`].
    ///
    /// After [`stop`](Informer::stop) (or a cancelled token) with no `run`
    /// yet, it resolves at once to `Ok(())` (L7). If user code the informer
    /// runs panics in a way it cannot skip, it resolves to
    /// [`Error::Panicked`] after ending every subscription (L9).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future once it has been polled stops the informer as
    /// [`Informer::stop`] would. A future dropped before its first poll
    /// started nothing, and `run` may be called again.
    pub fn run(&self) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        run::run(Arc::clone(self.core()))
    }

    /// A read-only handle on the informer's cache; the informer keeps the
    /// only writer.
    ///
    /// The store, and every clone of it (a
    /// [`NamespacedStore`](crate::store::NamespacedStore) included), holds a
    /// share of the informer's lifetime, as a subscription does: while it is
    /// held the informer keeps running and the store keeps filling, even
    /// with every `Informer` handle dropped (see
    /// [Lifetime](crate::Informer#lifetime)).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, source::Event, store::Store};
    ///
    /// // A helper that keeps only the cache and lets the handle go.
    /// fn cached_configmaps(
    ///     events: Vec<Result<Event<ConfigMap>, std::io::Error>>,
    /// ) -> Store<ConfigMap> {
    ///     let informer = Informer::builder_from_stream(futures::stream::iter(events)).build();
    ///     tokio::spawn(informer.run());
    ///     informer.store()
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut cm = ConfigMap::default();
    /// cm.metadata = ObjectMeta {
    ///     namespace: Some("default".into()),
    ///     name: Some("app".into()),
    ///     ..Default::default()
    /// };
    /// let store = cached_configmaps(vec![
    ///     Ok(Event::ListStart),
    ///     Ok(Event::Listed(cm)),
    ///     Ok(Event::ListDone { resource_version: "1".into() }),
    /// ]);
    /// store.wait_until_synced().await; // the store kept the informer running
    /// assert_eq!(store.len(), 1);
    /// # }
    /// ```
    pub fn store(&self) -> Store<K> {
        self.core()
            .store
            .keeping_alive(Arc::clone(&self.share) as Arc<dyn Owner>)
    }

    /// A new subscriber: a stream of [`Notification`](crate::Notification)s.
    ///
    /// Callable at any time from any task. Before `run`, the subscriber sees
    /// the initial list as it arrives; while running, it first gets the
    /// whole cache as `Added { in_initial_list: true }`, then live changes,
    /// never interleaved (L1). After the informer stopped, or was asked to
    /// stop (even before `run`), it is refused with [`Error::Stopped`] (L6,
    /// L7). The subscription holds a share of the informer's lifetime (L8).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, dispatch::{Lag, SubscribeOptions}, source::Event};
    ///
    /// let informer = Informer::<ConfigMap>::builder_from_stream(
    ///     futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>(),
    /// )
    /// .build();
    /// let subscription = informer.subscribe(
    ///     SubscribeOptions::default()
    ///         .resync(Duration::from_secs(60))
    ///         .lag(Lag::Coalesce),
    /// )?;
    /// # drop(subscription);
    /// # Ok::<(), kube_informer::informer::Error>(())
    /// ```
    pub fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription<K>, Error> {
        let core = self.core();
        let mut route = core.route.lock();
        let mut subscription = match &mut *route {
            // L7: asked to stop with no `run`, it will never run.
            SubscribeRoute::Unstarted { .. } if core.life.stop_requested() => {
                return Err(Error::Stopped);
            }
            SubscribeRoute::Unstarted { distributor, .. } => distributor.subscribe(options, []),
            SubscribeRoute::Running { requests } => {
                let (subscription, request) = SubscribeRequest::new(options);
                requests.send(request).map_err(|_| Error::Stopped)?;
                subscription
            }
            SubscribeRoute::Released => return Err(Error::Stopped),
        };
        drop(route);
        let upstream: Arc<dyn UpstreamSync> = Arc::clone(core) as _;
        subscription.attach(
            self.liveness(),
            Arc::clone(&core.life),
            Arc::downgrade(&upstream),
        );
        core.metrics.subscribed(subscription.stats_probe());
        Ok(subscription)
    }

    /// Whether the first full list has been applied to the store.
    pub fn has_synced(&self) -> bool {
        self.core().store.has_synced()
    }

    /// Waits until [`has_synced`](Informer::has_synced), and says why not
    /// when the informer cannot get there:
    ///
    /// - `Ok(())` once the informer synced, also if it had already,
    ///   whatever errors came before (I6);
    /// - [`SyncError::Refused`] (401, 403) or [`SyncError::NotFound`]
    ///   (404) as soon as the source's latest answer before the first sync
    ///   is one of those, also if it came before this call (I7). The
    ///   informer keeps running and retrying (R9): once a later list is
    ///   answered (the RBAC rule or the CustomResourceDefinition was
    ///   added), a new call waits again and may succeed; until then a new
    ///   call returns the refusal at once;
    /// - [`SyncError::Stopped`] if the informer ends before it synced,
    ///   whether or not `run` was ever polled (I9, L7).
    ///
    /// Through any other source error (a 500, a dropped watch) it waits on,
    /// as the informer retries. It has no deadline of its own (I12): wrap it
    /// in [`tokio::time::timeout`], and when that passes,
    /// [`last_error`](Self::last_error) is what the source reported last
    /// (I8). An informer [from a stream](Self::builder_from_stream) has no
    /// HTTP answers of its own: it gets `Stopped` only, unless its stream
    /// yields [`source::Error`](crate::source::Error)s (see [`SyncError`]).
    ///
    /// Waiting costs the informer nothing per event: the source's errors
    /// and the start of each relist are all it records for waiters.
    ///
    /// Cancel-safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, api::DynamicObject, core::{ApiResource, GroupVersionKind}};
    /// use kube_informer::{Informer, informer::SyncError};
    /// use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), SyncError> {
    /// let server = FakeApiServer::start().await;
    /// let configmaps = Informer::builder(Api::<ConfigMap>::all(server.client())).build();
    /// tokio::spawn(configmaps.run());
    /// configmaps.wait_until_synced().await?;
    ///
    /// // A custom resource whose CustomResourceDefinition is not installed.
    /// let widgets = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    /// let widgets = Informer::builder(Api::<DynamicObject>::all_with(server.client(), &widgets)).build();
    /// tokio::spawn(widgets.run());
    /// let error = widgets.wait_until_synced().await.unwrap_err();
    /// assert!(matches!(error, SyncError::NotFound { .. }));
    /// assert!(error.to_string().starts_with("widgets.example.com is not served"), "{error}");
    ///
    /// // A deadline of one's own, and what the source said last when it passes.
    /// server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    /// let slow = Informer::builder(Api::<ConfigMap>::namespaced(server.client(), "slow")).build();
    /// tokio::spawn(slow.run());
    /// match tokio::time::timeout(Duration::from_secs(30), slow.wait_until_synced()).await {
    ///     Ok(synced) => synced?,
    ///     Err(_elapsed) => {
    ///         let last = slow.last_error().expect("the list failed");
    ///         eprintln!("not synced after 30s; last error: {last}");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_until_synced(&self) -> std::result::Result<(), SyncError> {
        sync_wait::wait_for_sync(self.core(), None, Duration::MAX).await
    }

    /// The last error the informer's source reported, if it reported one,
    /// also after later successes: what to print when a
    /// [`wait_until_synced`](Self::wait_until_synced) wrapped in a timeout
    /// gives up (I8). Every error also goes to [`errors`](Self::errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let events = futures::stream::iter([
    ///     Err(std::io::Error::other("connection reset")),
    ///     Ok(Event::<ConfigMap>::ListStart),
    ///     Ok(Event::ListDone { resource_version: "1".into() }),
    /// ]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// assert!(informer.last_error().is_none());
    /// informer.run().await.unwrap();
    /// assert_eq!(informer.last_error().unwrap().to_string(), "the event stream failed");
    /// # }
    /// ```
    pub fn last_error(&self) -> Option<Error> {
        self.core().sync_progress.last_error()
    }

    /// The wait with a timeout of its own, for the waits that take one (a
    /// controller's sync timeout): [`SyncError::TimedOut`] when it passes,
    /// with the source's last error as its source (I8). A timeout too long
    /// for the clock (`Duration::MAX`) means no deadline.
    #[cfg(feature = "controller")]
    pub(crate) async fn wait_for_sync(
        &self,
        timeout: Duration,
    ) -> std::result::Result<(), SyncError> {
        // `None`, no deadline, for a timeout the clock cannot hold.
        let deadline = tokio::time::Instant::now().checked_add(timeout);
        sync_wait::wait_for_sync(self.core(), deadline, timeout).await
    }

    /// The resourceVersion of the last complete relist, once there was one
    /// (client-go's `LastSyncResourceVersion`).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let events = futures::stream::iter([
    ///     Ok::<_, std::io::Error>(Event::<ConfigMap>::ListStart),
    ///     Ok(Event::ListDone { resource_version: "42".into() }),
    /// ]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// assert_eq!(informer.last_sync_resource_version(), None);
    /// informer.run().await.unwrap();
    /// assert_eq!(informer.last_sync_resource_version().as_deref(), Some("42"));
    /// # }
    /// ```
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.core().fifo.last_sync_resource_version()
    }

    /// Stops the informer: `run` resolves, subscriptions end after what was
    /// already queued for them, error streams end, sync waiters return,
    /// later subscriptions are refused. It works the same whether or not
    /// `run` was ever polled (L7).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, dispatch::{EndReason, SubscribeOptions}, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let informer = Informer::<ConfigMap>::builder_from_stream(
    ///     futures::stream::pending::<Result<Event<ConfigMap>, std::io::Error>>(),
    /// )
    /// .build();
    /// let mut subscription = informer.subscribe(SubscribeOptions::default())?;
    /// informer.stop(); // `run` was never polled
    /// assert!(subscription.next().await.is_none());
    /// assert_eq!(subscription.end_reason(), Some(EndReason::Stopped));
    /// assert!(informer.wait_until_synced().await.is_err());
    /// assert!(informer.subscribe(SubscribeOptions::default()).is_err());
    /// # Ok(()) }
    /// ```
    pub fn stop(&self) {
        let core = self.core();
        core.life.stop();
        core.release_unrun();
    }

    /// Whether the informer was asked to stop or has stopped.
    pub fn is_stopped(&self) -> bool {
        let life = &self.core().life;
        life.stop_requested() || life.is_ended()
    }

    /// Every error met while running from now on (source failures, objects
    /// the queue refused), until the informer stops (R9); the stream then
    /// ends, and stays ended.
    ///
    /// Errors queue without bound until read; drop the stream if you stop
    /// reading. It holds a share of the informer's lifetime (see
    /// [Lifetime](Informer#lifetime)).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let events = futures::stream::iter([Err::<Event<ConfigMap>, _>(std::io::Error::other("boom"))]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let errors = informer.errors();
    /// informer.run().await.unwrap();
    /// let errors: Vec<_> = errors.collect().await;
    /// assert_eq!(errors.len(), 1);
    /// assert_eq!(informer.metrics().errors, 1);
    /// # }
    /// ```
    pub fn errors(&self) -> impl FusedStream<Item = Error> + Send + Unpin + 'static {
        let core = self.core();
        core.reporter
            .listen(self.liveness(), Arc::clone(&core.life))
    }
}

/// A reader of the informer's [`metrics`](Informer::metrics) from anywhere,
/// without keeping the informer alive: it reads `None` once the informer is
/// gone.
impl<K> From<&Informer<K>> for MetricsReader<InformerMetrics>
where
    K: Resource + Send + Sync + 'static,
{
    fn from(informer: &Informer<K>) -> Self {
        let core: Weak<Core<K>> = Arc::downgrade(informer.core());
        MetricsReader::new(move || core.upgrade().map(|core| super::metrics::read(&core)))
    }
}

/// A handle on an informer that holds no share of its lifetime (L8): the
/// factory's memory of an informer it released.
pub(crate) struct WeakInformer<K> {
    share: Weak<Share<K>>,
}

impl<K> WeakInformer<K> {
    /// The informer, while something still holds a share of it.
    pub(crate) fn upgrade(&self) -> Option<Informer<K>> {
        self.share.upgrade().map(|share| Informer { share })
    }

    /// Whether something still holds a share of the informer.
    pub(crate) fn is_alive(&self) -> bool {
        self.share.strong_count() > 0
    }
}

impl<K> Informer<K> {
    /// A handle that does not keep the informer alive.
    pub(crate) fn downgrade(&self) -> WeakInformer<K> {
        WeakInformer {
            share: Arc::downgrade(&self.share),
        }
    }

    /// What the informer lists and watches.
    pub(crate) fn watched_resource(&self) -> &WatchedResource {
        &self.share.core.resource
    }

    /// Whether both handles are on one informer.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.share, &other.share)
    }
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Self {
            share: Arc::clone(&self.share),
        }
    }
}

impl<K> fmt::Debug for Informer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = &self.share.core;
        f.debug_struct("Informer")
            .field("resource", &format_args!("{}", core.resource))
            .field("cached", &core.store.len())
            .field("synced", &core.store.has_synced())
            .field("stopped", &core.life.stop_requested())
            .field("errors", &core.reporter.count())
            .finish()
    }
}
