//! What a controller's outcome stream reports when a reconcile does not
//! succeed, or the controller cannot start.

use crate::{factory, informer, key::ObjectKey};

/// Why a reconcile did not succeed, or why the controller could not start.
///
/// `E` is the reconciler's own error type (`anyhow::Error` included). The
/// stream goes on after every variant but [`Setup`](Self::Setup) and
/// [`Sync`](Self::Sync), which end it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<E> {
    /// The reconciler returned an error; the key got what the error policy
    /// returned (C5).
    #[error("reconcile of {key} failed: {error}")]
    Reconcile {
        /// The key reconciled.
        key: ObjectKey,
        /// What the reconciler returned.
        error: E,
    },
    /// The reconciler panicked; the panic was caught, the key is queued
    /// again through the rate limiter and the other keys go on (C6).
    #[error("reconcile of {key} panicked: {message}")]
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
    #[error("{key} is not in the cache: deleted before its reconcile, or never there")]
    ObjectNotFound {
        /// The key taken from the queue.
        key: ObjectKey,
    },
    /// An informer of the controller did not sync: refused, not served,
    /// stopped or too slow (C3). The stream ends after it.
    #[error("the controller's caches did not sync")]
    Sync(#[source] informer::SyncError),
    /// An informer could not be made or subscribed to: the factory holds
    /// one with other options, or the informer had stopped. The stream
    /// ends after it.
    #[error("the controller could not be set up")]
    Setup(#[source] SetupError),
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

/// Why a controller could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The factory refused to share an informer (it holds one for that
    /// resource with other options).
    #[error(transparent)]
    Factory(#[from] factory::Error),
    /// An informer refused a subscription (it had stopped).
    #[error(transparent)]
    Informer(#[from] informer::Error),
}
