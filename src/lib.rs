//! Async-native shared informers for Kubernetes.
//!
//! Watch events become [`Delta`]s in a keyed [`DeltaFifo`](fifo::DeltaFifo),
//! which an informer applies to an indexed store and turns into
//! [`Notification`]s for any number of independent subscriptions.
//!
//! Most programs need only an [`Informer`] (or an [`InformerFactory`] to
//! share informers across a program) and the [`prelude`]:
//!
//! ```no_run
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::Pod;
//! use kube::{Api, Client};
//! use kube_informer::prelude::*;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let informer = Informer::builder(Api::<Pod>::all(Client::try_default().await?)).build();
//! let changes = informer.subscribe(SubscribeOptions::default())?.changed_only();
//! tokio::spawn(informer.run());
//! changes
//!     .for_each(|n| async move {
//!         if let Notification::Added { object, .. } = n {
//!             println!("new pod {:?}", object.metadata.name);
//!         }
//!     })
//!     .await;
//! # Ok(()) }
//! ```
//!
//! New to the crate? The [`guide`] reads in order, from a first informer
//! to a tested, sharded operator.
//!
//! # What is where, by the question you have
//!
//! - *How do I cache and watch a resource?* [`Informer`] (built with
//!   [`Informer::builder`], [`Informer::metadata_builder`] or
//!   [`Informer::builder_from_stream`]; settings in [`InformerBuilder`] and
//!   [`source::Config`]); one per type for a whole program:
//!   [`InformerFactory`].
//! - *How do I read the cache?* [`Store`] (`get`, `list`, `by_index`;
//!   indexes from [`InformerBuilder::indexer`]), [`NamespacedStore`], keyed by
//!   [`ObjectKey`].
//! - *How do I cache less?* [`InformerBuilder::strip_managed_fields`],
//!   [`Informer::metadata_builder`] (metadata only), a slim type of your
//!   own with the fields you read: [`projection!`] (see
//!   [`projection`](mod@projection)), or objects kept compressed and
//!   decoded when read: [`InformerBuilder::compact_cache`] (see
//!   [`store::compact`]). They combine; [`guide::memory`] has what each
//!   costs.
//! - *How am I told about changes?* [`Subscription`] (a stream of
//!   [`Notification`]s; per-subscriber [`SubscribeOptions`]: resync
//!   period, [`Lag`] policy, name), its end in [`dispatch::EndReason`],
//!   callback style through [`ResourceEventHandler`]; combinators in
//!   [`NotificationStreamExt`] (`changed_only`, `keys`, `objects`).
//! - *How do I write an operator?* [`Controller`] (triggers, change filters in
//!   [`ext::changed`], error policy, shutdown, reconcile metrics) with
//!   [`runner::Action`]; finalizers with [`finalizer`]. Underneath:
//!   [`WorkQueue`] (client-go's work queue rules, rate limiters in
//!   [`queue`]), [`runner::Runner`], owner mapping in
//!   [`runner::OwnerStreamExt`].
//! - *How do I keep a reconcile from acting on a cache that has not seen
//!   its own last writes?* [`Controller::read_own_writes`] with an
//!   [`own_writes::WriteLog`]; underneath, [`Store::wait_for`] and
//!   [`resource_version::compare`].
//! - *How do I split work between replicas?* [`shard::Shard`],
//!   [`shard::KeyGate`], leader election in [`shard::leader`].
//! - *What went wrong, and how is it doing?* [`Error`] (which each
//!   module's own error converts into), [`informer::Error`], [`Informer::errors`], [`Informer::metrics`] and
//!   the Prometheus exporter in [`metrics`].
//! - *What lies underneath?* [`source`] (list/watch as a stream of
//!   [`source::Event`]s), [`fifo::DeltaFifo`] and its [`Delta`]s. (The
//!   writer-side parts are reachable through a hidden `unstable` module for
//!   the crate's own tests and benchmarks only: not documented, outside
//!   semver.)
//!
//! # Adding it to your program
//!
//! kube-informer leaves two choices to the program that uses it, as a
//! library should: the Kubernetes version of `k8s-openapi` and the TLS
//! stack of `kube`. Name both in your own `Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! kube-informer = "0.1"
//! kube = { version = "5", default-features = false, features = ["client", "rustls-tls", "ring"] } # or "openssl-tls"
//! k8s-openapi = { version = "0.29", features = ["latest"] } # or the oldest API server you support, e.g. "v1_34"
//! ```
//!
//! That gives the informer and the controller; the other layers are
//! features (see Features), for example
//! `kube-informer = { version = "0.1", features = ["shard", "compact"] }`,
//! or `default-features = false` for the informer without the controller.
//!
//! # Features
//!
//! The informer, its store and subscriptions, the [`InformerFactory`], the
//! [`WorkQueue`] and the [`runner`] are always there. Each other layer is a
//! cargo feature, and builds and tests alone:
//!
//! - `controller` (default): [`Controller`], the finalizer helper
//!   ([`finalizer`]) and read-your-own-writes ([`own_writes`]), what a
//!   kube-rs user expects from `cargo add kube-informer`. Without it the
//!   crate is an informer library: `default-features = false`.
//! - `shard`: [`shard`] (Lease membership, rendezvous assignment,
//!   [`shard::KeyGate`]), with [`Runner::gate`](runner::Runner::gate) and
//!   [`Controller::shard`](controller::Controller::shard) to reconcile only
//!   the keys a replica owns.
//! - `leader-election` (turns on `shard`): [`shard::leader`], leader
//!   election over one Lease, as client-go's, gating work through a
//!   `KeyGate`. The name is the one kube-rs users search for; a leader is
//!   a shard of one, which is why it needs `shard`.
//! - `compact`: the compact cache, [`InformerBuilder::compact_cache`] and
//!   [`store::compact`]: objects kept encoded (MessagePack, LZ4) and
//!   decoded when read; adds `rmp-serde` and `lz4_flex`.
//! - `prometheus`: collectors for a `prometheus-client` registry in
//!   [`metrics`] (the controller's and the shard's with those features);
//!   the snapshot API needs no feature.
//! - `kube-runtime`: converts between [`ObjectKey`] and kube-runtime's
//!   `ObjectRef`, and adds
//!   [`ControllerFeed`](crate::controller_feed::ControllerFeed), which
//!   drives kube-runtime's `Controller` from a subscription.
//! - `deterministic`, for `[dev-dependencies]`: fixes the hash seed of the
//!   maps kept by key, so lists, resync rounds, late-join replays and
//!   relist deletions come in an order that depends only on the changes
//!   made. With it, and with no backoff jitter, a fixed watch timeout and
//!   `decode_threads(1)`, an informer or controller on a paused
//!   `current_thread` runtime repeats a seeded simulation exactly
//!   (kube-informer-testing's `Simulation`): the crate's own `select!`s are
//!   `biased`, so when several branches are ready the first listed wins
//!   rather than a random one.
//!
//! # Decoding
//!
//! Informers built from an `Api` decode a few watch events where they
//! arrive, on the async runtime's thread that reads them. List pages and
//! bursts big enough to split are cut into pieces of about a millisecond
//! of decoding, each a task on the runtime's worker threads, up to one per
//! core (at most four) at once, while the reading task waits: the crate
//! starts no thread, and no task waits behind more than one piece (why the
//! runtime's workers is in the source module's docs, and what it saves in
//! the repository's `benches/compare/NOTES.md`). On a single
//! core or a current-thread runtime, all decoding stays on the thread that
//! reads. An informer may take fewer threads per batch with
//! [`InformerBuilder::decode_threads`]: with `decode_threads(1)` it decodes
//! everything on the thread that reads.
//!
//! # Testing your controllers
//!
//! [`kube-informer-testing`](https://docs.rs/kube-informer-testing) is an
//! in-process fake API server that lists and watches like a real one and
//! fails on request (error statuses, dropped or broken watches, expired
//! resourceVersions), so the code you write on top of an informer can be
//! tested against list/watch faults without a cluster. Add it as a
//! dev-dependency; a test of your own then reads:
//!
//! ```
//! use k8s_openapi::api::core::v1::{Pod, PodSpec};
//! use kube::Api;
//! use kube_informer::{Informer, Store};
//! use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
//!
//! /// The code under test: how many Pods run on `node`.
//! fn pods_on(store: &Store<Pod>, node: &str) -> usize {
//!     store.by_index("by-node", node).map_or(0, |pods| pods.len())
//! }
//!
//! fn pod(name: &str, node: &str) -> Pod {
//!     let mut pod = Pod::default();
//!     pod.metadata.namespace = Some("default".into());
//!     pod.metadata.name = Some(name.into());
//!     pod.spec = Some(PodSpec { node_name: Some(node.into()), ..Default::default() });
//!     pod
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // #[tokio::test] async fn counts_pods_through_faults() {
//! let server = FakeApiServer::start().await;
//! server.create(&pod("web-0", "node-1"))?;
//! // The first list fails with a 500 and the first watch breaks off.
//! server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 1);
//! server.inject_watch_fault(RequestMatch::Watch, 0, WatchFault::DropConnection);
//!
//! let informer = Informer::builder(Api::<Pod>::all(server.client()))
//!     .indexer("by-node", |pod: &Pod| pod.spec.iter().filter_map(|s| s.node_name.clone()).collect())
//!     .build();
//! tokio::spawn(informer.run());
//! informer.wait_until_synced().await?;
//! assert_eq!(pods_on(&informer.store(), "node-1"), 1);
//! assert!(informer.metrics().errors >= 1); // the 500, reported and retried
//!
//! server.create(&pod("web-1", "node-1"))?;
//! while pods_on(&informer.store(), "node-1") < 2 {
//!     tokio::task::yield_now().await; // the re-opened watch delivers it
//! }
//! # Ok(()) }
//! ```
//!
//! # Layers
//!
//! Modules import only downward (rule A1): each may use the modules on the lines
//! before its own in this list, none on its own line or after it, so no two modules
//! depend on each other and each stage can be read, tested and replaced
//! on its own. `tests/architecture.rs` reads this list and fails on an
//! import that breaks it (links in docs may point anywhere).
//!
//! 1. `key`, `hash` — object keys, which every stage names objects by (and
//!    the error of keying, queuing and storing them, public as
//!    [`store::Error`]), and the hasher of every map and set kept by key.
//! 2. `delta`, `notification`, `resource`, `resource_version`, `projection`, `panic`, `deadline`, `protobuf` —
//!    plain data passed between the stages (the
//!    resource an informer watches and how its versions compare among
//!    it), the macro that gives a slim type of the user's the identity of
//!    a full one, and crate-private pieces they share: the one way
//!    user code is run so that its panic becomes an error, the one "is
//!    it due" rule of everything that recurs on a period, and the decoder
//!    of Kubernetes protobuf into k8s-openapi types.
//! 3. `metrics`, `sync_error` — each stage's counters and snapshots; the
//!    exporter takes readers the stages make, and knows none of them; why
//!    a wait for an informer's first sync ended, which an informer, its
//!    store and its subscriptions all answer with.
//! 4. `source`, `fifo`, `store`, `dispatch`, `queue`, `ext`, `own_writes` —
//!    the stages; none knows another (the FIFO sees the store through
//!    its own known-objects trait, the distributor sees notifications
//!    only, the write log knows keys and versions, not stores).
//! 5. `informer`, `controller_feed` — the informer wires the stages together.
//! 6. `factory`, `shard` — one informer per type for a program; sharding
//!    runs an informer on Leases and filters notification streams.
//! 7. `runner` — reconcile workers over a queue, a store and a shard gate.
//! 8. `controller`, `finalizer` — an operator's wiring: triggers,
//!    change filters, a runner, shutdown and reconcile metrics over shared
//!    informers; the finalizer helper a reconcile calls (it returns the
//!    runner's `Action` and talks to the API server through `kube` only).
//! 9. `error`, `unstable`, `guide` — the one error every module's
//!    converts into; re-exports of writer-side parts for the crate's own
//!    tests and benchmarks (a `#[doc(hidden)]` module, outside the semver
//!    promise and the documented API); the guide's pages, which hold no
//!    code.
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
pub mod controller;
#[cfg(feature = "kube-runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube-runtime")))]
pub mod controller_feed;
mod deadline;
pub mod delta;
pub mod dispatch;
mod error;
pub mod ext;
pub mod factory;
pub mod fifo;
#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
pub mod finalizer;
pub mod guide;
mod hash;
pub mod informer;
pub mod key;
pub mod metrics;
pub mod notification;
#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
pub mod own_writes;
mod panic;
pub mod projection;
pub(crate) mod protobuf;
pub mod queue;
mod resource;
pub mod resource_version;
pub mod runner;
#[cfg(feature = "shard")]
#[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
pub mod shard;
pub mod source;
pub mod store;
mod sync_error;
#[doc(hidden)]
pub mod unstable;

#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
pub use controller::Controller;
pub use delta::{Delta, DeltaObject, DeltaType, Deltas};
pub use dispatch::{Lag, ResourceEventHandler, SubscribeOptions, Subscription};
pub use error::Error;
pub use ext::NotificationStreamExt;
pub use factory::InformerFactory;
pub use informer::{Informer, InformerBuilder};
pub use key::ObjectKey;
pub use notification::Notification;
pub use queue::WorkQueue;
pub use resource::WatchedResource;
pub use source::Watchable;
pub use store::{NamespacedStore, Store};
/// The token that stops informers, runners and controllers, re-exported
/// from `tokio-util` so a program need not name that crate.
pub use tokio_util::sync::CancellationToken;

/// The names most informer programs use, in one import:
/// `use kube_informer::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "controller")]
    pub use crate::controller::{Controller, Observed};
    #[doc(hidden)]
    pub use crate::store::Indexers;
    pub use crate::{
        CancellationToken, Error,
        dispatch::{Lag, ResourceEventHandler, SubscribeOptions, Subscription},
        ext::{ChangeFilter, NotificationStreamExt, changed},
        factory::InformerFactory,
        informer::{Informer, InformerBuilder},
        key::ObjectKey,
        notification::Notification,
        queue::{WorkItem, WorkQueue},
        runner::{Action, OnCancel, OwnerStreamExt, Runner},
        source::{self, Watchable},
        store::Store,
    };
}

/// What [`projection!`] expands to names, so a program that uses it needs
/// no `kube` or `k8s-openapi` import of its own for it. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    pub use kube;
}
