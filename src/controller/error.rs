//! What a controller's outcome stream reports when a reconcile does not
//! succeed, or the controller cannot start.

use std::fmt;

use crate::{informer, key::ObjectKey};

/// Why a reconcile did not succeed, or why the controller could not start.
///
/// `E` is the reconciler's own error type (`anyhow::Error` included). The
/// stream goes on after every variant but [`Setup`](Self::Setup) and
/// [`Sync`](Self::Sync), which end it.
///
/// Each message names its cause on one line, so printing `{error}` says
/// why (C12): a failed reconcile with its error, a controller that cannot
/// start with what its informer or factory reported (the resource, and
/// what to check). [`source`](std::error::Error::source) goes on from
/// there with what that message does not repeat (a sync timeout's last
/// list/watch error), so a chain printed with `{:#}` names each cause once.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use kube::{Api, core::{ApiResource, DynamicObject, GroupVersionKind}};
/// use kube_informer::{controller::{Controller, Error}, runner::Action};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// // A custom resource whose CRD is not installed.
/// let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
/// let widgets = ApiResource::from_gvk_with_plural(&gvk, "widgets");
/// let api = Api::<DynamicObject>::all_with(server.client(), &widgets);
/// let outcomes = Controller::new_with(api, widgets).run(
///     |_widget, _ctx: std::sync::Arc<()>| async { Ok::<_, kube::Error>(Action::await_change()) },
///     |_widget, _error, _ctx| Action::backoff(),
///     std::sync::Arc::new(()),
/// );
/// let mut outcomes = std::pin::pin!(outcomes);
/// let error = outcomes.next().await.unwrap().unwrap_err();
/// assert!(matches!(error, Error::Sync(_)));
/// let message = error.to_string();
/// assert!(message.contains("widgets"), "{message}");
/// assert!(message.contains("is not served by the API server (404)"), "{message}");
/// assert!(outcomes.next().await.is_none()); // the stream ends after it
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error<E> {
    /// The reconciler returned an error; the key got what the error policy
    /// returned (C5).
    Reconcile {
        /// The key reconciled.
        key: ObjectKey,
        /// What the reconciler returned.
        error: E,
    },
    /// The reconciler panicked; the panic was caught, the key is queued
    /// again through the rate limiter and the other keys go on (C6).
    Panicked {
        /// The key reconciled.
        key: ObjectKey,
        /// The panic's message.
        message: String,
    },
    /// A key was queued, but its object is in neither the cache nor the
    /// record of deleted objects ([`run`](super::Controller::run) keeps no
    /// such record): deleted before its turn, or never there (a `watches`
    /// mapper or a stream named it). Nothing was reconciled (C4).
    ObjectNotFound {
        /// The key taken from the queue.
        key: ObjectKey,
    },
    /// An informer of the controller did not sync: refused, not served,
    /// stopped or too slow (C3). The stream ends after it.
    Sync(informer::SyncError),
    /// An informer could not be made or subscribed to: the factory holds
    /// one with other options
    /// ([`OptionsDiffer`](informer::Error::OptionsDiffer)), or the informer
    /// had stopped ([`Stopped`](informer::Error::Stopped)). The stream
    /// ends after it.
    Setup(informer::Error),
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reconcile { key, error } => write!(f, "reconcile of {key} failed: {error}"),
            Self::Panicked { key, message } => write!(f, "reconcile of {key} panicked: {message}"),
            Self::ObjectNotFound { key } => write!(
                f,
                "{key} is not in the cache: deleted before its reconcile, or never there"
            ),
            // C12: why, on the line a user prints.
            Self::Sync(error) => write!(f, "the controller's caches did not sync: {error}"),
            Self::Setup(error) => write!(f, "the controller could not be set up: {error}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Error<E> {
    /// What the message does not already say: the cause behind the
    /// informer's or the factory's error, never that error again (C12).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Sync(error) => error.source(),
            Self::Setup(error) => error.source(),
            Self::Reconcile { .. } | Self::Panicked { .. } | Self::ObjectNotFound { .. } => None,
        }
    }
}

impl<E> Error<E> {
    /// The key this error is about, if it is about one.
    pub fn key(&self) -> Option<&ObjectKey> {
        match self {
            Self::Reconcile { key, .. }
            | Self::Panicked { key, .. }
            | Self::ObjectNotFound { key } => Some(key),
            Self::Sync(_) | Self::Setup(_) => None,
        }
    }
}
