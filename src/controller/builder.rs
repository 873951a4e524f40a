//! [`Controller`]: what triggers reconciles, and how they run.

use std::{fmt, future::Future, sync::Arc, sync::OnceLock, time::Duration};

use futures::{FutureExt, Stream};
use kube::{Api, Resource};

use super::{
    settings::{Settings, SharedLimiter},
    shutdown::Shutdown,
    triggers::{KeyGate, SharedFilter, Trigger},
};
use crate::{
    ext::ChangeFilter,
    factory::InformerFactory,
    informer::{Informer, InformerBuilder},
    key::ObjectKey,
    metrics::{ControllerMetrics, ControllerRecorder, MetricsReader, WorkQueueMetrics},
    own_writes::WriteLog,
    queue::RateLimiter,
    source::Watchable,
    store::Store,
};

/// Runs a reconciler over the objects of one resource, triggered by their
/// changes, by changes of the objects they own, and by anything else mapped
/// to their keys, on informers shared through an [`InformerFactory`].
///
/// Build it with [`new`](Self::new) (or [`with_factory`](Self::with_factory)
/// to share a factory with the rest of the program, or
/// [`for_informer`](Self::for_informer) for an informer of one's own), add
/// triggers ([`owns`](Self::owns), [`watches`](Self::watches),
/// [`reconcile_on`](Self::reconcile_on),
/// [`reconcile_all_on`](Self::reconcile_all_on)), then
/// [`run`](Self::run): a stream with one item per reconcile, which drives
/// the controller while it is polled. See the [module docs](super) for the
/// rules it keeps.
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use futures::StreamExt;
/// use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
/// use kube::Api;
/// use kube_informer::{controller::Controller, runner::Action};
/// use kube_informer_testing::FakeApiServer;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot reconcile")]
/// struct Error;
///
/// async fn reconcile(deployment: Arc<Deployment>, _ctx: Arc<()>) -> Result<Action, Error> {
///     println!("reconciling {:?}", deployment.metadata.name);
///     Ok(Action::requeue(Duration::from_secs(300)))
/// }
///
/// fn error_policy(_deployment: Arc<Deployment>, _error: &Error, _ctx: Arc<()>) -> Action {
///     Action::backoff()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = FakeApiServer::start().await;
/// # let mut deployment = Deployment::default();
/// # deployment.metadata.namespace = Some("default".into());
/// # deployment.metadata.name = Some("web".into());
/// # server.create(&deployment)?;
/// # let client = server.client();
/// let stop = tokio_util::sync::CancellationToken::new();
/// let outcomes = Controller::new(Api::<Deployment>::all(client.clone()))
///     .owns(Api::<Pod>::all(client))
///     .graceful_shutdown_on(stop.clone().cancelled_owned())
///     .run(reconcile, error_policy, Arc::new(()));
/// # let mut outcomes = std::pin::pin!(outcomes);
/// # let first = outcomes.next().await.unwrap()?;
/// # assert_eq!(first.0.as_str(), "default/web");
/// # stop.cancel();
/// # while outcomes.next().await.is_some() {}
/// # Ok(()) }
/// ```
#[must_use = "a controller does nothing until run and polled"]
pub struct Controller<K: Resource> {
    /// The informer of the controller's objects: its store is readable
    /// before the controller runs; the run subscribes to it.
    pub(super) informer: Informer<K>,
    pub(super) dyntype: Arc<K::DynamicType>,
    /// Where the informers of `owns` and `watches` come from.
    pub(super) factory: Option<InformerFactory>,
    /// Whether the controller made `factory` (it then shuts it down when
    /// its stream ends).
    pub(super) own_factory: bool,
    /// Every trigger but the controller's own objects, subscribed when the
    /// controller runs.
    pub(super) triggers: Vec<Trigger>,
    /// What a change of the controller's own objects must pass (C2).
    pub(super) filter: Option<SharedFilter<K>>,
    pub(super) settings: Settings,
    pub(super) gate: Option<KeyGate>,
    /// The gate's log and deadline, when it is on (RW7).
    pub(super) own_writes: Option<(WriteLog, Duration)>,
    pub(super) shutdown: Shutdown,
    /// What went wrong while building, reported when the controller runs.
    pub(super) setup_errors: Vec<crate::informer::Error>,
    /// The reconcile metrics, readable before, during and after the run.
    pub(super) recorder: Arc<ControllerRecorder>,
    /// The work queue's metrics, once the run has made the queue.
    pub(super) queue_metrics: Arc<OnceLock<MetricsReader<WorkQueueMetrics>>>,
}

impl<K> Controller<K>
where
    K: Watchable,
    K::DynamicType: Default,
{
    /// A controller of `api`'s objects, on informers from a factory of its
    /// own (made with `api`'s client), which it starts when it runs and
    /// shuts down when its stream ends.
    pub fn new(api: Api<K>) -> Self {
        Self::new_with(api, K::DynamicType::default())
    }

    /// A controller of `api`'s objects whose informers come from `factory`,
    /// so the rest of the program (and other controllers) share its caches
    /// (C1). [`run`](Self::run) starts the factory's informers that are not
    /// started yet; the factory stays up when the stream ends.
    ///
    /// # Errors
    ///
    /// [`informer::Error::OptionsDiffer`](crate::informer::Error::OptionsDiffer)
    /// when the factory holds an informer of `api`'s resource built with
    /// other options.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{InformerFactory, controller::Controller};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let first = Controller::with_factory(&factory, Api::<ConfigMap>::all(factory.client()))?;
    /// let second = Controller::with_factory(&factory, Api::<ConfigMap>::all(factory.client()))?;
    /// assert_eq!(factory.len(), 1); // one informer, one cache, two controllers
    /// # drop((first, second));
    /// # Ok(()) }
    /// ```
    pub fn with_factory(
        factory: &InformerFactory,
        api: Api<K>,
    ) -> Result<Self, crate::informer::Error> {
        let informer = factory.build(api, |builder| builder)?;
        Ok(Self::from_parts(
            informer,
            Some((factory.clone(), false)),
            K::DynamicType::default(),
        ))
    }

    /// A controller of the objects `informer` caches. The caller runs the
    /// informer (the controller subscribes to it and waits for its sync);
    /// informers for [`owns`](Self::owns) and [`watches`](Self::watches)
    /// come from a factory the controller makes with the client of the
    /// first `Api` it is given.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{Informer, controller::Controller};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let informer = Informer::builder(Api::<ConfigMap>::all(server.client()))
    ///     .indexer("by-app", |cm: &ConfigMap| {
    ///         cm.metadata.labels.iter().flatten().filter(|(k, _)| *k == "app").map(|(_, v)| v.clone()).collect()
    ///     })
    ///     .build();
    /// let controller = Controller::for_informer(&informer);
    /// tokio::spawn(informer.run());
    /// # drop(controller);
    /// # }
    /// ```
    pub fn for_informer(informer: &Informer<K>) -> Self {
        Self::from_parts(informer.clone(), None, K::DynamicType::default())
    }
}

impl<K: Watchable> Controller<K> {
    /// As [`new`](Self::new), for a type whose resource is known only at
    /// run time (`DynamicObject` with its `ApiResource`).
    pub fn new_with(api: Api<K>, dyntype: K::DynamicType) -> Self {
        let factory = InformerFactory::new(api.clone().into_client());
        // A fresh factory holds no informer whose options could differ.
        let informer = factory
            .build(api.clone(), |builder| builder)
            .unwrap_or_else(|_| Informer::builder(api).build());
        Self::from_parts(informer, Some((factory, true)), dyntype)
    }

    /// A controller of `informer`'s objects; `factory` (and whether the
    /// controller made it) when the informer came from one.
    fn from_parts(
        informer: Informer<K>,
        factory: Option<(InformerFactory, bool)>,
        dyntype: K::DynamicType,
    ) -> Self {
        let (factory, own_factory) = match factory {
            Some((factory, own)) => (Some(factory), own),
            None => (None, false),
        };
        let name = K::kind(&dyntype).to_lowercase();
        Self {
            informer,
            dyntype: Arc::new(dyntype),
            factory,
            own_factory,
            triggers: Vec::new(),
            filter: None,
            settings: Settings::new(name),
            gate: None,
            own_writes: None,
            shutdown: Shutdown::default(),
            setup_errors: Vec::new(),
            recorder: Arc::new(ControllerRecorder::new(0)),
            queue_metrics: Arc::new(OnceLock::new()),
        }
    }

    /// The factory for the informers of `owns` and `watches`: the
    /// controller's, or one it makes now with `api`'s client.
    fn factory_for<W: Watchable>(&mut self, api: &Api<W>) -> InformerFactory {
        self.factory
            .get_or_insert_with(|| {
                self.own_factory = true;
                InformerFactory::new(api.clone().into_client())
            })
            .clone()
    }

    /// The shared informer of `api`, configured by `configure`; a refusal
    /// is kept for [`run`](Self::run) to report (C12).
    fn informer_for<W, F>(&mut self, api: Api<W>, configure: F) -> Option<Informer<W>>
    where
        W: Watchable,
        F: FnOnce(InformerBuilder<W>) -> InformerBuilder<W>,
    {
        let factory = self.factory_for(&api);
        match factory.build(api, configure) {
            Ok(informer) => Some(informer),
            Err(error) => {
                self.setup_errors.push(error);
                None
            }
        }
    }

    /// Reconciles an object when one of the objects it controls changes:
    /// each notification of `api`'s objects queues the key of their
    /// controller owner of this controller's type (the owner reference with
    /// `controller: true`, matched by group and kind, whatever served version
    /// it names), for the old and the new state of an update (C2).
    ///
    /// See the [type docs](Controller) for an example.
    pub fn owns<C: Watchable>(self, api: Api<C>) -> Self {
        self.owns_configured(api, |builder| builder)
    }

    /// As [`owns`](Self::owns), with the shared informer of `api` configured
    /// by `configure` (indexers, a transform,
    /// [`strip_managed_fields`](InformerBuilder::strip_managed_fields)), as
    /// [`InformerFactory::build`] takes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
    /// use kube::Api;
    /// use kube_informer::controller::Controller;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let controller = Controller::new(Api::<Deployment>::all(server.client()))
    ///     .owns_configured(Api::<Pod>::all(server.client()), |pods| pods.strip_managed_fields());
    /// # drop(controller);
    /// # }
    /// ```
    pub fn owns_configured<C, F>(mut self, api: Api<C>, configure: F) -> Self
    where
        C: Watchable,
        F: FnOnce(InformerBuilder<C>) -> InformerBuilder<C>,
    {
        if let Some(children) = self.informer_for(api, configure) {
            self.triggers
                .push(Trigger::owns::<K, C>(children, self.dyntype.clone()));
        }
        self
    }

    /// Reconciles the objects `mapper` names whenever one of `api`'s objects
    /// changes (for the old and the new state of an update), e.g. every
    /// object that refers to a changed Secret (C2).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    /// use kube::Api;
    /// use kube_informer::{ObjectKey, controller::Controller};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // Each namespace's "settings" ConfigMap follows its namespace's labels.
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client()))
    ///     .watches(Api::<Namespace>::all(server.client()), |ns: &Namespace| {
    ///         ns.metadata.name.as_deref().and_then(|name| ObjectKey::new(Some(name), "settings").ok())
    ///     });
    /// # drop(controller);
    /// # }
    /// ```
    pub fn watches<W, I, M>(self, api: Api<W>, mapper: M) -> Self
    where
        W: Watchable,
        I: IntoIterator<Item = ObjectKey>,
        M: Fn(&W) -> I + Send + Sync + 'static,
    {
        self.watches_configured(api, |builder| builder, mapper)
    }

    /// As [`watches`](Self::watches), with the shared informer of `api`
    /// configured by `configure`.
    pub fn watches_configured<W, I, M, F>(mut self, api: Api<W>, configure: F, mapper: M) -> Self
    where
        W: Watchable,
        I: IntoIterator<Item = ObjectKey>,
        M: Fn(&W) -> I + Send + Sync + 'static,
        F: FnOnce(InformerBuilder<W>) -> InformerBuilder<W>,
    {
        if let Some(watched) = self.informer_for(api, configure) {
            self.triggers.push(Trigger::watches(watched, mapper));
        }
        self
    }

    /// Reconciles every key `keys` yields (C2): any source of triggers, such
    /// as a subscription mapped by hand, a channel or a timer.
    /// kube-runtime's `Controller::reconcile_on`, with an [`ObjectKey`] for
    /// its `ObjectRef`.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{ObjectKey, controller::Controller};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let (poke, pokes) = futures::channel::mpsc::unbounded::<ObjectKey>();
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client())).reconcile_on(pokes);
    /// poke.unbounded_send("default/settings".parse().unwrap()).unwrap();
    /// # drop(controller);
    /// # }
    /// ```
    pub fn reconcile_on<S>(mut self, keys: S) -> Self
    where
        S: Stream<Item = ObjectKey> + Send + 'static,
    {
        self.triggers.push(Trigger::keys(keys));
        self
    }

    /// Reconciles every object in the cache each time `ticks` yields, e.g.
    /// after a configuration change that touches them all (C2).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::controller::Controller;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let hourly = futures::stream::unfold(tokio::time::interval(Duration::from_secs(3600)), |mut every| async {
    ///     every.tick().await;
    ///     Some(((), every))
    /// });
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client())).reconcile_all_on(hourly);
    /// # drop(controller);
    /// # }
    /// ```
    pub fn reconcile_all_on<S>(mut self, ticks: S) -> Self
    where
        S: Stream<Item = ()> + Send + 'static,
    {
        self.triggers
            .push(Trigger::every_key_on(self.informer.store(), ticks));
        self
    }

    /// Reconciles every object of the controller's cache again every
    /// `period` (C11): the informer's resync, as a client-go handler
    /// registered with a resync period gets it, through a subscription of
    /// the controller's own. The keys are queued low when
    /// [`priorities`](crate::queue::QueueConfig::priorities) are on (C10, [`Config::queue`](super::Config::queue)). Use it for state the
    /// controller cannot watch (an external system, a clock); every
    /// reconcile it triggers is an extra API read or write per object.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::controller::Controller;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // Every ConfigMap once more every ten minutes.
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client()))
    ///     .resync(Duration::from_secs(600));
    /// # drop(controller);
    /// # }
    /// ```
    pub fn resync(mut self, period: Duration) -> Self {
        self.triggers
            .push(Trigger::resync(self.informer.clone(), period));
        self
    }

    /// Queues a change of the controller's own objects only if `filter`
    /// passes it (C2); called again, every filter must pass. Additions
    /// and deletions always pass, and resyncs never reach it: the
    /// controller takes no resync (C2). Changes of owned and watched
    /// objects are not filtered (see
    /// [`ext::changed`](crate::ext::changed)). The
    /// [finalizer helper](crate::finalizer::finalizer) applies in the call
    /// that added its finalizer (Z9), so it needs no event of that write,
    /// which [`changed::generation()`](crate::ext::changed::generation)
    /// drops.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kube::Api;
    /// use kube_informer::{controller::Controller, ext::{ChangeFilter, changed}};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // Spec changes and label changes; status writes do not trigger.
    /// let controller = Controller::new(Api::<Deployment>::all(server.client()))
    ///     .filter_changes(changed::generation().or(changed::labels()));
    /// # drop(controller);
    /// # }
    /// ```
    pub fn filter_changes<P>(mut self, filter: P) -> Self
    where
        P: ChangeFilter<K> + Send + Sync + 'static,
    {
        let next: SharedFilter<K> = match self.filter.take() {
            None => Arc::new(move |old: &K, new: &K| filter.passes(old, new)),
            Some(before) => {
                Arc::new(move |old: &K, new: &K| before(old, new) && filter.passes(old, new))
            }
        };
        self.filter = Some(next);
        self
    }

    /// How the controller runs its reconciles: concurrency, debounce, the
    /// work queue's options, the sync timeout and the logging of failed
    /// reconciles, as one [`Config`](super::Config) (kube-runtime's
    /// `Controller::with_config`). Called again, the last config wins.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
    /// use kube::Api;
    /// use kube_informer::controller::{Config, Controller};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // A rollout changes many pods of one Deployment: one reconcile per
    /// // pause, at most four at once, failures logged by the controller.
    /// let controller = Controller::new(Api::<Deployment>::all(server.client()))
    ///     .owns(Api::<Pod>::all(server.client()))
    ///     .with_config(Config {
    ///         concurrency: 4,
    ///         debounce: Duration::from_secs(1),
    ///         reconcile_error_log: Some(tracing::Level::WARN),
    ///         ..Config::default()
    ///     });
    /// assert_eq!(controller.metrics().max_concurrent_reconciles, 4);
    /// # }
    /// ```
    pub fn with_config(mut self, config: super::Config) -> Self {
        self.recorder.set_max_concurrent(config.concurrency);
        self.settings.config = config;
        self
    }

    /// The rate limiter of the controller's work queue, which
    /// [`Action::Backoff`](crate::runner::Action::Backoff) (the default for
    /// failures) goes through; by default
    /// [`default_rate_limiter`](crate::queue::default_rate_limiter).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{controller::Controller, queue};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client()))
    ///     .rate_limiter(queue::item_exponential(Duration::from_millis(50), Duration::from_secs(60)));
    /// # drop(controller);
    /// # }
    /// ```
    pub fn rate_limiter<R: RateLimiter<ObjectKey> + 'static>(mut self, limiter: R) -> Self {
        self.settings.rate_limiter = Some(SharedLimiter::new(limiter));
        self
    }

    /// Reconciles only the keys `gate` owns (C9): a ring member's
    /// ([`Shard::gate`](crate::shard::Shard::gate)) or a leader's
    /// ([`Leadership::gate`](crate::shard::leader::Leadership)). Keys the
    /// replica acquires are queued; a key lost while it waited is dropped
    /// unreconciled; a handover waits for the reconcile of the key in
    /// flight. The caller runs the shard.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{controller::Controller, shard::{KeyGate, Ownership}};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let gate = KeyGate::new(Ownership::nothing()); // e.g. `shard.gate()`
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client())).shard(gate);
    /// # drop(controller);
    /// # }
    /// ```
    #[cfg(feature = "shard")]
    #[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
    pub fn shard(mut self, gate: KeyGate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Holds each key's reconcile until the controller's caches show the
    /// writes that `log` recorded under the key since its previous
    /// reconcile began, for at most `deadline` (RW7, RW8): a reconciler
    /// that writes through [`WriteLog::api`] then never acts on a cache
    /// that has not seen its own writes, such as creating a child twice
    /// because the child's informer had not delivered it yet.
    ///
    /// The caches waited on are those of the written object's resource
    /// (API group and plural) among the controller's own, its
    /// [`owns`](Self::owns) and its [`watches`](Self::watches); a write to
    /// a resource none of them caches is not waited for. A hold that
    /// reaches `deadline` lets the reconcile run and counts an expiry
    /// ([`ControllerMetrics::own_write_expiries`]); so does a write the
    /// caches will never show (outside an informer's namespace or
    /// selectors, deleted by someone else first, or an opaque
    /// resourceVersion that moved on, RW2). Pick `deadline` as the
    /// staleness the reconciler can bear, a few seconds for most.
    ///
    /// Give the [finalizer helper](crate::finalizer::finalizer) a
    /// [`RecordedApi`](crate::own_writes::RecordedApi) of `log` too: its
    /// patches are then waited for like any other write (Z10), and a
    /// deletion is cleaned up once (Z11).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use futures::StreamExt;
    /// use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
    /// use kube::{Api, api::PostParams};
    /// use kube_informer::{InformerFactory, ObjectKey, Store, controller::Controller, own_writes::WriteLog, runner::Action};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// struct Context {
    ///     writes: WriteLog,
    ///     configmaps: Api<ConfigMap>,
    ///     cache: Store<ConfigMap>,
    /// }
    ///
    /// /// Gives each Deployment a ConfigMap, made once.
    /// async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action, kube::Error> {
    ///     let parent = ObjectKey::from_object(&*deployment).expect("cached objects have keys");
    ///     let name = format!("{}-settings", parent.name());
    ///     if ctx.cache.get_by(parent.namespace(), &name).is_none() {
    ///         let mut settings = ConfigMap::default();
    ///         settings.metadata.name = Some(name);
    ///         // Recorded under the Deployment's key: its next reconcile
    ///         // waits until the cache holds this ConfigMap.
    ///         ctx.writes.api(ctx.configmaps.clone(), parent).create(&PostParams::default(), &settings).await?;
    ///     }
    ///     Ok(Action::await_change())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// # let mut web = Deployment::default();
    /// # web.metadata.namespace = Some("default".into());
    /// # web.metadata.name = Some("web".into());
    /// # server.create(&web)?;
    /// let factory = InformerFactory::new(server.client());
    /// let writes = WriteLog::new();
    /// let ctx = Arc::new(Context {
    ///     writes: writes.clone(),
    ///     configmaps: Api::namespaced(factory.client(), "default"),
    ///     cache: factory.build(Api::<ConfigMap>::all(factory.client()), |b| b)?.store(),
    /// });
    /// let outcomes = Controller::with_factory(&factory, Api::<Deployment>::all(factory.client()))?
    ///     .owns(Api::<ConfigMap>::all(factory.client()))
    ///     .read_own_writes(writes, Duration::from_secs(5))
    ///     .run(reconcile, |_deployment, _error, _ctx| Action::backoff(), ctx);
    /// let mut outcomes = std::pin::pin!(outcomes);
    /// assert_eq!(outcomes.next().await.unwrap()?.0.as_str(), "default/web");
    /// let names: Vec<_> = server.objects::<ConfigMap>().into_iter().filter_map(|cm| cm.metadata.name).collect();
    /// assert_eq!(names, ["web-settings"]);
    /// # Ok(()) }
    /// ```
    pub fn read_own_writes(mut self, log: WriteLog, deadline: Duration) -> Self {
        self.own_writes = Some((log, deadline));
        self
    }

    /// Stops on SIGINT or SIGTERM (C7): the first takes no new key and lets
    /// the reconciles that run finish, then the stream ends; a second
    /// abandons them.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::{Api, Client};
    /// use kube_informer::{controller::Controller, runner::Action};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// Controller::new(Api::<ConfigMap>::all(Client::try_default().await?))
    ///     .shutdown_on_signal()
    ///     .run(
    ///         |_cm, _ctx: Arc<()>| async { Ok::<_, kube::Error>(Action::await_change()) },
    ///         |_cm, _error, _ctx| Action::backoff(),
    ///         Arc::new(()),
    ///     )
    ///     .for_each(|_| async {})
    ///     .await;
    /// # Ok(()) }
    /// ```
    pub fn shutdown_on_signal(mut self) -> Self {
        self.shutdown.on_signal = true;
        self
    }

    /// Stops gracefully when `trigger` resolves (C7): no new key is taken,
    /// the reconciles that run finish, then the stream ends. See the
    /// [type docs](Controller) for an example.
    pub fn graceful_shutdown_on<F>(mut self, trigger: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.shutdown.graceful.push(trigger.boxed());
        self
    }

    /// The name on the controller's spans, logs and metrics; by default
    /// the kind in lower case, e.g. `deployment`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.settings.name = name.into();
        self
    }

    /// The cache of the controller's objects.
    pub fn store(&self) -> Store<K> {
        self.informer.store()
    }

    /// The reconcile metrics now (C8).
    ///
    /// [`run`](Self::run) takes the controller, so to read them while and
    /// after it runs, convert it into a [`MetricsReader`] first, or hand
    /// `&controller` to
    /// `metrics::register` (feature `prometheus`), once for its reconciles
    /// and once for its work queue's metrics: see
    /// the `From<&Controller>` impls of [`MetricsReader`].
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::controller::Controller;
    /// use kube_informer::metrics::{ControllerMetrics, MetricsReader, WorkQueueMetrics};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let controller = Controller::new(Api::<ConfigMap>::all(server.client()));
    /// assert_eq!(controller.metrics().reconciles.total(), 0);
    /// // Readers that read on once `run` has taken the controller.
    /// let reconciles = MetricsReader::<ControllerMetrics>::from(&controller);
    /// let queue = MetricsReader::<WorkQueueMetrics>::from(&controller);
    /// assert!(reconciles.read().is_some());
    /// assert!(queue.read().is_none()); // the queue is made when it runs
    /// # }
    /// ```
    pub fn metrics(&self) -> ControllerMetrics {
        self.recorder.snapshot()
    }
}

/// A reader of the controller's reconcile metrics (C8), for
/// `metrics::register` or an endpoint of one's
/// own; it reads on after the controller has run.
impl<K: Resource> From<&Controller<K>> for MetricsReader<ControllerMetrics> {
    fn from(controller: &Controller<K>) -> Self {
        let recorder = controller.recorder.clone();
        MetricsReader::new(move || Some(recorder.snapshot()))
    }
}

/// A reader of the controller's work-queue metrics (client-go's workqueue
/// metrics), for `metrics::register` or an endpoint of one's
/// own. The queue is made when the controller runs: the reader reads
/// `None` before, and reads on after the controller has run.
impl<K: Resource> From<&Controller<K>> for MetricsReader<WorkQueueMetrics> {
    fn from(controller: &Controller<K>) -> Self {
        let slot = controller.queue_metrics.clone();
        MetricsReader::new(move || slot.get().and_then(MetricsReader::read))
    }
}

impl<K: Resource> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("settings", &self.settings)
            .field("triggers", &self.triggers)
            .field("filtered", &self.filter.is_some())
            .field("sharded", &self.gate.is_some())
            .field("read_own_writes", &self.own_writes.as_ref().map(|(_, d)| d))
            .field("shutdown", &self.shutdown)
            .field("setup_errors", &self.setup_errors)
            .finish_non_exhaustive()
    }
}
