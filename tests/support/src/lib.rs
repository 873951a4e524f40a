//! An in-process fake Kubernetes API server that misbehaves on purpose:
//! test your own controllers against list/watch faults without a cluster.
//!
//! [`FakeApiServer::start`] binds `127.0.0.1:0` and serves list, watch,
//! read and write requests for any resource over plain HTTP, so a real [`kube::Client`]
//! (from [`FakeApiServer::client`]) talks to it exactly as it would to a
//! cluster. Tests change the versioned object store while watches run, tell
//! the server to fail in specific ways, and read back every request it got.
//!
//! What it serves:
//! - lists with `limit`/`continue` pagination, `resourceVersion` (`""`/`"0"`
//!   newest, `N` not older than N, `Exact`), label and field selectors, and
//!   metadata-only answers (`Accept: …;as=PartialObjectMetadata…`);
//! - watches as chunked JSON lines from any resourceVersion still in the
//!   window (older ones get a 410 `ERROR` event), with bookmarks, streaming
//!   lists (`sendInitialEvents=true` ending at the
//!   `k8s.io/initial-events-end` bookmark) and `timeoutSeconds` measured on
//!   tokio's clock.
//! - lists, watches and their error `Status`es in protobuf
//!   (`application/vnd.kubernetes.protobuf`) when the request's `Accept`
//!   puts it first, as kube-apiserver does: for the built-in kinds of
//!   Kubernetes 1.34 and the metadata-only view of any resource, encoded
//!   byte for byte as k8s.io/apimachinery's encoder writes them (watch
//!   streams as length-prefixed `WatchEvent` frames); custom resources in
//!   JSON, or 406 when the client takes no JSON. Writes take and answer
//!   JSON.
//! - reads and writes of single objects, namespaced or not (namespaces
//!   included): `GET`, `POST` (create, with `generateName`), `PUT`
//!   (replace), `PATCH` (JSON merge patch, a strategic merge patch being
//!   applied as one, and JSON patch with `test`, a failed operation
//!   answered 422 `Invalid` as the API server does) and `DELETE` (with
//!   `preconditions`), and `DELETE` of a collection. They share the store with the methods below: each change
//!   takes the next resourceVersion and reaches open watches as one event; a
//!   stale `resourceVersion` gets 409 `Conflict`, a write that changes
//!   nothing takes no resourceVersion.
//! - deletion as the API server and its controllers do it: an object with
//!   finalizers is marked with a `deletionTimestamp` and goes when an update
//!   empties them; `propagationPolicy` Background, Foreground and Orphan
//!   are carried out through `ownerReferences` by a garbage collector that
//!   runs inside the write; a deleted namespace terminates, its contents go,
//!   then it does. A `DELETE` that names no policy (kube's
//!   `DeleteParams::default()`) is a background deletion, as on
//!   kube-apiserver: once the owner is gone, every dependent whose owners
//!   are all gone is deleted too (rules DL7 and GC2). A test that deletes
//!   a controller's object with the default options therefore sees the
//!   objects it owns go with it; `DeleteParams::orphan()` keeps them.
//!   Objects may be created in a namespace that has no Namespace object.
//!
//! What it can be told to do ([`FakeApiServer::fail_requests`],
//! [`FakeApiServer::delay_requests`], [`FakeApiServer::inject_watch_fault`] and
//! the settings): answer any status (403, 410, 429, 500, 504 "too large
//! resource version"…) to the next N matching requests, delay answers, expire
//! continue tokens and old resourceVersions ([`FakeApiServer::compact`]),
//! send an `ERROR` event, drop the connection, go silent while keeping the
//! connection open (a half-open connection), send a malformed line, an
//! unknown event type, an object without metadata, without a name or of
//! another kind, end watches ([`FakeApiServer::close_watches`]), send
//! bookmarks ([`FakeApiServer::send_bookmark`]), refuse streaming lists, and
//! ignore `limit` for `resourceVersion=0` as the API server's cache does.
//! One client's connection alone can be cut and healed
//! ([`FakeApiServer::linked_client`]): its requests are held meanwhile and
//! land late, as across a network partition.
//!
//! Timeouts and delays use tokio's clock: with `start_paused = true` a test
//! shares one runtime with the server, and idle time jumps forward.
//!
//! # Testing your own controllers
//!
//! Point the code under test at [`FakeApiServer::client`], fill the server
//! with objects, tell it how to fail, and assert what your code does. With
//! kube-informer, an informer built on `Api::all(server.client())` is tested
//! through list and watch faults this way; its crate docs ("Testing your
//! controllers") and this crate's README show such a test. The example
//! below tests code that uses `kube` directly: it must survive a 429 from the
//! API server by retrying.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, ListParams};
//! use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
//!
//! /// The code under test: lists ConfigMaps, retrying once on throttling.
//! async fn config_map_names(api: &Api<ConfigMap>) -> kube::Result<Vec<String>> {
//!     let list = match api.list(&ListParams::default()).await {
//!         Err(kube::Error::Api(status)) if status.code == 429 => api.list(&ListParams::default()).await?,
//!         other => other?,
//!     };
//!     Ok(list.items.into_iter().filter_map(|cm| cm.metadata.name).collect())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // #[tokio::test] async fn retries_once_when_throttled() {
//! let server = FakeApiServer::start().await;
//! let mut cm = ConfigMap::default();
//! cm.metadata.namespace = Some("default".into());
//! cm.metadata.name = Some("settings".into());
//! server.create(&cm)?;
//! server.fail_requests(RequestMatch::List, ApiStatus::too_many_requests(), 1);
//!
//! let api: Api<ConfigMap> = Api::default_namespaced(server.client());
//! assert_eq!(config_map_names(&api).await?, ["settings"]);
//! assert_eq!(server.requests().len(), 2); // the throttled list and the retry
//! # Ok(()) }
//! ```
//!
//! # Examples
//!
//! ```
//! use kube_informer_testing::FakeApiServer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, ListParams};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = FakeApiServer::start().await;
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.metadata.namespace = Some("default".into());
//! server.create(&cm)?;
//!
//! let api: Api<ConfigMap> = Api::default_namespaced(server.client());
//! let list = api.list(&ListParams::default()).await?;
//! assert_eq!(list.items.len(), 1);
//! assert_eq!(server.requests().last().unwrap().path, "/api/v1/namespaces/default/configmaps");
//! # Ok(())
//! # }
//! ```
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![forbid(unsafe_code)]

mod builtin;
mod crd;
mod deletion;
mod discovery;
mod faults;
mod field_set;
mod gc;
mod http;
mod json_patch;
mod link;
mod list;
mod managed_fields;
mod merge_keys;
mod protobuf;
mod record;
mod resource;
mod selector;
mod server_fields;
mod simulation;
mod status;
mod store;
mod transport;
mod watch;
mod write;

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace, Node, Pod, Secret},
};
use kube::Resource;
use parking_lot::Mutex;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tokio::{sync::Notify, task::JoinHandle};

pub use faults::WriteTarget;
pub use faults::{ApiStatus, RequestMatch, WatchFault};
pub use link::{HeldRequest, Link};
pub use record::RecordedRequest;
pub use resource::{ResourceType, ScopeName};
pub use simulation::{
    FaultMix, SEED_VAR, ScenarioOutcome, SeedRuns, SimContext, Simulation, SimulationFailure, Trace,
};
pub use status::{StatusCause, StatusDetails};
pub use store::StoreError;

use faults::{Answer, Faults, PendingWatchFault, RequestFault};
use store::State;

/// Server-wide behaviour switches.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) streaming_list_supported: bool,
    pub(crate) ignore_limit_at_rv0: bool,
    pub(crate) default_watch_timeout: Duration,
}

/// Everything the handler and the test handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) changed: Notify,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    pub(crate) requests_changed: Notify,
    pub(crate) settings: Mutex<Settings>,
    pub(crate) bookmark_epoch: AtomicU64,
    pub(crate) close_epoch: AtomicU64,
    pub(crate) open_watches: AtomicUsize,
}

/// A running fake API server. Dropping it stops the server.
///
/// All methods take `&self`; wrap it in an `Arc` to change objects from
/// another task.
#[derive(Debug)]
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Shorthand for the typed-object bounds of the store methods.
pub trait StaticResource:
    Resource<DynamicType = (), Scope: ScopeName> + Serialize + DeserializeOwned
{
}

impl<K> StaticResource for K where
    K: Resource<DynamicType = (), Scope: ScopeName> + Serialize + DeserializeOwned
{
}

fn to_value<K: Serialize>(object: &K) -> Value {
    serde_json::to_value(object).expect("kubernetes objects serialize to JSON")
}

fn from_value<K: DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).expect("the store returns what it was given")
}

impl FakeApiServer {
    /// Starts a server on `127.0.0.1` with a free port, on the current tokio
    /// runtime. ConfigMaps, Secrets, Pods, Namespaces, Nodes and Deployments
    /// are known from the start; other resources become known when first
    /// written or through [`register`](Self::register).
    pub async fn start() -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            faults: Mutex::new(Faults::default()),
            requests: Mutex::new(Vec::new()),
            requests_changed: Notify::new(),
            settings: Mutex::new(Settings {
                streaming_list_supported: true,
                ignore_limit_at_rv0: false,
                default_watch_timeout: Duration::from_secs(1800),
            }),
            bookmark_epoch: AtomicU64::new(0),
            close_epoch: AtomicU64::new(0),
            open_watches: AtomicUsize::new(0),
        });
        {
            let mut state = shared.state.lock();
            for rt in [
                ResourceType::of::<ConfigMap>(),
                ResourceType::of::<Secret>(),
                ResourceType::of::<Pod>(),
                ResourceType::of::<Namespace>(),
                ResourceType::of::<Node>(),
                ResourceType::of::<Deployment>(),
                crd::crd_resource_type(),
            ] {
                state.register(&rt);
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("bound socket has an address");
        let app = axum::Router::new()
            .fallback(http::handle)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "fake api server stopped");
            }
        });
        Self { shared, addr, task }
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Config` whose cluster URL points at this server (default
    /// namespace `default`), with kube's own retries of 429/503/504 turned
    /// off so that injected faults reach the code under test.
    pub fn config(&self) -> kube::Config {
        let uri = self
            .url()
            .parse()
            .expect("a socket address makes a valid URI");
        let mut config = kube::Config::new(uri);
        config.default_retry = false;
        config
    }

    /// A `kube::Client` built from [`config`](Self::config).
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config()).expect("a plain HTTP config builds a client")
    }

    // ---- the object store ----

    /// Makes a resource type known, so lists and watches of it succeed while it is empty.
    pub fn register(&self, resource: &ResourceType) {
        self.shared.state.lock().register(resource);
    }

    fn write<T>(
        &self,
        change: impl FnOnce(&mut State) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut state = self.shared.state.lock();
        let before = state.rv;
        let result = change(&mut state);
        gc::settle(&mut state, before); // the controllers finish deletions (GC8)
        drop(state);
        self.shared.changed.notify_waiters();
        result
    }

    /// Creates an object of any resource from JSON; returns it as stored
    /// (with `resourceVersion`, `uid`, `kind` and `apiVersion` set).
    pub fn create_value(
        &self,
        resource: &ResourceType,
        object: Value,
    ) -> Result<Value, StoreError> {
        self.write(|s| s.put(resource, object, Some(false)))
    }

    /// Replaces an existing object of any resource. An object being deleted
    /// keeps its `deletionTimestamp`, and goes when the update empties its
    /// finalizers.
    pub fn update_value(
        &self,
        resource: &ResourceType,
        object: Value,
    ) -> Result<Value, StoreError> {
        self.write(|s| deletion::update_stored(s, resource, object))
    }

    /// Creates or replaces an object of any resource.
    pub fn apply_value(&self, resource: &ResourceType, object: Value) -> Result<Value, StoreError> {
        self.write(|s| s.put(resource, object, None))
    }

    /// Deletes an object of any resource as a `DELETE` without options does:
    /// an object with finalizers is marked with a `deletionTimestamp` and
    /// returned as it now is; one without goes, and its last state is
    /// returned. Without options the deletion is a background one (DL7):
    /// once the object is gone, its dependents (through their
    /// `ownerReferences`) are garbage-collected, and a namespace's contents
    /// deleted, before this returns.
    pub fn delete_value(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, StoreError> {
        self.write(|s| deletion::delete_stored(s, resource, namespace, name))
    }

    /// The current objects of a resource, in key order.
    pub fn objects_value(&self, resource: &ResourceType) -> Vec<Value> {
        self.shared.state.lock().current_objects(resource)
    }

    /// Creates a typed object.
    pub fn create<K: StaticResource>(&self, object: &K) -> Result<K, StoreError> {
        self.create_value(&ResourceType::of::<K>(), to_value(object))
            .map(from_value)
    }

    /// Replaces a typed object (see [`update_value`](Self::update_value)).
    pub fn update<K: StaticResource>(&self, object: &K) -> Result<K, StoreError> {
        self.update_value(&ResourceType::of::<K>(), to_value(object))
            .map(from_value)
    }

    /// Creates or replaces a typed object.
    pub fn apply<K: StaticResource>(&self, object: &K) -> Result<K, StoreError> {
        self.apply_value(&ResourceType::of::<K>(), to_value(object))
            .map(from_value)
    }

    /// Deletes a typed object (see [`delete_value`](Self::delete_value)).
    pub fn delete<K: StaticResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<K, StoreError> {
        self.delete_value(&ResourceType::of::<K>(), namespace, name)
            .map(from_value)
    }

    /// Creates many typed objects under one lock, waking watches once.
    pub fn bulk_create<K: StaticResource>(
        &self,
        objects: impl IntoIterator<Item = K>,
    ) -> Result<(), StoreError> {
        let rt = ResourceType::of::<K>();
        self.write(|s| {
            for object in objects {
                s.put(&rt, to_value(&object), Some(false))?;
            }
            Ok(())
        })
    }

    /// The current typed objects, in key order.
    pub fn objects<K: StaticResource>(&self) -> Vec<K> {
        self.objects_value(&ResourceType::of::<K>())
            .into_iter()
            .map(from_value)
            .collect()
    }

    /// The newest resourceVersion handed out (0 before any write).
    pub fn resource_version(&self) -> u64 {
        self.shared.state.lock().rv
    }

    /// Forgets history up to now: lists with older continue tokens and
    /// watches from older resourceVersions get 410 Gone, and open watches
    /// that had not caught up get a 410 `ERROR` event.
    pub fn compact(&self) {
        self.write(|s| {
            s.compact();
            Ok(())
        })
        .expect("compaction cannot fail");
    }

    // ---- watch control ----

    /// Sends a `BOOKMARK` at the current resourceVersion on every open watch
    /// that asked for bookmarks.
    pub fn send_bookmark(&self) {
        self.shared.bookmark_epoch.fetch_add(1, Ordering::SeqCst);
        self.shared.changed.notify_waiters();
    }

    /// Ends every open watch normally (as if its timeout had passed).
    pub fn close_watches(&self) {
        self.shared.close_epoch.fetch_add(1, Ordering::SeqCst);
        self.shared.changed.notify_waiters();
    }

    /// How many watch streams are open right now.
    pub fn open_watches(&self) -> usize {
        self.shared.open_watches.load(Ordering::SeqCst)
    }

    // ---- faults ----

    /// Answers the next `times` requests matching `matcher` with `status`.
    pub fn fail_requests(&self, matcher: RequestMatch, status: ApiStatus, times: usize) {
        self.shared.faults.lock().requests.push(RequestFault {
            matcher,
            name: None,
            answer: Answer::Status(status),
            remaining: times,
        });
    }

    /// Delays the answers to the next `times` requests matching `matcher` (tokio's clock).
    pub fn delay_requests(&self, matcher: RequestMatch, delay: Duration, times: usize) {
        self.shared.faults.lock().requests.push(RequestFault {
            matcher,
            name: None,
            answer: Answer::Delay(delay),
            remaining: times,
        });
    }

    /// Holds each of the next `times` updates of the object named `name`
    /// (`PUT` or `PATCH` on its path) for `hold` on tokio's clock:
    /// the server neither answers nor applies it meanwhile, as an API server
    /// cut off from its client would. Then it applies and answers the write
    /// as usual, even if the client has given up waiting, so a write the
    /// client abandoned can still land late.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // The next renewal of this Lease hangs for 12 s.
    /// server.hold_updates("ring-pod-0", Duration::from_secs(12), 1);
    /// # }
    /// ```
    pub fn hold_updates(&self, name: &str, hold: Duration, times: usize) {
        self.shared.faults.lock().requests.push(RequestFault {
            matcher: RequestMatch::Update,
            name: Some(name.to_owned()),
            answer: Answer::Hold(hold),
            remaining: times,
        });
    }

    /// Makes the next watch matching `matcher` misbehave once it has sent
    /// `after_events` events (initial ADDED events and bookmarks count;
    /// lines sent by earlier faults do not).
    pub fn inject_watch_fault(
        &self,
        matcher: RequestMatch,
        after_events: usize,
        fault: WatchFault,
    ) {
        self.shared.faults.lock().watches.push(PendingWatchFault {
            matcher,
            after_events,
            fault,
        });
    }

    /// Whether `sendInitialEvents=true` watches are served (default) or
    /// refused with 422 as by servers without the WatchList feature.
    pub fn set_streaming_list_supported(&self, supported: bool) {
        self.shared.settings.lock().streaming_list_supported = supported;
    }

    /// Whether lists at `resourceVersion=0` ignore `limit` and return
    /// everything in one page, as the API server's watch cache does (default: false).
    pub fn set_ignore_limit_at_rv0(&self, ignore: bool) {
        self.shared.settings.lock().ignore_limit_at_rv0 = ignore;
    }

    /// The watch length when a request has no `timeoutSeconds` (default 30 min).
    pub fn set_default_watch_timeout(&self, timeout: Duration) {
        self.shared.settings.lock().default_watch_timeout = timeout;
    }

    // ---- what was asked ----

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().clone()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().clear();
    }

    /// Waits until `condition` holds for the recorded requests and the number
    /// of open watches.
    pub async fn wait_until(&self, condition: impl Fn(&[RecordedRequest], usize) -> bool) {
        loop {
            let notified = self.shared.requests_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if condition(&self.shared.requests.lock(), self.open_watches()) {
                return;
            }
            notified.await;
        }
    }
}
