//! Finalizers: clean up after an object before the API server lets it go.
//!
//! A reconcile that creates things outside the object (cloud resources,
//! rows in a database, objects in another cluster) must hear of the
//! object's deletion even if the controller was down when it happened.
//! A finalizer of the controller's own on the object makes the API server
//! keep it, marked with a `deletionTimestamp`, until the controller has
//! cleaned up and removed the finalizer. [`finalizer`] does the
//! bookkeeping: the reconcile passes it the object and a closure that
//! handles an [`Event`], [`Event::Apply`] for a live object or
//! [`Event::Cleanup`] for one being deleted.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{Api, Client, ResourceExt};
//! use kube_informer::{finalizer::{self, Event, finalizer}, runner::Action};
//!
//! /// The reconcile a runner calls for each key.
//! async fn reconcile(
//!     client: Client,
//!     object: Arc<ConfigMap>,
//! ) -> Result<Action, finalizer::Error<std::io::Error>> {
//!     let api = Api::<ConfigMap>::namespaced(client, &object.namespace().unwrap_or_default());
//!     finalizer(&api, "example.com/cleanup", object, |event| async move {
//!         match event {
//!             Event::Apply(cm) => {
//!                 println!("make sure what {} needs exists", cm.name_any());
//!                 Ok(Action::Done)
//!             }
//!             Event::Cleanup(cm) => {
//!                 println!("tear down what {} made", cm.name_any());
//!                 Ok(Action::Done)
//!             }
//!         }
//!     })
//!     .await
//! }
//! ```
//!
//! # Rules
//!
//! - **Z1 Add before acting.** An object that is not being deleted and
//!   lacks the finalizer gets it through a JSON patch, and the reconcile is
//!   not called: [`finalizer`] returns [`Action::Done`]. The write changes
//!   the object, so its informer delivers it again and its key is queued;
//!   that reconcile finds the finalizer and runs [`Event::Apply`]. So
//!   `Apply` never acts on an object whose deletion could skip `Cleanup`.
//! - **Z2 Apply.** An object that is not being deleted and has the
//!   finalizer is handed to the reconcile as [`Event::Apply`]; its
//!   [`Action`] is returned, its error as [`Error::ApplyFailed`]. The
//!   helper writes nothing.
//! - **Z3 Cleanup, then remove.** An object with a `deletionTimestamp` and
//!   the finalizer is handed to the reconcile as [`Event::Cleanup`]. When
//!   that succeeds the finalizer is removed with a JSON patch and the
//!   cleanup's [`Action`] returned; once no finalizer is left, the API
//!   server deletes the object. When it fails the error is returned as
//!   [`Error::CleanupFailed`], nothing is written, and the finalizer keeps
//!   the object until a later cleanup succeeds.
//! - **Z4 Not ours to clean.** An object being deleted without the
//!   finalizer is left alone: [`Action::Done`], no reconcile, no write
//!   (the API server refuses new finalizers on an object being deleted).
//! - **Z5 A concurrent change conflicts.** Every patch `test`s what it was
//!   computed from (below): the object's uid, and for an addition the
//!   finalizer list as read, for a removal our name at each index it
//!   removes. If another writer changed them meanwhile, the API server
//!   refuses the whole patch with 422 `Invalid`, which is returned as
//!   [`Error::AddFinalizer`] or [`Error::RemoveFinalizer`]: nothing is
//!   written, no other finalizer is removed, and the reconcile, retried
//!   through the runner's rate limiter, starts over from the object as it
//!   is then.
//! - **Z6 Bad input.** A finalizer name that is not a qualified name with
//!   a prefix ([`Error::InvalidFinalizer`]), an object without a name
//!   ([`Error::UnnamedObject`]) and an `Api` of another namespace than the
//!   object's ([`Error::WrongNamespace`]) are errors before any request.
//! - **Z7 Deadline.** Each patch request has [`PATCH_TIMEOUT`]; one the
//!   server never answers fails then (see Deadline).
//! - **Z8 Spawnable.** The future [`finalizer`] returns is `Send` when its
//!   reconcile's is, and its types are `Send + Sync`, so a reconcile that
//!   calls it runs on a spawned task.
//!
//! # The patches
//!
//! Both are JSON patches (`application/json-patch+json`), sent with
//! [`kube::Api::patch`]; a JSON patch applies whole or not at all. For an
//! object with uid `u` and no finalizers, the addition is
//!
//! ```json
//! [{"op": "test", "path": "/metadata/uid", "value": "u"},
//!  {"op": "test", "path": "/metadata/finalizers", "value": null},
//!  {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]}]
//! ```
//!
//! (kube-apiserver reads a missing member as `null` in a `test`); with
//! finalizers `["other.io/x"]` it is
//!
//! ```json
//! [{"op": "test", "path": "/metadata/uid", "value": "u"},
//!  {"op": "test", "path": "/metadata/finalizers", "value": ["other.io/x"]},
//!  {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/cleanup"}]
//! ```
//!
//! and the removal, for `["other.io/x", "example.com/cleanup"]`, is
//!
//! ```json
//! [{"op": "test", "path": "/metadata/uid", "value": "u"},
//!  {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/cleanup"},
//!  {"op": "remove", "path": "/metadata/finalizers/1"}]
//! ```
//!
//! (each entry of ours, when it appears more than once, highest index
//! first). An object without a uid (one built by hand) is patched without
//! the uid test.
//!
//! # Retries and stale reads
//!
//! The reconcile may run more than once for one change: after a
//! [`Error::CleanupFailed`] or [`Error::RemoveFinalizer`] the cleanup runs
//! again, so it must be safe to repeat. An `Apply` may run on an object
//! whose deletion has just begun on the server, as any reconcile may.
//!
//! A reconcile that reads an object older than the server's (a cache that
//! has not seen the last write yet, say the finalizer just added) sends a
//! patch whose test fails: a 422, returned as an error and retried, never
//! a wrong write.
//!
//! # Deadline
//!
//! Each patch request has [`PATCH_TIMEOUT`], kube-apiserver's own default
//! for a request, plus a margin: a server that takes the request and never
//! answers fails it as [`Error::AddFinalizer`] or [`Error::RemoveFinalizer`]
//! carrying a [`kube::Error::Service`], as kube's own timeouts are
//! reported. The reconcile's own awaits are its business.

mod error;
mod name;
mod patch;

use std::{fmt::Debug, future::Future, sync::Arc, time::Duration};

use kube::{
    Api, Resource,
    api::{Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};

use crate::runner::Action;

pub use error::Error;

/// How long a finalizer patch may take: kube-apiserver ends a request
/// after 60 s by default (`--request-timeout`), so past 70 s no answer is
/// coming.
pub const PATCH_TIMEOUT: Duration = Duration::from_secs(70);

/// What [`finalizer`] asks the reconcile to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<K> {
    /// The object lives and carries the finalizer: bring the world in line
    /// with it (Z2).
    Apply(Arc<K>),
    /// The object is being deleted and still carries the finalizer: undo
    /// what `Apply` did; once this succeeds the finalizer is removed and
    /// the API server deletes the object (Z3).
    Cleanup(Arc<K>),
}

/// Runs `reconcile` for `object` under the finalizer `name`: adds the
/// finalizer first (Z1), hands live objects to [`Event::Apply`] (Z2),
/// deleted ones to [`Event::Cleanup`] and then removes the finalizer
/// (Z3), leaves deleted objects without it alone (Z4); see the [module
/// docs](self) for the rules and the patches.
///
/// `api` must reach the object's namespace (`Api::namespaced`) or, for a
/// cluster-scoped kind, the cluster (`Api::all`); `name` is a qualified
/// name such as `example.com/cleanup`. `object` is the state the decision
/// is made from, usually the cache's; at most one request is sent.
///
/// # Examples
///
/// Against the fake API server from `kube-informer-testing`: a new object
/// gets the finalizer and no `Apply`; the next reconcile, on the object as
/// it is then, runs `Apply`.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, ResourceExt};
/// use kube_informer::{finalizer::{Event, finalizer}, runner::Action};
/// use kube_informer_testing::FakeApiServer;
///
/// /// Checks the object again every five minutes while it lives.
/// async fn handle(event: Event<ConfigMap>) -> Result<Action, std::io::Error> {
///     match event {
///         Event::Apply(_) => Ok(Action::requeue(Duration::from_secs(300))),
///         Event::Cleanup(_) => Ok(Action::Done),
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("app".into());
/// let cm = server.create(&cm)?;
/// let api = Api::<ConfigMap>::namespaced(server.client(), "default");
///
/// // The finalizer goes on; `handle` does not run.
/// let first = finalizer(&api, "example.com/cleanup", Arc::new(cm), handle).await?;
/// assert_eq!(first, Action::Done);
/// let cm = api.get("app").await?;
/// assert_eq!(cm.finalizers(), ["example.com/cleanup"]);
///
/// let second = finalizer(&api, "example.com/cleanup", Arc::new(cm), handle).await?;
/// assert_eq!(second, Action::requeue(Duration::from_secs(300)));
/// # Ok(()) }
/// ```
pub async fn finalizer<K, F, Fut, E>(
    api: &Api<K>,
    name: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    name::check(name)?;
    let meta = object.meta();
    let object_name = meta
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or(Error::UnnamedObject)?;
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty());
    if namespace != api.namespace() {
        return Err(Error::WrongNamespace {
            object: namespace.map(str::to_owned),
            api: api.namespace().map(str::to_owned),
        });
    }
    let ours = !patch::positions(meta, name).is_empty();
    let deleting = meta.deletion_timestamp.is_some();
    match (deleting, ours) {
        // Z1
        (false, false) => {
            let add = patch::add(meta, name);
            send(api, object_name, add)
                .await
                .map_err(Error::AddFinalizer)?;
            Ok(Action::Done)
        }
        // Z2
        (false, true) => reconcile(Event::Apply(object))
            .await
            .map_err(Error::ApplyFailed),
        // Z3: the patch is computed from the object the cleanup was given.
        (true, true) => {
            let remove = patch::remove(meta, name);
            let object_name = object_name.to_owned();
            let action = reconcile(Event::Cleanup(object))
                .await
                .map_err(Error::CleanupFailed)?;
            send(api, &object_name, remove)
                .await
                .map_err(Error::RemoveFinalizer)?;
            Ok(action)
        }
        // Z4
        (true, false) => Ok(Action::Done),
    }
}

/// Sends one JSON patch, within [`PATCH_TIMEOUT`].
async fn send<K>(api: &Api<K>, name: &str, operations: serde_json::Value) -> kube::Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    // The operations are built by this module, so this cannot fail; were
    // it to, it is reported as a request that could not be built.
    let operations = serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
    let (params, patch) = (PatchParams::default(), Patch::Json::<()>(operations));
    let request = api.patch(name, &params, &patch);
    match tokio::time::timeout(PATCH_TIMEOUT, request).await {
        Ok(answer) => answer.map(drop),
        Err(elapsed) => Err(kube::Error::Service(Box::new(elapsed))),
    }
}
