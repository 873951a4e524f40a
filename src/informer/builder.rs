//! Configuring an [`Informer`] before it is built.

use std::{fmt, sync::Arc, time::Duration};

use futures::{Stream, StreamExt, stream::BoxStream};
use kube::{Api, Resource, core::PartialObjectMeta};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{Informer, error::Error, report::ErrorCallback};
use crate::{
    key::{KeyFn, default_key_fn},
    source::{self, Event},
    store::Indexers,
};

/// The events an informer consumes, errors already wrapped.
pub(crate) type EventStream<K> = BoxStream<'static, Result<Event<K>, Error>>;

/// The resync check period used unless [`InformerBuilder::resync_check_period`]
/// says otherwise.
pub const DEFAULT_RESYNC_CHECK_PERIOD: Duration = Duration::from_secs(30);

/// Where the events come from; the API variant is turned into a stream only
/// at [`InformerBuilder::build`], so its config can still change.
enum SourceSpec<K> {
    Api {
        config: source::Config<K>,
        open: OpenSource<K>,
    },
    Stream(EventStream<K>),
}

/// Opens a list/watch with its final config. A closure holding the `Api`,
/// so the list/watch bounds stay on the constructors and off the builder
/// type, and so the `Api`'s type may differ from the informer's (metadata
/// informers watch `Api<K>` and cache `PartialObjectMeta<K>`).
type OpenSource<K> = Box<dyn FnOnce(source::Config<K>) -> EventStream<K> + Send>;

/// Builds an [`Informer`]; made by [`Informer::builder`] or
/// [`Informer::builder_from_stream`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, Client};
/// use kube_informer::{Informer, source};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let api: Api<ConfigMap> = Api::default_namespaced(Client::try_default().await?);
/// let informer = Informer::builder(api)
///     .source_config(source::Config::default().label_selector("app=web"))
///     .transform(|mut cm: ConfigMap| {
///         cm.metadata.managed_fields = None;
///         cm
///     })
///     .indexer("by-app", |cm: &ConfigMap| {
///         cm.metadata.labels.iter().flatten()
///             .filter(|(k, _)| *k == "app")
///             .map(|(_, v)| v.clone())
///             .collect()
///     })
///     .resync_check_period(Duration::from_secs(10))
///     .on_error(|error| eprintln!("informer: {error}"))
///     .build();
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct InformerBuilder<K> {
    source: SourceSpec<K>,
    transform: Option<Arc<dyn Fn(K) -> K + Send + Sync>>,
    indexers: Indexers<K>,
    resync_check_period: Duration,
    key_fn: KeyFn<K>,
    on_error: Option<ErrorCallback>,
    cancel: Option<CancellationToken>,
}

impl<K> InformerBuilder<K>
where
    K: Resource + Send + Sync + 'static,
{
    fn with_source(source: SourceSpec<K>) -> Self {
        Self {
            source,
            transform: None,
            indexers: Indexers::new(),
            resync_check_period: DEFAULT_RESYNC_CHECK_PERIOD,
            key_fn: default_key_fn(),
            on_error: None,
            cancel: None,
        }
    }

    pub(crate) fn from_api(api: Api<K>) -> Self
    where
        K: Clone + DeserializeOwned + fmt::Debug,
    {
        Self::with_source(SourceSpec::Api {
            config: source::Config::default(),
            open: Box::new(move |config| wrap_errors(source::watch_source(api, config))),
        })
    }

    pub(crate) fn from_stream<S, E>(events: S) -> Self
    where
        S: Stream<Item = Result<Event<K>, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::with_source(SourceSpec::Stream(wrap_errors(events)))
    }

    /// The list/watch settings: selectors, page size, timeouts, list
    /// strategy, backoff.
    ///
    /// Only meaningful for builders made by [`Informer::builder`]; a builder
    /// over a stream has no list/watch to configure and ignores it.
    pub fn source_config(mut self, config: source::Config<K>) -> Self {
        match &mut self.source {
            SourceSpec::Api { config: slot, .. } => *slot = config,
            SourceSpec::Stream(_) => {
                tracing::warn!("source_config ignored: this informer reads a given stream")
            }
        }
        self
    }

    /// Rewrites every object before it is queued or cached, for example to
    /// drop `managedFields` and save memory (F11). Tombstones and resync
    /// re-deliveries are not transformed again.
    pub fn transform<F>(mut self, transform: F) -> Self
    where
        F: Fn(K) -> K + Send + Sync + 'static,
    {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Adds the store index `name`: `index` gives the values each object is
    /// filed under (see [`Store::by_index`](crate::store::Store::by_index)).
    pub fn indexer<F>(mut self, name: impl Into<String>, index: F) -> Self
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.indexers = self.indexers.with(name, index);
        self
    }

    /// Replaces every index with `indexers` (the namespace index is always
    /// there).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }

    /// How often the informer checks whether a subscriber is due for a
    /// resync (default [`DEFAULT_RESYNC_CHECK_PERIOD`]; zero turns resync
    /// off). A subscriber asking for a shorter period before the informer
    /// runs lowers it; one asking after is raised to it (L3). As client-go's
    /// reflector does, the period starts over after every completed relist,
    /// so the first check after a relist comes a full period later.
    pub fn resync_check_period(mut self, period: Duration) -> Self {
        self.resync_check_period = period;
        self
    }

    /// How objects are keyed (default `namespace/name`, see
    /// [`ObjectKey::from_object`](crate::ObjectKey::from_object)).
    pub fn key_fn(mut self, key_fn: KeyFn<K>) -> Self {
        self.key_fn = key_fn;
        self
    }

    /// Calls `callback` with every error met while running, besides
    /// delivering it to [`Informer::errors`]. Keep it quick: it runs on the
    /// informer's task.
    pub fn on_error<F>(mut self, callback: F) -> Self
    where
        F: Fn(&Error) + Send + Sync + 'static,
    {
        self.on_error = Some(Arc::new(callback));
        self
    }

    /// Stops the informer when `token` is cancelled, as
    /// [`Informer::stop`] does.
    pub fn cancellation_token(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Builds the informer. Nothing is listed or watched until
    /// [`Informer::run`] is polled.
    pub fn build(self) -> Informer<K> {
        let events = match self.source {
            SourceSpec::Api { config, open } => open(config),
            SourceSpec::Stream(events) => events,
        };
        Informer::from_parts(super::handle::Parts {
            events,
            transform: self.transform,
            indexers: self.indexers,
            resync_check_period: self.resync_check_period,
            key_fn: self.key_fn,
            on_error: self.on_error,
            cancel: self.cancel,
            labels: None,
        })
    }
}

impl<R> InformerBuilder<PartialObjectMeta<R>>
where
    R: Resource + Clone + fmt::Debug + Send + Sync + 'static,
    PartialObjectMeta<R>: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    pub(crate) fn from_metadata_api(api: Api<R>) -> Self {
        Self::with_source(SourceSpec::Api {
            config: source::Config::default(),
            open: Box::new(move |config| wrap_errors(source::watch_metadata_source(api, config))),
        })
    }
}

/// Boxes a source stream, its errors shared so every error listener gets
/// them.
fn wrap_errors<K, S, E>(events: S) -> EventStream<K>
where
    S: Stream<Item = Result<Event<K>, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    events
        .map(|item| item.map_err(Error::from_source_error))
        .boxed()
}

impl<K> fmt::Debug for InformerBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            SourceSpec::Api { .. } => "api",
            SourceSpec::Stream(_) => "stream",
        };
        f.debug_struct("InformerBuilder")
            .field("source", &source)
            .field("resync_check_period", &self.resync_check_period)
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}
