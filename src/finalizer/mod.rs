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
//!                 Ok(Action::AwaitChange)
//!             }
//!             Event::Cleanup(cm) => {
//!                 println!("tear down what {} made", cm.name_any());
//!                 Ok(Action::AwaitChange)
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
//!   lacks the finalizer gets it through a JSON patch before the reconcile
//!   is called. So `Apply` never acts on an object whose deletion could
//!   skip `Cleanup`; when the patch fails, the reconcile is not called.
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
//!   finalizer is left alone: [`Action::AwaitChange`], no reconcile, no write
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
//! - **Z9 Apply without waiting for the echo.** Once the patch of Z1 is
//!   accepted, the reconcile runs [`Event::Apply`] in the same call, on
//!   the object the API server answered with (it carries the finalizer),
//!   and its [`Action`] or [`Error::ApplyFailed`] is returned. Nothing
//!   depends on the write coming back through a watch, so a controller's
//!   [`filter_changes`](crate::controller::Controller::filter_changes) may drop that
//!   event: adding a finalizer leaves `metadata.generation` as it was, and
//!   [`changed::generation()`](crate::ext::changed::generation) turns
//!   it away. (kube-runtime's helper returns after the patch and waits for
//!   the event; with a generation predicate its `Apply` never comes.)
//! - **Z10 Recorded patches.** Given a [`RecordedApi`] (see
//!   [`FinalizerApi`]), the helper sends both patches through it, so its
//!   [`WriteLog`](crate::own_writes::WriteLog) records them under the
//!   `RecordedApi`'s key (RW5): the addition at the version it left, a
//!   removal that let the object go as its deletion (RW9). With
//!   [`read_own_writes`](crate::controller::Controller::read_own_writes)
//!   the key's next reconcile waits until the cache shows them, so a
//!   lagging cache hands no object that still carries the removed
//!   finalizer to one more `Cleanup`.
//! - **Z11 One cleanup per deletion.** Given a [`RecordedApi`], a cleanup
//!   that succeeded is kept in its log, for the object's uid and the
//!   finalizer, until the removal of that finalizer lands (or answers 404:
//!   the object is gone). A later call for that object while it still
//!   carries the finalizer does not run [`Event::Cleanup`] again: it sends
//!   the removal only, and returns [`Action::AwaitChange`] when it lands. So,
//!   with Z10 and the controller's gate, a removal refused by a 503 or by a
//!   stale read's 422 costs a retry of the patch, not a second cleanup.
//!   The log lives in memory: after a restart the cleanup of an object
//!   still being deleted runs again, so cleanups must stay safe to repeat.
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
//! [`Error::CleanupFailed`] the cleanup runs again, and after a
//! [`Error::RemoveFinalizer`] too unless the helper was given a
//! [`RecordedApi`] (Z11), so it must be safe to repeat. `Apply` runs again
//! whenever the object's key is reconciled again, the echo of the
//! finalizer's own addition included when no change filter drops it. An
//! `Apply` may run on an object whose deletion has just begun on the
//! server, as any reconcile may.
//!
//! A reconcile that reads an object older than the server's (a cache that
//! has not seen the last write yet, say the finalizer just added) sends a
//! patch whose test fails: a 422, returned as an error and retried, never
//! a wrong write. With a [`RecordedApi`] and the controller's gate, the
//! reconcile that follows a patch waits for the cache to show it (Z10),
//! so this is rare.
//!
//! # Deadline
//!
//! Each patch request has [`PATCH_TIMEOUT`], kube-apiserver's own default
//! for a request, plus a margin: a server that takes the request and never
//! answers fails it as [`Error::AddFinalizer`] or [`Error::RemoveFinalizer`]
//! carrying a [`kube::Error::Service`], as kube's own timeouts are
//! reported. The reconcile's own awaits are its business.
//!
//! [`RecordedApi`]: crate::own_writes::RecordedApi

mod cleanups;
mod error;
mod name;
mod patch;
mod target;

use std::{fmt::Debug, future::Future, sync::Arc};

use kube::Resource;
use serde::{Serialize, de::DeserializeOwned};

use crate::runner::Action;
use cleanups::Cleanups;

pub use error::Error;
pub use target::{FinalizerApi, PATCH_TIMEOUT};

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
/// finalizer first (Z1) and then applies (Z9), hands live objects to
/// [`Event::Apply`] (Z2), deleted ones to [`Event::Cleanup`] and then
/// removes the finalizer (Z3), leaves deleted objects without it alone
/// (Z4); see the [module docs](self) for the rules and the patches.
///
/// `api` is a [`kube::Api`] or, to record the patches and keep a cleanup
/// from running twice, a [`RecordedApi`] (Z10, Z11; see [`FinalizerApi`]).
/// It must reach the object's namespace (`Api::namespaced`) or, for a
/// cluster-scoped kind, the cluster (`Api::all`); `name` is a qualified
/// name such as `example.com/cleanup`. `object` is the state the decision
/// is made from, usually the cache's; the helper sends at most one request
/// of its own.
///
/// # Examples
///
/// Against the fake API server from `kube-informer-testing`: a new object
/// gets the finalizer, then `Apply` runs on the object the server answered
/// with; a deleted one is cleaned up and goes.
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
///         Event::Cleanup(_) => Ok(Action::AwaitChange),
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
/// // The finalizer goes on, then `handle` applies.
/// let first = finalizer(&api, "example.com/cleanup", Arc::new(cm), handle).await?;
/// assert_eq!(first, Action::requeue(Duration::from_secs(300)));
/// assert_eq!(api.get("app").await?.finalizers(), ["example.com/cleanup"]);
///
/// api.delete("app", &Default::default()).await?;
/// let deleting = api.get("app").await?; // held by the finalizer
/// let cleaned = finalizer(&api, "example.com/cleanup", Arc::new(deleting), handle).await?;
/// assert_eq!(cleaned, Action::AwaitChange);
/// assert!(api.get_opt("app").await?.is_none());
/// # Ok(()) }
/// ```
///
/// [`RecordedApi`]: crate::own_writes::RecordedApi
pub async fn finalizer<K, A, F, Fut, E>(
    api: &A,
    name: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    A: FinalizerApi<K>,
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
    let api_namespace = api.api().namespace();
    if namespace != api_namespace {
        return Err(Error::WrongNamespace {
            object: namespace.map(str::to_owned),
            api: api_namespace.map(str::to_owned),
        });
    }
    let cleanups = Cleanups::of(api.recorded().map(|recorded| recorded.log()), meta, name);
    let ours = !patch::positions(meta, name).is_empty();
    let deleting = meta.deletion_timestamp.is_some();
    if !deleting {
        cleanups.live();
    }
    match (deleting, ours) {
        // Z1, then Z9 on the object the server answered with.
        (false, false) => {
            let add = patch::add(meta, name);
            let added: K = target::send(api, object_name, add)
                .await
                .map_err(Error::AddFinalizer)?;
            let meta = added.meta();
            if meta.deletion_timestamp.is_none() && !patch::positions(meta, name).is_empty() {
                reconcile(Event::Apply(Arc::new(added)))
                    .await
                    .map_err(Error::ApplyFailed)
            } else {
                // A server that took the patch holds the finalizer, and it
                // refuses a new one on an object being deleted: an answer
                // without it is no object to apply.
                Ok(Action::AwaitChange)
            }
        }
        // Z2
        (false, true) => reconcile(Event::Apply(object))
            .await
            .map_err(Error::ApplyFailed),
        // Z3, Z11: the patch is computed from the object the cleanup was given.
        (true, true) => {
            let remove = patch::remove(meta, name);
            let object_name = object_name.to_owned();
            let action = if cleanups.finished_before() {
                Action::AwaitChange
            } else {
                let action = reconcile(Event::Cleanup(object))
                    .await
                    .map_err(Error::CleanupFailed)?;
                cleanups.finished();
                action
            };
            match target::send::<K, A>(api, &object_name, remove).await {
                Ok(_) => {
                    cleanups.settled();
                    Ok(action)
                }
                Err(error) => {
                    if matches!(&error, kube::Error::Api(status) if status.code == 404) {
                        // Gone: there is no finalizer left to remove.
                        cleanups.settled();
                    }
                    Err(Error::RemoveFinalizer(error))
                }
            }
        }
        // Z4
        (true, false) => {
            cleanups.settled();
            Ok(Action::AwaitChange)
        }
    }
}
