//! Configuring an [`Informer`] before it is built.

use std::{fmt, sync::Arc, time::Duration};

use futures::{Stream, StreamExt};
use kube::{Api, Resource, core::PartialObjectMeta};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{Informer, error::Error, event_stream::EventStream, report::ErrorCallback};
use crate::{
    key::{KeyFn, default_key_fn},
    resource::WatchedResource,
    source::{self, Event, SourceSetup},
    store::Indexers,
};

mod cache;

/// The resync check period used unless [`InformerBuilder::resync_check_period`]
/// says otherwise.
pub const DEFAULT_RESYNC_CHECK_PERIOD: Duration = Duration::from_secs(30);

/// Opens a list/watch with its final config and setup. A closure holding
/// the `Api`, so the list/watch bounds stay on the constructors and off the
/// builder type, and so the `Api`'s type may differ from the informer's
/// (metadata informers watch `Api<K>` and cache `PartialObjectMeta<K>`).
/// Which resource it reads is not asked of it: the builder reads that from
/// the `Api`'s URL beside it (`InformerBuilder::resource`), before
/// anything is opened, so the factory can share informers by it.
type OpenSource<K> = Box<dyn FnOnce(source::Config<K>, SourceSetup) -> EventStream<K> + Send>;

/// The transform set with [`InformerBuilder::transform`].
type Transform<K> = crate::fifo::TransformFn<K>;

/// The builder's choice of store: `None` keeps every object decoded.
type CacheChoice<K> = Option<(crate::store::Codec<K>, crate::store::CompactCache)>;

/// Where an [`InformerBuilder`]'s events come from: [`FromApi`] (a
/// list/watch through a [`kube::Api`]) or [`FromStream`] (a stream of
/// events). It is the builder's second type parameter, and it decides what
/// the builder holds: the list/watch settings, or the stream. Sealed:
/// those two types are the only origins. Users never name it (the
/// parameter has a default, and a factory's or controller's `configure`
/// closure infers it), so it is reachable only through the hidden
/// `unstable` module, for the crate's test helpers.
pub trait Origin: origin::Sealed {}

mod origin {
    use super::{OpenSource, source};

    /// What a builder of this origin holds about its source.
    pub trait Sealed {
        /// The source, for objects of type `K`.
        type Source<K>;
        /// Its name, for `Debug`.
        const NAME: &'static str;
    }

    /// What a [`FromApi`](super::FromApi) builder holds: the list/watch
    /// settings, and how to open the list/watch with them.
    pub struct ApiSource<K> {
        /// The `Api`'s collection URL: with the config's selectors, which
        /// resource is listed and watched.
        pub(super) url: String,
        pub(super) config: source::Config<K>,
        pub(super) open: OpenSource<K>,
        /// How the source decodes: an option of this origin only, so it
        /// lives here and not in the builder's `Common`.
        pub(super) decode: source::DecodeOptions,
    }

    impl<K> std::fmt::Debug for ApiSource<K> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("ApiSource")
                .field("config", &self.config)
                .field("decode", &self.decode)
                .finish_non_exhaustive()
        }
    }
}

/// Marks an [`InformerBuilder`] made by [`Informer::builder`] or
/// [`Informer::metadata_builder`]: it lists and watches through a
/// [`kube::Api`], so it has
/// [`source_config`](InformerBuilder::source_config).
#[derive(Debug)]
pub struct FromApi(());

/// Marks an [`InformerBuilder`] made by [`Informer::builder_from_stream`]:
/// its events come from a stream, so there is no list/watch to configure
/// and no [`source_config`](InformerBuilder::source_config) method.
#[derive(Debug)]
pub struct FromStream(());

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
///     .strip_managed_fields()
///     .transform(|mut cm: ConfigMap| {
///         cm.data = None; // this controller reads labels only
///         Ok(cm)
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
///
/// The second type parameter says where the events come from: a
/// list/watch through a [`kube::Api`] (the default, from
/// [`Informer::builder`] and [`Informer::metadata_builder`]) or a stream
/// (from [`Informer::builder_from_stream`]). Code never names it: it has a
/// default, and closures that configure a builder (a factory's, a
/// controller's) infer it. Options that only make sense for a list/watch
/// ([`source_config`](Self::source_config),
/// [`decode_threads`](Self::decode_threads)) exist only on a builder of an
/// `Api`, so a stream-fed builder does not compile with them:
///
/// ```compile_fail,E0599
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, source::{self, Event}};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events)
///     .source_config(source::Config::default()) // a stream has no list/watch
///     .build();
/// ```
#[must_use = "a builder does nothing until built"]
pub struct InformerBuilder<K, S: Origin = FromApi> {
    source: S::Source<K>,
    common: Common<K>,
}

impl origin::Sealed for FromApi {
    type Source<K> = origin::ApiSource<K>;
    const NAME: &'static str = "api";
}

impl Origin for FromApi {}

impl origin::Sealed for FromStream {
    type Source<K> = EventStream<K>;
    const NAME: &'static str = "stream";
}

impl Origin for FromStream {}

/// The options of an API builder as plain data, what an
/// [`InformerFactory`](crate::InformerFactory) compares when a second
/// request asks for an informer it already has. Settings are compared by
/// value; functions (transform, key function, indexers' functions, error
/// callback) and the cancellation token by whether they are set (and
/// indexers by name), since two closures cannot be compared: two requests
/// that set different transforms agree, by design, and the factory's docs
/// say so.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Options {
    source: source::Settings,
    indexers: Vec<String>,
    transform: bool,
    strip_managed_fields: bool,
    /// [`InformerBuilder::decode_threads`] (`None`: not set).
    decode_threads: Option<usize>,
    /// `InformerBuilder::plain_decode`.
    plain_decode: bool,
    /// [`InformerBuilder::encoding`].
    encoding: source::Encoding,
    /// A key function of the user's (`false`: `namespace/name`).
    key_fn: bool,
    resync_check_period: Duration,
    on_error: bool,
    cancellation_token: bool,
    /// [`InformerBuilder::compact_cache`] (`None`: the default store).
    compact_cache: Option<crate::store::CompactCache>,
}

/// What a builder holds whatever its origin.
struct Common<K> {
    transform: Option<Transform<K>>,
    strip_managed_fields: bool,
    indexers: Indexers<K>,
    resync_check_period: Duration,
    /// `None` keeps the default `namespace/name` key.
    key_fn: Option<KeyFn<K>>,
    on_error: Option<ErrorCallback>,
    cancel: Option<CancellationToken>,
    cache: CacheChoice<K>,
}

impl<K: Resource + Send + Sync + 'static> Common<K> {
    /// The informer these options build, on `events`: `strip_in_fifo` says
    /// whether managedFields are left to the FIFO's transform (the source
    /// did not leave them out).
    fn build(
        self,
        events: EventStream<K>,
        resource: Option<WatchedResource>,
        strip_in_fifo: bool,
        source_metrics: Arc<crate::metrics::SourceRecorder>,
    ) -> Informer<K> {
        let transform =
            compose_transform(strip_in_fifo && self.strip_managed_fields, self.transform);
        Informer::from_parts(super::handle::Parts {
            events,
            transform,
            indexers: self.indexers,
            resync_check_period: self.resync_check_period,
            key_fn: self.key_fn.unwrap_or_else(default_key_fn),
            on_error: self.on_error,
            cancel: self.cancel,
            resource,
            source_metrics,
            cache: self.cache,
        })
    }
}

impl<K, S> InformerBuilder<K, S>
where
    K: Resource + Send + Sync + 'static,
    S: Origin,
{
    fn with_source(source: S::Source<K>) -> Self {
        Self {
            source,
            common: Common {
                transform: None,
                strip_managed_fields: false,
                indexers: Indexers::new(),
                resync_check_period: DEFAULT_RESYNC_CHECK_PERIOD,
                key_fn: None,
                on_error: None,
                cancel: None,
                cache: None,
            },
        }
    }

    /// Rewrites every object before it is queued or cached (F11): the one
    /// place to set a transform. Tombstones and resync re-deliveries are not
    /// transformed again. A second call replaces the first transform; it
    /// composes with [`strip_managed_fields`](Self::strip_managed_fields),
    /// which runs first.
    ///
    /// The signature is the FIFO's ([`FifoOptions::transform`](crate::fifo::FifoOptions::transform)):
    /// an `Err` refuses the object, which is then neither queued nor cached,
    /// and the error reaches the error channel as
    /// [`Error::Queue`](super::Error::Queue) holding
    /// [`store::Error::Transform`](crate::store::Error::Transform) with the
    /// object's key; the informer goes on with the next object.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
    ///     data: Some([("big".to_string(), "x".repeat(1 << 16))].into()),
    ///     ..Default::default()
    /// };
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm))]);
    /// let informer = Informer::builder_from_stream(events)
    ///     .transform(|mut cm: ConfigMap| {
    ///         cm.data = None;
    ///         Ok(cm)
    ///     })
    ///     .build();
    /// informer.run().await.unwrap();
    /// assert_eq!(informer.store().get_by(None, "a").unwrap().data, None);
    /// # }
    /// ```
    pub fn transform<F>(mut self, transform: F) -> Self
    where
        F: Fn(K) -> Result<K, Box<dyn std::error::Error + Send + Sync>> + Send + Sync + 'static,
    {
        self.common.transform = Some(Arc::new(transform));
        self
    }

    /// Drops every object's `metadata.managedFields` before it is queued or
    /// cached: the transform most controllers want, since server-side apply
    /// bookkeeping is often the larger part of a cached object and is rarely
    /// read. It runs before the [`transform`](Self::transform), if one is
    /// set.
    ///
    /// An informer built from an [`Api`] never builds the managedFields at
    /// all: its decoder reads past them, which
    /// saves their decoding and freeing as well as their memory. Objects
    /// from [`builder_from_stream`](Informer::builder_from_stream) are
    /// decoded already and have them cleared where they enter the FIFO.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry};
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta {
    ///         name: Some("a".into()),
    ///         managed_fields: Some(vec![ManagedFieldsEntry::default()]),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm))]);
    /// let informer = Informer::builder_from_stream(events).strip_managed_fields().build();
    /// informer.run().await.unwrap();
    /// assert_eq!(informer.store().get_by(None, "a").unwrap().metadata.managed_fields, None);
    /// # }
    /// ```
    pub fn strip_managed_fields(mut self) -> Self {
        self.common.strip_managed_fields = true;
        self
    }

    /// Adds the store index `name`: `index` gives the values each object is
    /// filed under (see [`Store::by_index`](crate::store::Store::by_index)).
    ///
    /// The function runs once per stored version of an object, outside the
    /// store's lock. If it panics, that version is not stored and no
    /// notification is sent for it; the panic is reported through
    /// [`Informer::errors`] as [`Error::Store`] and the informer goes on
    /// (the store writer's rule for a panicking index function).
    pub fn indexer<F>(mut self, name: impl Into<String>, index: F) -> Self
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.common.indexers = self.common.indexers.with(name, index);
        self
    }

    /// Replaces every index with `indexers` (the namespace index is always
    /// there).
    // Hidden (outside semver): `indexer` once per index is the way; the
    // tests and `store::Indexers`'s docs use this.
    #[doc(hidden)]
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.common.indexers = indexers;
        self
    }

    /// How often the informer checks whether a subscriber is due for a
    /// resync (default [`DEFAULT_RESYNC_CHECK_PERIOD`]; zero turns resync
    /// off). A subscriber asking for a shorter period before the informer
    /// runs lowers it; one asking after is raised to it (L3). As client-go's
    /// reflector does, the period starts over after every completed relist,
    /// so the first check after a relist comes a full period later.
    pub fn resync_check_period(mut self, period: Duration) -> Self {
        self.common.resync_check_period = period;
        self
    }

    /// How objects are keyed (default `namespace/name`, see
    /// [`ObjectKey::from_object`](crate::ObjectKey::from_object)).
    pub fn key_fn<F>(mut self, key_fn: F) -> Self
    where
        F: Fn(&K) -> Result<crate::key::ObjectKey, crate::store::Error> + Send + Sync + 'static,
    {
        self.common.key_fn = Some(Arc::new(key_fn));
        self
    }

    /// Calls `callback` with every error met while running, besides
    /// delivering it to [`Informer::errors`]. Keep it quick: it runs on the
    /// informer's task.
    pub fn on_error<F>(mut self, callback: F) -> Self
    where
        F: Fn(&Error) + Send + Sync + 'static,
    {
        self.common.on_error = Some(Arc::new(callback));
        self
    }

    /// Stops the informer when `token` is cancelled, as
    /// [`Informer::stop`] does.
    pub fn cancellation_token(mut self, token: CancellationToken) -> Self {
        self.common.cancel = Some(token);
        self
    }
}

/// The transform the FIFO applies: managed fields stripped first, then the
/// user's transform.
fn compose_transform<K: Resource + 'static>(
    strip_managed_fields: bool,
    transform: Option<Transform<K>>,
) -> Option<Transform<K>> {
    if !strip_managed_fields {
        return transform;
    }
    Some(match transform {
        Some(user) => Arc::new(move |mut object: K| {
            object.meta_mut().managed_fields = None;
            user(object)
        }),
        None => Arc::new(|mut object: K| {
            object.meta_mut().managed_fields = None;
            Ok(object)
        }),
    })
}

impl<K> InformerBuilder<K, FromApi>
where
    K: Resource + Send + Sync + 'static,
{
    pub(crate) fn from_api(api: Api<K>) -> Self
    where
        K: Clone + DeserializeOwned + fmt::Debug,
    {
        Self::with_source(origin::ApiSource {
            url: api.resource_url().to_owned(),
            config: source::Config::default(),
            open: Box::new(move |config, setup| {
                wrap_errors(source::wired_source(api, config, setup))
            }),
            decode: source::DecodeOptions::default(),
        })
    }

    /// The list/watch settings: selectors, page size, timeouts, list
    /// strategy, backoff. A builder over a stream
    /// ([`Informer::builder_from_stream`]) has no list/watch, and no such
    /// method.
    pub fn source_config(mut self, config: source::Config<K>) -> Self {
        self.source.config = config;
        self
    }

    /// Lists and watches only objects whose labels match `selector` (e.g.
    /// `app=web,tier!=cache`), keeping the other list/watch settings (those
    /// of a factory's [`Defaults`](super::Defaults) among them); the same as
    /// [`source::Config::label_selector`] through
    /// [`source_config`](Self::source_config).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::Api;
    /// use kube_informer::Informer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = kube_informer_testing::FakeApiServer::start().await;
    /// // Pods of app=web on node-1, with the informer's other defaults.
    /// let informer = Informer::builder(Api::<Pod>::all(server.client()))
    ///     .label_selector("app=web")
    ///     .field_selector("spec.nodeName=node-1")
    ///     .build();
    /// # drop(informer);
    /// # }
    /// ```
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.source.config = self.source.config.label_selector(selector);
        self
    }

    /// Lists and watches only objects whose fields match `selector` (e.g.
    /// `spec.nodeName=node-1`), keeping the other list/watch settings; see
    /// [`label_selector`](Self::label_selector).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.source.config = self.source.config.field_selector(selector);
        self
    }

    /// This builder with a factory's `defaults` applied (before the
    /// factory's `configure` closure runs).
    pub(crate) fn with_defaults(mut self, defaults: &super::Defaults) -> Self {
        if let Some(config) = &defaults.source_config {
            self.source.config = source::Config::from_settings(config.clone().into_settings());
        }
        if defaults.strip_managed_fields {
            self.common.strip_managed_fields = true;
        }
        if defaults.decode_threads.is_some() {
            self.source.decode.threads = defaults.decode_threads;
        }
        self.source.decode.encoding = defaults.encoding;
        self
    }

    /// Which encoding lists and watches ask for: JSON (the default) or
    /// protobuf for the built-in kinds that have it (see [`Encoding`](source::Encoding)
    /// for what each means, and why JSON is the default).
    ///
    /// The objects the informer holds are the same values either way;
    /// protobuf costs the server less per object and takes fewer bytes on
    /// the wire (this process's CPU per event is about the same). Kinds
    /// without protobuf (custom resources, `DynamicObject`) stay on JSON
    /// whatever is chosen; a metadata-only informer
    /// ([`Informer::metadata_builder`]) of any resource asks for
    /// protobuf. An
    /// [`InformerFactory`](crate::InformerFactory) counts it among the
    /// options two requests must agree on.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{Informer, source::Encoding};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = kube_informer_testing::FakeApiServer::start().await;
    /// let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    /// let informer = Informer::builder(api).encoding(Encoding::Protobuf).build();
    /// # drop(informer);
    /// # }
    /// ```
    pub fn encoding(mut self, encoding: source::Encoding) -> Self {
        self.source.decode.encoding = encoding;
        self
    }

    /// How many threads may decode one batch of this informer's objects (a
    /// list page, or a burst of watch lines that arrived together) at once.
    ///
    /// By default, on a multi-thread tokio runtime, a batch big enough to
    /// split is cut into pieces of about a millisecond of decoding, each
    /// decoded by a task of its own on the runtime's worker threads, as
    /// many at once as the batch is worth, up to one per core (at most
    /// four); the task that reads waits meanwhile, and no other task waits
    /// behind more than one piece. The crate starts no thread of its own
    /// (under glibc's malloc, objects decoded on threads of their own would
    /// leave the memory of what the watch replaces in heaps nobody
    /// allocates from again; see `benches/compare/NOTES.md`, "Peak RSS and
    /// glibc's heaps"). `threads` lowers that cap for this informer. With `0` or
    /// `1`, or on a current-thread runtime, every batch, however big, is
    /// decoded where it arrives, on the runtime thread that read it, in one
    /// go: a big relist then holds that thread while it decodes each page.
    ///
    /// The objects, their order and the errors are the same whatever the
    /// number. An [`InformerFactory`](crate::InformerFactory) counts it
    /// among the options two requests must agree on.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::Informer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = kube_informer_testing::FakeApiServer::start().await;
    /// let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    /// // Every page and watch burst decoded on the thread that reads it.
    /// let informer = Informer::builder(api).decode_threads(1).build();
    /// let run = tokio::spawn(informer.run());
    /// informer.wait_until_synced().await.unwrap();
    /// informer.stop();
    /// run.await.unwrap().unwrap();
    /// # }
    /// ```
    pub fn decode_threads(mut self, threads: usize) -> Self {
        self.source.decode.threads = Some(threads);
        self
    }

    /// Decodes each object with plain `serde_json::from_str`, after the
    /// same checks (R7: metadata, a name, the list's kind), instead of the
    /// tuned decoder: no pre-scan, no capacity hints, no reading past
    /// managedFields.
    ///
    /// The objects and the errors are the same either way; the tuned
    /// decoder is the default because it is faster and leaves less memory
    /// behind (`benches/compare/NOTES.md`, "The tuned decoder against plain
    /// serde"). This one is the reference beside
    /// it: to rule the tuned decoder out when an object seems decoded
    /// wrong, or to measure what it saves. Batches are still split into
    /// pieces as [`decode_threads`](Self::decode_threads) says.
    /// With [`strip_managed_fields`](Self::strip_managed_fields), the
    /// managedFields are decoded, then cleared before the object is queued
    /// (as for [`builder_from_stream`](Informer::builder_from_stream)).
    ///
    /// A switch without argument rather than an enum of decoders: there
    /// are two, the tuned one is the default, so choosing the other is all
    /// there is to say, as with `strip_managed_fields`, and there is no
    /// type to import. An [`InformerFactory`](crate::InformerFactory)
    /// counts it among the options two requests must agree on.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::Informer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = kube_informer_testing::FakeApiServer::start().await;
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("a".into());
    /// server.create(&cm).unwrap();
    /// let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    /// let informer = Informer::builder(api).plain_decode().build();
    /// let run = tokio::spawn(informer.run());
    /// informer.wait_until_synced().await.unwrap();
    /// assert!(informer.store().get_by(Some("default"), "a").is_some());
    /// informer.stop();
    /// run.await.unwrap().unwrap();
    /// # }
    /// ```
    // Hidden (outside semver): a knob of the benchmarks and tests (the
    // tuned decoder against plain serde_json).
    #[doc(hidden)]
    pub fn plain_decode(mut self) -> Self {
        self.source.decode.plain = true;
        self
    }

    /// Which resource the list/watch will read, selectors included: what
    /// the informer's span and metrics name, and (with the cached type)
    /// what an [`InformerFactory`](crate::InformerFactory) shares informers
    /// by.
    pub(crate) fn resource(&self) -> WatchedResource {
        source::watched_resource(&self.source.url, &self.source.config)
    }

    /// Every option set, for an [`InformerFactory`](crate::InformerFactory)
    /// to compare two requests for one key.
    pub(crate) fn options(&self) -> Options {
        let common = &self.common;
        Options {
            source: self.source.config.settings().clone(),
            indexers: common.indexers.names().map(str::to_owned).collect(),
            transform: common.transform.is_some(),
            strip_managed_fields: common.strip_managed_fields,
            decode_threads: self.source.decode.threads,
            plain_decode: self.source.decode.plain,
            encoding: self.source.decode.encoding,
            key_fn: common.key_fn.is_some(),
            resync_check_period: common.resync_check_period,
            on_error: common.on_error.is_some(),
            cancellation_token: common.cancel.is_some(),
            compact_cache: self.cache_settings(),
        }
    }

    /// Builds the informer. Nothing is listed or watched until
    /// [`Informer::run`] is polled.
    pub fn build(self) -> Informer<K> {
        let resource = self.resource();
        let Self { source, common } = self;
        let metrics = Arc::<crate::metrics::SourceRecorder>::default();
        // The tuned decoder leaves managedFields out (on the decode
        // threads), so the FIFO need not clear them; the plain decoder
        // builds them, and the FIFO clears them.
        let plain = source.decode.plain;
        let setup = SourceSetup {
            metrics: Arc::clone(&metrics),
            skip_managed_fields: common.strip_managed_fields && !plain,
            decode: source.decode,
        };
        let events = (source.open)(source.config, setup);
        common.build(events, Some(resource), plain, metrics)
    }
}

impl<K> InformerBuilder<K, FromStream>
where
    K: Resource + Send + Sync + 'static,
{
    pub(crate) fn from_stream<St, E>(events: St) -> Self
    where
        St: Stream<Item = Result<Event<K>, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::with_source(wrap_errors(events))
    }

    /// Builds the informer. Nothing is read from the stream until
    /// [`Informer::run`] is polled.
    pub fn build(self) -> Informer<K> {
        // Objects from a stream are decoded already: the FIFO clears their
        // managedFields if asked.
        self.common.build(self.source, None, true, Arc::default())
    }
}

impl<R> InformerBuilder<PartialObjectMeta<R>, FromApi>
where
    R: Resource + Clone + fmt::Debug + Send + Sync + 'static,
    PartialObjectMeta<R>: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    pub(crate) fn from_metadata_api(api: Api<R>) -> Self {
        Self::with_source(origin::ApiSource {
            url: api.resource_url().to_owned(),
            config: source::Config::default(),
            open: Box::new(move |config, setup| {
                wrap_errors(source::wired_metadata_source(api, config, setup))
            }),
            decode: source::DecodeOptions::default(),
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

impl<K, S: Origin> fmt::Debug for InformerBuilder<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let common = &self.common;
        f.debug_struct("InformerBuilder")
            .field("source", &<S as origin::Sealed>::NAME)
            .field("resync_check_period", &common.resync_check_period)
            .field("transform", &common.transform.is_some())
            .field("strip_managed_fields", &common.strip_managed_fields)
            .finish_non_exhaustive()
    }
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// An informer that lists and watches `api` (see
    /// [`source`](crate::source) for the list/watch rules).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::{Api, Client};
    /// use kube_informer::Informer;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let pods: Api<Pod> = Api::all(Client::try_default().await?);
    /// let informer = Informer::builder(pods).build();
    /// tokio::spawn(informer.run());
    /// informer.wait_until_synced().await;
    /// println!("{} pods", informer.store().len());
    /// # Ok(()) }
    /// ```
    pub fn builder(api: Api<K>) -> InformerBuilder<K> {
        InformerBuilder::from_api(api)
    }
}

impl<R> Informer<PartialObjectMeta<R>>
where
    R: Resource + Clone + fmt::Debug + Send + Sync + 'static,
    PartialObjectMeta<R>: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// An informer that lists and watches only the metadata of `api`'s
    /// objects (`PartialObjectMetadata`): names, labels, annotations, owners,
    /// but no spec or status, for much less memory when that is all it needs.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use k8s_openapi::api::core::v1::Secret;
    /// use kube::{Api, Client};
    /// use kube_informer::Informer;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let secrets: Api<Secret> = Api::all(Client::try_default().await?);
    /// let informer = Informer::metadata_builder(secrets).build();
    /// tokio::spawn(informer.run());
    /// informer.wait_until_synced().await;
    /// for secret in informer.store().list() {
    ///     println!("{:?}", secret.metadata.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn metadata_builder(api: Api<R>) -> InformerBuilder<PartialObjectMeta<R>> {
        InformerBuilder::from_metadata_api(api)
    }
}

impl<K> Informer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// An informer fed by `events` instead of a list/watch: useful for tests,
    /// replays and sources of your own. Errors the stream yields are reported
    /// through [`Informer::errors`]; when the stream ends the informer hands
    /// out what was queued and stops.
    ///
    /// Such a stream has no HTTP answers of its own, so
    /// [`wait_until_synced`](Self::wait_until_synced) ends in
    /// [`SyncError::Stopped`](super::SyncError::Stopped) only, unless the
    /// stream yields [`source::Error`](crate::source::Error)s carrying a
    /// 401, 403 or 404.
    ///
    /// See the [type docs](Informer) for an example.
    pub fn builder_from_stream<S, E>(events: S) -> InformerBuilder<K, FromStream>
    where
        S: Stream<Item = std::result::Result<Event<K>, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        InformerBuilder::from_stream(events)
    }
}
