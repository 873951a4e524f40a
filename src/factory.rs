//! [`InformerFactory`]: one shared [`Informer`] per resource type, namespace
//! and selectors, for a whole program.
//!
//! Controllers in one program often watch the same resources; each watch
//! costs the API server a list and a connection and costs the program a
//! cache. The factory hands every caller asking for the same
//! (type, resource, namespace, label selector, field selector) the same
//! informer, starts them together and waits for them to sync together.
//!
//! # The sharing key
//!
//! Two requests share an informer when they agree on all of:
//!
//! - the Rust type of the cached objects (so a metadata-only informer,
//!   `PartialObjectMeta<K>`, and a full one on `K` are two informers);
//! - the [`WatchedResource`]: the resource and namespace, as the `Api`'s
//!   URL says them (`/api/v1/namespaces/default/pods`,
//!   `/apis/apps/v1/deployments`), and the label selector and the field
//!   selector, as strings.
//!
//! Everything else a builder can set (indexers, transform,
//! `strip_managed_fields`, key function, resync check period, the other
//! list/watch settings) is not part of the key but must agree: a request
//! for an existing key with other options is refused with
//! [`Error::OptionsDiffer`] rather than handed an informer that ignores
//! them. Functions (index functions, transforms, key functions) cannot be
//! compared, so they agree when both requests set them (or both do not);
//! the first request's functions are the ones that run.
//!
//! # Defaults
//!
//! - **FA5** A factory made [`with_defaults`](InformerFactory::with_defaults)
//!   applies its [`Defaults`] to every builder before the request's
//!   `configure` closure runs (full and metadata-only informers alike), so
//!   the closure can keep, add to or replace them; the options compared for
//!   sharing are those the builder ends with.
//!
//! # A stopped informer
//!
//! - **FA1** An informer of the factory that has stopped (its `stop` was
//!   called, its token cancelled, or its `run` ended) is not handed out
//!   again: the next request for its key gets a new informer, built from
//!   that request's options, which the next [`start`](InformerFactory::start)
//!   runs. After [`shutdown`](InformerFactory::shutdown) every request gets
//!   a stopped informer, as before.
//!
//! # Lifetimes
//!
//! The factory holds a handle on each of its informers, so an informer it
//! built runs until [`shutdown`](InformerFactory::shutdown), its own stop,
//! or one of these:
//!
//! - **FA2** [`release`](InformerFactory::release) lets go of one informer:
//!   the factory's handle and the caller's are dropped, and the informer
//!   stops when nothing else holds it (L8: no other `Informer` clone,
//!   `Store`, subscription or error stream), at once if nothing does. Until
//!   it stops the factory remembers it without keeping it alive: a request
//!   for its key gets it back, and `shutdown` stops it; `len` and the sync
//!   waits leave it out. Once stopped, the next request gets a new one
//!   (FA1).
//! - **FA3** Dropping the last factory handle drops the factory's handles
//!   and nothing else: an informer a user still holds keeps running (its
//!   spawned `run` goes on), one nothing holds stops (L8).
//! - **FA4** [`shutdown`](InformerFactory::shutdown) stops every informer
//!   the factory started or handed out that still runs, released ones
//!   included, and waits for the `run` of those it started.
//!
//! # Waiting
//!
//! [`InformerFactory::wait_for_cache_sync`] waits for every informer to
//! sync as long as it takes; [`InformerFactory::wait_for_sync`] takes one
//! timeout for all of them and fails fast, with the first
//! [`SyncError`] any of them meets (I10; the rules of one informer's wait,
//! I6–I9, are in the [`informer`](crate::informer#waiting-for-the-first-sync)
//! module).

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    fmt,
    sync::Arc,
    time::Duration,
};

use futures::{
    StreamExt,
    future::{BoxFuture, FutureExt, join_all, try_join_all},
    stream::FuturesUnordered,
};
use kube::{Api, Client, Resource, core::PartialObjectMeta};
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};

use crate::{
    informer::{
        self, Defaults, FromApi, Informer, InformerBuilder, Options, SyncError, WeakInformer,
    },
    resource::WatchedResource,
    source,
};

/// Errors of the [`InformerFactory`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An informer with this sharing key exists and was built with other
    /// options; the request was refused rather than ignored.
    #[error(
        "an informer for {resource} exists with other options (existing: {existing}; requested: {requested})"
    )]
    OptionsDiffer {
        /// The list/watch URL of the resource, with its selectors.
        resource: String,
        /// The options the existing informer was built with.
        existing: String,
        /// The options this request asked for.
        requested: String,
    },
}

/// What makes two informers the same informer (the module docs' sharing
/// key): the resource an informer watches, as every stage names it, and
/// the Rust type it caches, which the resource alone does not say (a
/// metadata-only informer watches the same resource as a full one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    resource: WatchedResource,
}

impl InformerKey {
    /// The resource URL with its selectors, for messages.
    fn describe(&self) -> String {
        let mut text = self.resource.path();
        for (name, selector) in [
            ("labelSelector", &self.resource.label_selector),
            ("fieldSelector", &self.resource.field_selector),
        ] {
            if let Some(selector) = selector {
                text.push_str(&format!(" {name}={selector:?}"));
            }
        }
        text
    }
}

/// The type-erased operations the factory applies to all its informers.
trait ManagedInformer: Send + Sync {
    fn run(&self) -> BoxFuture<'static, informer::Result<()>>;
    fn wait_until_synced(&self) -> BoxFuture<'static, bool>;
    fn wait_for_sync(
        &self,
        deadline: Option<Instant>,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<(), SyncError>>;
    fn stop(&self);
    fn is_stopped(&self) -> bool;
    fn as_any(&self) -> &dyn Any;
}

impl<K> ManagedInformer for Informer<K>
where
    K: Resource + Send + Sync + 'static,
{
    fn run(&self) -> BoxFuture<'static, informer::Result<()>> {
        Informer::run(self).boxed()
    }

    fn wait_until_synced(&self) -> BoxFuture<'static, bool> {
        let informer = self.clone();
        async move { informer.synced_or_ended().await }.boxed()
    }

    fn wait_for_sync(
        &self,
        deadline: Option<Instant>,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<(), SyncError>> {
        let informer = self.clone();
        async move { informer.wait_for_sync_until(deadline, timeout).await }.boxed()
    }

    fn stop(&self) {
        Informer::stop(self);
    }

    fn is_stopped(&self) -> bool {
        Informer::is_stopped(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The factory's memory of an informer it released (FA2): no share of its
/// lifetime.
trait ReleasedInformer: Send + Sync {
    /// The informer, held again, while something else still holds it.
    fn upgrade(&self) -> Option<Box<dyn ManagedInformer>>;
    fn is_alive(&self) -> bool;
}

impl<K> ReleasedInformer for WeakInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    fn upgrade(&self) -> Option<Box<dyn ManagedInformer>> {
        WeakInformer::upgrade(self).map(|informer| Box::new(informer) as Box<dyn ManagedInformer>)
    }

    fn is_alive(&self) -> bool {
        WeakInformer::is_alive(self)
    }
}

/// How the factory holds one of its informers.
enum Hold {
    /// With a handle: the informer lives at least as long as the factory.
    Held(Box<dyn ManagedInformer>),
    /// Released (FA2): it lives while its users hold it, no longer.
    Released(Box<dyn ReleasedInformer>),
}

struct Entry {
    key: InformerKey,
    /// What the informer was built with, for comparing later requests.
    options: Options,
    hold: Hold,
    task: Option<JoinHandle<informer::Result<()>>>,
}

impl Entry {
    /// The informer if the factory holds it.
    fn held(&self) -> Option<&dyn ManagedInformer> {
        match &self.hold {
            Hold::Held(informer) => Some(&**informer),
            Hold::Released(_) => None,
        }
    }

    /// Whether the informer may still run: held, or released and held by
    /// someone else.
    fn is_alive(&self) -> bool {
        match &self.hold {
            Hold::Held(_) => true,
            Hold::Released(released) => released.is_alive(),
        }
    }
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    by_key: HashMap<InformerKey, usize>,
    shut_down: bool,
}

impl State {
    /// Drops the entries of released informers that stopped.
    fn prune(&mut self) {
        if self.entries.iter().all(Entry::is_alive) {
            return;
        }
        self.entries.retain(Entry::is_alive);
        self.by_key = self
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.key.clone(), index))
            .collect();
    }
}

/// Shares one [`Informer`] per (resource type, namespace, selectors) across
/// a program; see [the module docs](self) for the sharing key.
///
/// Ask for informers with [`build`](Self::build) (any [`Api`]: namespaced,
/// cluster-wide, dynamic objects; its closure sets what a builder sets, or
/// returns the builder as it is) and [`build_metadata`](Self::build_metadata)
/// (metadata only); then [`start`](Self::start)
/// them on tokio and [`wait_for_cache_sync`](Self::wait_for_cache_sync).
/// Informers asked for after `start` are started by the next `start`.
/// Cloning the factory is cheap and shares its informers. The factory holds
/// each of its informers until [`shutdown`](Self::shutdown) or
/// [`release`](Self::release); dropping the last factory handle lets go of
/// them all, stopping those that nothing else holds, while those a user
/// still holds keep running (FA3, L8).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// use kube::Api;
/// use kube_informer::{InformerFactory, source};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let factory = InformerFactory::new(server.client());
/// let configmaps = factory.build(Api::<ConfigMap>::namespaced(server.client(), "default"), |b| b)?;
/// let same = factory.build(Api::<ConfigMap>::namespaced(server.client(), "default"), |b| b)?;
/// let by_app = factory.build(Api::<ConfigMap>::all(server.client()), |builder| {
///     builder.strip_managed_fields().indexer("by-app", |cm: &ConfigMap| {
///         cm.metadata.labels.iter().flatten()
///             .filter(|(k, _)| *k == "app").map(|(_, v)| v.clone()).collect()
///     })
/// })?;
/// let namespaces = factory.build(Api::<Namespace>::all(server.client()), |builder| {
///     builder.source_config(source::Config::default().page_size(100))
/// })?;
/// assert_eq!(factory.len(), 3);
/// factory.start();
/// assert!(factory.wait_for_cache_sync().await);
/// println!(
///     "{} config maps in default, {} by app, {} namespaces",
///     configmaps.store().len(),
///     by_app.store().index_values("by-app")?.len(),
///     namespaces.store().len(),
/// );
/// # drop(same);
/// factory.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InformerFactory {
    client: Client,
    defaults: Arc<Defaults>,
    state: Arc<FactoryState>,
}

struct FactoryState {
    inner: Mutex<State>,
}

impl InformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client) -> Self {
        Self::with_defaults(client, Defaults::new())
    }

    /// A factory whose informers list and watch through `client` and start
    /// from `defaults` (FA5): settings every informer of the program
    /// shares, set once.
    ///
    /// See [`Defaults`] for an example.
    pub fn with_defaults(client: Client, defaults: Defaults) -> Self {
        Self {
            client,
            defaults: Arc::new(defaults),
            state: Arc::new(FactoryState {
                inner: Mutex::new(State::default()),
            }),
        }
    }

    /// The client the factory was made with, to make the [`Api`]s its
    /// informers list and watch through.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::Api;
    /// use kube_informer::InformerFactory;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let pods = factory.build(Api::<Pod>::namespaced(factory.client(), "default"), |b| b)?;
    /// # drop(pods);
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The shared informer listing and watching `api`, configured by
    /// `configure` exactly as [`Informer::builder`] would be: indexers,
    /// transform, [`strip_managed_fields`](InformerBuilder::strip_managed_fields),
    /// list/watch settings and the rest. The builder `configure` gets
    /// carries the factory's [`Defaults`] already (FA5).
    ///
    /// `configure` always runs (it only sets options, nothing starts); its
    /// selectors complete the sharing key. If an informer with that key
    /// exists it is returned when the options agree and refused with
    /// [`Error::OptionsDiffer`] when they do not (see [the module
    /// docs](self)).
    ///
    /// See the [type docs](InformerFactory) for an example.
    pub fn build<K, F>(&self, api: Api<K>, configure: F) -> Result<Informer<K>, Error>
    where
        K: source::Watchable,
        F: FnOnce(InformerBuilder<K, FromApi>) -> InformerBuilder<K, FromApi>,
    {
        self.share(configure(
            Informer::builder(api).with_defaults(&self.defaults),
        ))
    }

    /// The shared metadata-only informer of `api`'s resource
    /// ([`Informer::metadata_builder`]), configured by `configure`. It is
    /// another informer than a full one on the same resource: the cached
    /// type differs.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Secret;
    /// use kube::Api;
    /// use kube_informer::InformerFactory;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let secrets = factory.build_metadata(Api::<Secret>::all(server.client()), |b| b)?;
    /// factory.start();
    /// assert!(factory.wait_for_cache_sync().await);
    /// for secret in secrets.store().list() {
    ///     println!("{:?}", secret.metadata.name); // no data, only metadata
    /// }
    /// # factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn build_metadata<R, F>(
        &self,
        api: Api<R>,
        configure: F,
    ) -> Result<Informer<PartialObjectMeta<R>>, Error>
    where
        R: Resource + Clone + fmt::Debug + Send + Sync + 'static,
        PartialObjectMeta<R>: source::Watchable,
        F: FnOnce(
            InformerBuilder<PartialObjectMeta<R>, FromApi>,
        ) -> InformerBuilder<PartialObjectMeta<R>, FromApi>,
    {
        self.share(configure(
            Informer::metadata_builder(api).with_defaults(&self.defaults),
        ))
    }

    /// The informer for `builder`'s key: the existing one if its options
    /// agree, a new one if there is none.
    fn share<K>(&self, builder: InformerBuilder<K, FromApi>) -> Result<Informer<K>, Error>
    where
        K: Resource + Send + Sync + 'static,
    {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: builder.resource(),
        };
        let options = builder.options();
        let mut state = self.state.inner.lock();
        if let Some(&index) = state.by_key.get(&key) {
            let shut_down = state.shut_down;
            let entry = &mut state.entries[index];
            if let Hold::Released(released) = &entry.hold {
                // FA2: a released informer its users still hold is handed
                // out (and held) again rather than watched twice.
                match released.upgrade() {
                    Some(informer) => entry.hold = Hold::Held(informer),
                    None => {
                        let informer = builder.build();
                        if shut_down {
                            informer.stop();
                        }
                        *entry = Entry {
                            key,
                            options,
                            hold: Hold::Held(Box::new(informer.clone())),
                            task: None,
                        };
                        return Ok(informer);
                    }
                }
            }
            let Hold::Held(held) = &entry.hold else {
                unreachable!("held again above");
            };
            if held.is_stopped() && !shut_down {
                // FA1: a stopped informer lists and watches no more; the
                // request gets a new one in its place, which `start` runs.
                tracing::debug!(resource = %key.describe(), "factory: replacing a stopped informer");
                let informer = builder.build();
                *entry = Entry {
                    key,
                    options,
                    hold: Hold::Held(Box::new(informer.clone())),
                    task: None,
                };
                return Ok(informer);
            }
            if entry.options != options {
                return Err(Error::OptionsDiffer {
                    resource: key.describe(),
                    existing: format!("{:?}", entry.options),
                    requested: format!("{options:?}"),
                });
            }
            return Ok(held
                .as_any()
                .downcast_ref::<Informer<K>>()
                .expect("the key holds the type id of K")
                .clone());
        }
        tracing::debug!(resource = %key.describe(), "factory: new informer");
        let informer = builder.build();
        if state.shut_down {
            // A factory that was shut down hands out stopped informers
            // rather than starting new watches.
            informer.stop();
        }
        let index = state.entries.len();
        state.by_key.insert(key.clone(), index);
        state.entries.push(Entry {
            key,
            options,
            hold: Hold::Held(Box::new(informer.clone())),
            task: None,
        });
        Ok(informer)
    }

    /// Spawns the `run` of every informer not started yet on the current
    /// tokio runtime. Call it again after asking for more informers.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn start(&self) {
        let mut state = self.state.inner.lock();
        if state.shut_down {
            return;
        }
        for entry in &mut state.entries {
            if entry.task.is_some() {
                continue;
            }
            // A released informer not started yet still runs if its users
            // hold it (FA2).
            let run = match &entry.hold {
                Hold::Held(informer) => Some(informer.run()),
                Hold::Released(released) => released.upgrade().map(|informer| informer.run()),
            };
            if let Some(run) = run {
                tracing::debug!(resource = %entry.key.resource.path(), "factory: starting informer");
                entry.task = Some(tokio::spawn(run));
            }
        }
    }

    /// Waits until every informer the factory holds has synced; `false` as
    /// soon as one stopped before syncing (I12; also one that never ran,
    /// L7), without waiting for the others. Released informers (FA2) are
    /// left out.
    ///
    /// It has no deadline: it waits as long as the informers run without
    /// syncing, through any number of source errors, and for ever for an
    /// informer asked for but never [started](Self::start).
    /// [`wait_for_sync`](Self::wait_for_sync) takes a timeout, and gives up
    /// at once when a resource is refused or not served.
    pub async fn wait_for_cache_sync(&self) -> bool {
        let waits: Vec<_> = {
            let state = self.state.inner.lock();
            state
                .entries
                .iter()
                .filter_map(Entry::held)
                .map(|informer| informer.wait_until_synced())
                .collect()
        };
        // Fails fast: `false` as soon as one informer stopped unsynced,
        // without waiting for the others (I12).
        let mut waits: FuturesUnordered<_> = waits.into_iter().collect();
        while let Some(synced) = waits.next().await {
            if !synced {
                return false;
            }
        }
        true
    }

    /// Waits until every informer the factory holds has synced, failing
    /// fast as [`Informer::wait_until_synced`] does, with one deadline for all
    /// of them: `timeout` from now on tokio's clock (I10).
    ///
    /// `Ok(())` once every one synced (at once with none asked for);
    /// otherwise the first error any of them meets: a resource refused
    /// (401, 403) or not served (404) as soon as that is its latest
    /// answer, an informer stopped before it synced, or, when the deadline
    /// passes, [`SyncError::TimedOut`] for one that has not synced yet.
    /// Informers not [started](Self::start) do not sync. Their informers
    /// keep running and retrying after an error.
    ///
    /// Cancel-safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use kube::Api;
    /// use kube_informer::{InformerFactory, informer::SyncError};
    /// use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let configmaps = factory.build(Api::<ConfigMap>::all(server.client()), |b| b)?;
    /// factory.start();
    /// factory.wait_for_sync(Duration::from_secs(30)).await?;
    ///
    /// // No RBAC rule for Secrets: the first list is refused.
    /// server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), usize::MAX);
    /// let secrets = factory.build(Api::<Secret>::all(server.client()), |b| b)?;
    /// factory.start();
    /// match factory.wait_for_sync(Duration::from_secs(30)).await {
    ///     Err(SyncError::Refused { resource, status: 403, .. }) => {
    ///         assert_eq!(resource.resource, "secrets");
    ///     }
    ///     other => panic!("expected a refusal, got {other:?}"),
    /// }
    /// # drop((configmaps, secrets));
    /// factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_sync(&self, timeout: Duration) -> Result<(), SyncError> {
        // One deadline for all; `None`, none, for a timeout the clock
        // cannot hold.
        let deadline = Instant::now().checked_add(timeout);
        let waits: Vec<_> = {
            let state = self.state.inner.lock();
            state
                .entries
                .iter()
                .filter_map(Entry::held)
                .map(|informer| informer.wait_for_sync(deadline, timeout))
                .collect()
        };
        try_join_all(waits).await.map(drop)
    }

    /// Stops every informer and waits for their `run` to return. Informers
    /// asked for afterwards come stopped.
    pub async fn shutdown(&self) {
        let tasks: Vec<_> = {
            let mut state = self.state.inner.lock();
            state.shut_down = true;
            state
                .entries
                .iter_mut()
                .filter_map(|entry| {
                    match &entry.hold {
                        Hold::Held(informer) => informer.stop(),
                        // FA4: released ones that still run stop too.
                        Hold::Released(released) => {
                            if let Some(informer) = released.upgrade() {
                                informer.stop();
                            }
                        }
                    }
                    entry.task.take()
                })
                .collect()
        };
        for task in join_all(tasks).await {
            if let Ok(Err(error)) = task {
                tracing::warn!(%error, "factory: informer ended with an error");
            }
        }
    }

    /// Lets go of `informer` (FA2): the factory drops its own handle on it
    /// and the caller's, so it stops as soon as nothing else holds it (no
    /// other [`Informer`] clone, [`Store`](crate::Store), subscription or
    /// error stream, L8); at once if nothing does. Returns whether it
    /// stopped: `false` while something else still holds it.
    ///
    /// Until it stops, a request for its key gets it back (and the factory
    /// holds it again) and [`shutdown`](Self::shutdown) still stops it;
    /// [`len`](Self::len) and the sync waits leave it out. Once it stopped,
    /// the next request for its key gets a new informer (FA1). An informer
    /// the factory does not hold (another factory's, or one released
    /// already) is only dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::InformerFactory;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let configmaps = factory.build(Api::<ConfigMap>::all(server.client()), |b| b)?;
    /// factory.start();
    /// assert!(factory.wait_for_cache_sync().await);
    /// let store = configmaps.store();
    /// assert!(!factory.release(configmaps), "the store still holds it");
    /// assert_eq!(factory.len(), 0);
    /// drop(store); // the informer stops now
    /// # factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn release<K>(&self, informer: Informer<K>) -> bool
    where
        K: Resource + Send + Sync + 'static,
    {
        let weak = informer.downgrade();
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: informer.watched_resource().clone(),
        };
        let let_go = {
            let mut state = self.state.inner.lock();
            // Forget released informers that stopped since, so the
            // factory's memory stays with the informers that may run.
            state.prune();
            state.by_key.get(&key).copied().and_then(|index| {
                let entry = &mut state.entries[index];
                let Hold::Held(held) = &entry.hold else {
                    return None;
                };
                let same = held
                    .as_any()
                    .downcast_ref::<Informer<K>>()
                    .is_some_and(|held| held.same_as(&informer));
                same.then(|| {
                    tracing::debug!(resource = %key.describe(), "factory: releasing informer");
                    std::mem::replace(
                        &mut entry.hold,
                        Hold::Released(Box::new(informer.downgrade())),
                    )
                })
            })
        };
        // Outside the lock: the last handle's drop stops the informer.
        drop(let_go);
        drop(informer);
        !weak.is_alive()
    }

    /// How many distinct informers the factory holds (released ones do
    /// not count, FA2).
    pub fn len(&self) -> usize {
        self.state
            .inner
            .lock()
            .entries
            .iter()
            .filter(|entry| entry.held().is_some())
            .count()
    }

    /// Whether the factory holds no informer yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.inner.lock();
        f.debug_struct("InformerFactory")
            .field(
                "informers",
                &state
                    .entries
                    .iter()
                    .filter(|e| e.held().is_some())
                    .map(|e| e.key.resource.path())
                    .collect::<Vec<_>>(),
            )
            .field("shut_down", &state.shut_down)
            .finish()
    }
}
