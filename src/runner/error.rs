//! [`Error`]: why a reconcile did not succeed, for a [`Runner`](super::Runner)
//! and a controller (`controller::Controller`) alike.
//!
//! Defined with the runner, the layer below the controller, so the two
//! share one type: a runner yields its [`Reconcile`](Error::Reconcile)
//! variant, a controller (`controller::Error<E>`, keyed by
//! [`ObjectKey`]) every variant.

use std::fmt;

use crate::{informer, key::ObjectKey};

/// Why a reconcile did not succeed, or why a controller could not start.
///
/// `E` is the reconciler's own error type (`anyhow::Error` included); `K`
/// is the key: a runner's own key type, [`ObjectKey`] for a controller
/// (where this type is `controller::Error<E>`). A
/// [`Runner`](super::Runner) yields [`Reconcile`](Self::Reconcile) only,
/// after it has queued the key again as the error policy said. A
/// controller's stream goes on after every variant but
/// [`Setup`](Self::Setup) and [`Sync`](Self::Sync), which end it.
///
/// Each message names its cause on one line, so printing `{error}` says
/// why (C12): a failed reconcile with its error, a controller that cannot
/// start with what its informer or factory reported (the resource, and
/// what to check). [`source`](std::error::Error::source) goes on from
/// there with what that message does not repeat (a sync timeout's last
/// list/watch error), so a chain printed with `{:#}` names each cause once.
/// The error displays when its key and the reconciler's error do.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use kube_informer::{queue::WorkQueue, runner::{Action, Error, Runner}};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new();
/// queue.add("default/a");
/// queue.shutdown(); // what is queued is still handed out
/// let outcomes: Vec<_> = Runner::new(queue)
///     .run(|_key| async { Err::<Action, _>(std::io::Error::other("disk full")) }, |_, _| Action::backoff())
///     .collect()
///     .await;
/// let error = outcomes[0].as_ref().unwrap_err();
/// assert!(matches!(error, Error::Reconcile { key: "default/a", .. }));
/// assert_eq!(error.to_string(), "reconcile of default/a failed: disk full");
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error<E, K = ObjectKey> {
    /// The reconciler returned an error; the key got what the error policy
    /// returned (C5), before this error was yielded.
    Reconcile {
        /// The key reconciled.
        key: K,
        /// What the reconciler returned.
        error: E,
    },
    /// A controller's reconciler panicked; the panic was caught, the key is
    /// queued again through the rate limiter and the other keys go on (C6).
    Panicked {
        /// The key reconciled.
        key: K,
        /// The panic's message.
        message: String,
    },
    /// A controller's key was queued, but its object is in neither the cache
    /// nor the record of deleted objects
    /// (`Controller::run` keeps no
    /// such record): deleted before its turn, or never there (a `watches`
    /// mapper or a stream named it). Nothing was reconciled (C4).
    ObjectNotFound {
        /// The key taken from the queue.
        key: K,
    },
    /// An informer of a controller did not sync: refused, not served,
    /// stopped or too slow (C3). The stream ends after it.
    Sync(informer::SyncError),
    /// An informer could not be made or subscribed to: the factory holds
    /// one with other options
    /// ([`OptionsDiffer`](informer::Error::OptionsDiffer)), or the informer
    /// had stopped ([`Stopped`](informer::Error::Stopped)). The stream
    /// ends after it.
    Setup(informer::Error),
}

impl<E: fmt::Display, K: fmt::Display> fmt::Display for Error<E, K> {
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

impl<E, K> std::error::Error for Error<E, K>
where
    E: fmt::Debug + fmt::Display,
    K: fmt::Debug + fmt::Display,
{
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

impl<E, K> Error<E, K> {
    /// The key this error is about, if it is about one.
    pub fn key(&self) -> Option<&K> {
        match self {
            Self::Reconcile { key, .. }
            | Self::Panicked { key, .. }
            | Self::ObjectNotFound { key } => Some(key),
            Self::Sync(_) | Self::Setup(_) => None,
        }
    }
}
