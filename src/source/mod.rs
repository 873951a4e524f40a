//! The list/watch source: a `kube::Api<K>` becomes a stream of
//! [`Event`]s, following client-go's reflector rules (R1–R9 in the
//! conformance list) and two of our own (R10: a silent watch is dropped;
//! R11: the decode options, `InformerBuilder::decode_threads` and
//! `plain_decode`, change where and how objects are decoded, never which
//! objects or errors come out, and with `decode_threads(0)` or `(1)` every
//! batch is decoded on the thread that read it).
//!
//! The first list asks for resourceVersion "0" (the API server may answer
//! from its cache), then the source watches from the list's resourceVersion
//! with bookmarks on and a timeout drawn from `[5 min, 10 min)`. A watch that
//! ends normally is reopened at once from the last resourceVersion seen;
//! errors relist after a [backoff](BackoffConfig). Relists arrive as
//! [`Event::ListStart`], [`Event::Listed`]… [`Event::ListDone`], one object at
//! a time, so a consumer never needs the whole list in memory twice.
//!
//! # Errors
//!
//! Every failure reaches the caller as an `Err(`[`Error`]`)` item and the
//! stream goes on retrying; it never ends by itself and never panics on
//! what the server sends. The source does not log the errors it yields
//! (the informer reports each once); it emits `debug` events for relists,
//! watches, idle deadlines and backoffs inside a span per list and per
//! watch that names the resource (group, version, resource plural,
//! namespace, selectors). Bad events (unknown types, objects without
//! metadata or name, objects of another kind) are reported and skipped. A
//! watch line that is not JSON ends that watch and relists after a backoff,
//! because the event it carried is lost.
//!
//! | what happened | what the source does next |
//! |---|---|
//! | list succeeded | watch from its resourceVersion |
//! | list: 410 or "too large resource version" | at once, list with "" (once per relist) |
//! | list: continue token expired (410) | at once, one full list without limit |
//! | list: any other failure | backoff, relist |
//! | list page not answered within [`LIST_DEADLINE`] (120 s) | [`Error::ListTimeout`], backoff, relist |
//! | watch start: 429 or connection refused | backoff, watch again |
//! | watch start: other failure | backoff, relist |
//! | watch ended normally, or its connection broke | watch again at once |
//! | watch ended within 1 s without any event | backoff, relist |
//! | R10: watch silent (no byte) for its timeout + 30 s, or its start hangs that long | [`Error::WatchIdle`], watch again at once |
//! | `ERROR` event 429 | backoff, watch again |
//! | `ERROR` event 410 or other | backoff, relist |
//! | watch line that is not JSON, or a protobuf frame that is no watch event (PB12) | backoff, relist |
//! | unknown event type, object without metadata/name or of another kind | skip, the watch goes on |
//! | streaming list refused, broken, silent (R10) or ended early | this relist falls back to a paginated list |
//!
//! kube's client retries 429, 503 and 504 by itself unless its
//! `Config::default_retry` is off; the source sees those errors only once
//! the client gives up.
//!
//! # Decoding
//!
//! Each object is decoded once, straight from the page or line text into
//! `K` (the page's or line's envelope keeps it as unparsed text), after a
//! check of its kind and name that builds nothing. A page, or a burst of
//! watch lines that arrived together, big enough to pay for threads is
//! decoded on several cores; the events still come out one by one in the
//! server's order, with the same errors at the same places as a serial
//! decode. An informer may cap the threads one batch takes
//! ([`InformerBuilder::decode_threads`](crate::InformerBuilder::decode_threads));
//! a source opened here decodes as the defaults say.
//!
//! # Protobuf
//!
//! An informer built with [`Encoding::Protobuf`]
//! ([`InformerBuilder::encoding`](crate::InformerBuilder::encoding)) lists
//! and watches the built-in kinds the protobuf table has in protobuf; the
//! module docs of [`Encoding`] say why JSON is the default. The rules:
//!
//! - **PB9 Asked per resource, read by what came.** A collection whose
//!   type is a built-in kind's k8s-openapi type (it names its kind to serde,
//!   and the URL's apiVersion with that kind is in the table) is listed and
//!   watched with `Accept: application/vnd.kubernetes.protobuf,
//!   application/json`, and a metadata-only source of any resource asks
//!   for `PartialObjectMetadata` in protobuf, then in JSON; custom
//!   resources, `DynamicObject` and kinds the table lacks are asked for as
//!   JSON. Every answer
//!   is decoded by its `Content-Type`, so a server that answers JSON is
//!   read as JSON.
//! - **PB10 The same events.** List pages (their continue token and
//!   resourceVersion), watch frames in any pieces, bookmarks, a streaming
//!   list's initial-events-end bookmark and ERROR events give the events
//!   the same objects give in JSON, each object the value its JSON gives.
//! - **PB11 The same failures.** A protobuf `Status` body of a failed
//!   request (410, 403, 429, ...) fails it as its JSON does, so the table
//!   above applies unchanged.
//! - **PB12 Malformed as malformed JSON.** A frame that is not a watch
//!   event, a length above 16 MiB or a stream that ends inside a frame is
//!   a watch line that cannot be read: reported, then a backoff and a
//!   relist. A bad object in a whole frame (another kind, no metadata or
//!   name, an unknown event type, a message that does not decode) is
//!   reported and skipped, and a page that does not decode fails the list.
//!   An informer keeps what it holds meanwhile.
//!
//! # Paging
//!
//! Without [`Config::page_size`], lists page the way client-go's reflector
//! pages: `limit=500` with resourceVersion "0" and "", no limit when
//! relisting from a known resourceVersion (so the watch cache answers),
//! unless the first list came back in pages.
//!
//! # Examples
//!
//! ```no_run
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{Api, Client};
//! use kube_informer::source::{self, Config, Event};
//!
//! # async fn run() -> Result<(), kube::Error> {
//! let api: Api<ConfigMap> = Api::default_namespaced(Client::try_default().await?);
//! let events = source::watch_source(api, Config::default().label_selector("app=web"));
//! futures::pin_mut!(events);
//! while let Some(event) = events.next().await {
//!     match event {
//!         Ok(Event::Added(cm)) => println!("added {:?}", cm.metadata.name),
//!         Ok(other) => println!("{other:?}"),
//!         Err(error) => eprintln!("source error (it retries): {error}"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod backoff;
mod config;
mod decode;
pub(crate) mod decode_bench;
#[cfg(test)]
mod decode_prop;
mod encoding;
pub(crate) mod encoding_hook;
mod envelope;
mod error;
mod error_class;
mod event;
mod lines;
mod list;
mod prefetch;
mod setup;
mod stream;
mod target;
mod watch;
mod watchable;

use std::fmt::Debug;

use futures::Stream;
use kube::{Api, Resource, core::PartialObjectMeta};
use serde::de::DeserializeOwned;

pub(crate) use config::Settings;
pub use config::{BackoffConfig, Config, DEFAULT_PAGE_SIZE, ListSemantic, ListStrategy};
pub use encoding::Encoding;
pub use error::{DecodeTarget, Error};
pub use event::Event;
pub(crate) use setup::{DecodeOptions, SourceSetup};
pub use target::LIST_DEADLINE;
pub use watchable::Watchable;

use target::Target;

use crate::{protobuf::KindSchema, resource::WatchedResource};

/// Lists and watches `api`'s collection forever, as a stream of events.
///
/// Works for namespaced and cluster-wide `Api`s, typed resources and
/// `DynamicObject`s. Nothing happens until the stream is polled; dropping it
/// closes the open watch.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::source::{self, Config, Event};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = kube_informer_testing::FakeApiServer::start().await;
/// let api: Api<ConfigMap> = Api::default_namespaced(server.client());
/// let mut events = Box::pin(source::watch_source(api, Config::default()));
/// assert!(matches!(events.next().await, Some(Ok(Event::ListStart))));
/// assert!(matches!(events.next().await, Some(Ok(Event::ListDone { .. }))));
/// # }
/// ```
pub fn watch_source<K>(
    api: Api<K>,
    config: Config<K>,
) -> impl Stream<Item = Result<Event<K>, Error>> + Send + 'static
where
    K: Watchable,
{
    wired_source(api, config, SourceSetup::default())
}

/// [`watch_source`] counting and decoding as `setup` says.
pub(crate) fn wired_source<K>(
    api: Api<K>,
    config: Config<K>,
    setup: SourceSetup,
) -> impl Stream<Item = Result<Event<K>, Error>> + Send + 'static
where
    K: Watchable,
{
    let resource = watched_resource(api.resource_url(), &config);
    let protobuf = match setup.decode.encoding {
        Encoding::Json => None,
        Encoding::Protobuf => KindSchema::of::<K>(&resource.api_version()),
    };
    let target = Target::new(api, false, protobuf, resource);
    stream::run(target, config.into_settings(), setup)
}

/// Like [`watch_source`], but asks the server for metadata only
/// (`PartialObjectMetadata`), which saves memory when an informer needs
/// names, labels and owners but not specs.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::Api;
/// use kube_informer::source::{self, Config, Event};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = kube_informer_testing::FakeApiServer::start().await;
/// let api: Api<Pod> = Api::all(server.client());
/// let mut events = Box::pin(source::watch_metadata_source(api, Config::default()));
/// assert!(matches!(events.next().await, Some(Ok(Event::ListStart))));
/// # }
/// ```
pub fn watch_metadata_source<K>(
    api: Api<K>,
    config: Config<PartialObjectMeta<K>>,
) -> impl Stream<Item = Result<Event<PartialObjectMeta<K>>, Error>> + Send + 'static
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    PartialObjectMeta<K>: Resource + Clone + DeserializeOwned + Debug + Send + Sync,
{
    wired_metadata_source(api, config, SourceSetup::default())
}

/// [`watch_metadata_source`] counting and decoding as `setup` says.
pub(crate) fn wired_metadata_source<K>(
    api: Api<K>,
    config: Config<PartialObjectMeta<K>>,
    setup: SourceSetup,
) -> impl Stream<Item = Result<Event<PartialObjectMeta<K>>, Error>> + Send + 'static
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    PartialObjectMeta<K>: Resource + Clone + DeserializeOwned + Debug + Send + Sync,
{
    let resource = watched_resource(api.resource_url(), &config);
    // Any resource's metadata-only view is PartialObjectMetadata, which the
    // protobuf table has.
    let protobuf = match setup.decode.encoding {
        Encoding::Json => None,
        Encoding::Protobuf => KindSchema::metadata(),
    };
    let target = Target::new(api, true, protobuf, resource);
    stream::run(target, config.into_settings(), setup)
}

/// What a source over the collection at `url` with `config` lists and
/// watches: the `Api`'s URL read into group, version, plural and namespace
/// (so `DynamicObject` sources over different resources are told apart),
/// with the config's selectors. The informer and the factory name the
/// resource by this, as the source does.
pub(crate) fn watched_resource<C>(url: &str, config: &Config<C>) -> WatchedResource {
    let settings = config.settings();
    WatchedResource::from_url(
        url,
        settings.label_selector.clone(),
        settings.field_selector.clone(),
    )
}
