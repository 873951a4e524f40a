//! [`InformerFactory`]: the handle a program asks for its shared
//! informers, and how a request finds or builds one.

use std::{fmt, sync::Arc};

use kube::{Api, Client, Resource, core::PartialObjectMeta};
use parking_lot::Mutex;

use super::{hold::Hold, key::InformerKey, registry::Registry};
use crate::{
    informer::{Defaults, Error, Informer, InformerBuilder},
    source,
};

/// Shares one [`Informer`] per (resource type, namespace, selectors) across
/// a program; see [the module docs](super) for the sharing key.
///
/// Ask for informers with [`build`](Self::build) (any [`Api`]: namespaced,
/// cluster-wide, dynamic objects; its closure sets what a builder sets, or
/// returns the builder as it is) and [`build_metadata`](Self::build_metadata)
/// (metadata only); then [`start`](Self::start)
/// them on tokio and [`wait_until_synced`](Self::wait_until_synced).
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
/// factory.wait_until_synced().await?;
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
    pub(super) state: Arc<FactoryState>,
}

pub(super) struct FactoryState {
    pub(super) inner: Mutex<Registry>,
}

impl InformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client) -> Self {
        Self::with_defaults(client, Defaults::default())
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
                inner: Mutex::new(Registry::default()),
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
    /// docs](super)).
    ///
    /// See the [type docs](InformerFactory) for an example.
    pub fn build<K, F>(&self, api: Api<K>, configure: F) -> Result<Informer<K>, Error>
    where
        K: source::Watchable,
        F: FnOnce(InformerBuilder<K>) -> InformerBuilder<K>,
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
    /// factory.wait_until_synced().await?;
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
        F: FnOnce(InformerBuilder<PartialObjectMeta<R>>) -> InformerBuilder<PartialObjectMeta<R>>,
    {
        self.share(configure(
            Informer::metadata_builder(api).with_defaults(&self.defaults),
        ))
    }

    /// The informer for `builder`'s key: the existing one if its options
    /// agree, a new one if there is none or it cannot be handed out again.
    fn share<K>(&self, builder: InformerBuilder<K>) -> Result<Informer<K>, Error>
    where
        K: Resource + Send + Sync + 'static,
    {
        let key = InformerKey::of::<K>(builder.resource());
        let options = builder.options();
        let mut registry = self.state.inner.lock();
        let shut_down = registry.shut_down;
        if let Some((hold, existing)) = registry.get_mut::<K>(&key)
            && let Some(informer) = reusable(hold, shut_down, &key)
        {
            if *existing != options {
                return Err(Error::OptionsDiffer {
                    resource: key.describe(),
                    existing: format!("{existing:?}"),
                    requested: format!("{options:?}"),
                });
            }
            return Ok(informer);
        }
        tracing::debug!(resource = %key.describe(), "factory: new informer");
        let informer = builder.build();
        if shut_down {
            // A factory that was shut down hands out stopped informers
            // rather than starting new watches.
            informer.stop();
        }
        registry.insert(key, options, informer.clone());
        Ok(informer)
    }
}

/// The informer `hold` can hand out again, held again if it was released;
/// `None` when a new informer must take its place.
fn reusable<K>(hold: &mut Hold<K>, shut_down: bool, key: &InformerKey) -> Option<Informer<K>>
where
    K: Resource + Send + Sync + 'static,
{
    if let Hold::Released(released) = hold {
        // FA2: a released informer its users still hold is handed out (and
        // held) again rather than watched twice.
        *hold = Hold::Held(released.upgrade()?);
    }
    let Hold::Held(held) = hold else {
        return None;
    };
    if held.is_stopped() && !shut_down {
        // FA1: a stopped informer lists and watches no more; the request
        // gets a new one in its place, which `start` runs.
        tracing::debug!(resource = %key.describe(), "factory: replacing a stopped informer");
        return None;
    }
    Some(held.clone())
}

impl InformerFactory {
    /// How many distinct informers the factory holds (released ones do
    /// not count, FA2).
    pub fn len(&self) -> usize {
        self.state.inner.lock().held().count()
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
                    .held()
                    .map(|entry| entry.key.resource.path())
                    .collect::<Vec<_>>(),
            )
            .field("shut_down", &state.shut_down)
            .finish()
    }
}
