//! [`InformerFactory`]: one shared [`Informer`] per resource type, namespace
//! and selectors, for a whole program.
//!
//! Controllers in one program often watch the same resources; each watch
//! costs the API server a list and a connection and costs the program a
//! cache. The factory hands every caller asking for the same
//! (type, resource, namespace, label selector, field selector) the same
//! informer, starts them together and waits for them to sync together.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    fmt,
    sync::Arc,
};

use futures::future::{BoxFuture, FutureExt, join_all};
use kube::{Api, Client, Resource, core::NamespaceScope};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::{
    informer::{self, Informer},
    source,
};

/// What makes two informers the same informer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    /// The list/watch path: group, version, plural and namespace.
    resource_url: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

/// The type-erased operations the factory applies to all its informers.
trait ManagedInformer: Send + Sync {
    fn run(&self) -> BoxFuture<'static, informer::Result<()>>;
    fn wait_until_synced(&self) -> BoxFuture<'static, bool>;
    fn stop(&self);
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
        async move { informer.wait_until_synced().await }.boxed()
    }

    fn stop(&self) {
        Informer::stop(self);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Entry {
    key: InformerKey,
    informer: Box<dyn ManagedInformer>,
    task: Option<JoinHandle<informer::Result<()>>>,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    by_key: HashMap<InformerKey, usize>,
    shut_down: bool,
}

/// Shares one [`Informer`] per (resource type, namespace, selectors) across
/// a program.
///
/// Ask for informers with [`informer`](Self::informer) (namespaced kinds),
/// [`cluster_informer`](Self::cluster_informer) (cluster-scoped kinds) or
/// [`informer_for_api`](Self::informer_for_api) (any [`Api`], e.g. dynamic
/// objects); then [`start`](Self::start) them on tokio and
/// [`wait_for_cache_sync`](Self::wait_for_cache_sync). Informers asked for
/// after `start` are started by the next `start`. Cloning the factory is
/// cheap and shares its informers. Informers live as long as the factory or
/// until [`shutdown`](Self::shutdown); dropping the last factory handle
/// stops them.
///
/// # Examples
///
/// ```no_run
/// use k8s_openapi::api::core::v1::{Node, Pod};
/// use kube::Client;
/// use kube_informer::{InformerFactory, source};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let factory = InformerFactory::new(Client::try_default().await?);
/// let pods = factory.informer::<Pod>(Some("default"), source::Config::default());
/// let same = factory.informer::<Pod>(Some("default"), source::Config::default());
/// let nodes = factory.cluster_informer::<Node>(source::Config::default());
/// factory.start();
/// assert!(factory.wait_for_cache_sync().await);
/// println!("{} pods on {} nodes", pods.store().len(), nodes.store().len());
/// # drop(same);
/// factory.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InformerFactory {
    client: Client,
    state: Arc<FactoryState>,
}

struct FactoryState {
    inner: Mutex<State>,
}

impl Drop for FactoryState {
    fn drop(&mut self) {
        for entry in &self.inner.get_mut().entries {
            entry.informer.stop();
        }
    }
}

impl InformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            state: Arc::new(FactoryState {
                inner: Mutex::new(State::default()),
            }),
        }
    }

    /// The shared informer of the namespaced kind `K` in `namespace` (all
    /// namespaces when `None`) with `config`'s selectors.
    ///
    /// The first call for a key builds the informer with `config`; later
    /// calls with the same key return it and ignore their `config` beyond
    /// the selectors.
    pub fn informer<K>(&self, namespace: Option<&str>, config: source::Config<K>) -> Informer<K>
    where
        K: source::Watchable + Resource<DynamicType = ()>,
        K::Scope: NamespaceScope,
    {
        let api = match namespace {
            Some(namespace) => Api::<K>::all(self.client.clone()).constrain(namespace),
            None => Api::all(self.client.clone()),
        };
        self.informer_for_api(api, config)
    }

    /// The shared informer of the cluster-scoped kind `K` (e.g. `Node`) with
    /// `config`'s selectors.
    pub fn cluster_informer<K>(&self, config: source::Config<K>) -> Informer<K>
    where
        K: source::Watchable + Resource<DynamicType = ()>,
    {
        self.informer_for_api(Api::all(self.client.clone()), config)
    }

    /// The shared informer listing and watching `api` (its resource and
    /// namespace) with `config`'s selectors; for kinds the other methods do
    /// not cover, such as [`DynamicObject`](kube::core::DynamicObject).
    pub fn informer_for_api<K>(&self, api: Api<K>, config: source::Config<K>) -> Informer<K>
    where
        K: source::Watchable,
    {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource_url: api.resource_url().to_owned(),
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
        };
        let mut state = self.state.inner.lock();
        if let Some(&index) = state.by_key.get(&key) {
            return state.entries[index]
                .informer
                .as_any()
                .downcast_ref::<Informer<K>>()
                .expect("the key holds the type id of K")
                .clone();
        }
        tracing::debug!(resource = %key.resource_url, "factory: new informer");
        let informer = Informer::builder(api).source_config(config).build();
        if state.shut_down {
            // A factory that was shut down hands out stopped informers
            // rather than starting new watches.
            informer.stop();
        }
        let index = state.entries.len();
        state.by_key.insert(key.clone(), index);
        state.entries.push(Entry {
            key,
            informer: Box::new(informer.clone()),
            task: None,
        });
        informer
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
            if entry.task.is_none() {
                tracing::debug!(resource = %entry.key.resource_url, "factory: starting informer");
                entry.task = Some(tokio::spawn(entry.informer.run()));
            }
        }
    }

    /// Waits until every informer asked for so far has synced; `false` if
    /// one stopped before syncing.
    pub async fn wait_for_cache_sync(&self) -> bool {
        let waits: Vec<_> = {
            let state = self.state.inner.lock();
            state
                .entries
                .iter()
                .map(|entry| entry.informer.wait_until_synced())
                .collect()
        };
        join_all(waits).await.into_iter().all(|synced| synced)
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
                    entry.informer.stop();
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

    /// How many distinct informers the factory holds.
    pub fn len(&self) -> usize {
        self.state.inner.lock().entries.len()
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
                    .map(|e| e.key.resource_url.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("shut_down", &state.shut_down)
            .finish()
    }
}
