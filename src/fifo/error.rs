//! What can go wrong when handing objects to a [`DeltaFifo`](super::DeltaFifo).

use crate::key::{KeyError, ObjectKey};

/// A boxed error, as returned by a [transform](super::FifoOptions::transform).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a [`DeltaFifo`](super::DeltaFifo) operation failed.
///
/// A failed operation rejects only the object it was given: nothing already
/// queued is lost, and items of a relist enqueued before the failing one stay.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key function could not key the object (for example, it has no name).
    #[error("cannot key object")]
    Key(#[from] KeyError),
    /// The transform rejected the object.
    #[error("transform rejected object {key}")]
    Transform {
        /// The key of the rejected object.
        key: ObjectKey,
        /// The transform's error.
        #[source]
        source: BoxError,
    },
    /// Deltas handed to [`requeue`](super::DeltaFifo::requeue) hold an object
    /// whose key is not the key of the deltas.
    #[error("requeued deltas for key {expected} hold an object keyed {found}")]
    RequeueKeyMismatch {
        /// The key of the deltas.
        expected: ObjectKey,
        /// The key of the stray object.
        found: ObjectKey,
    },
    /// [`listed`](super::DeltaFifo::listed) or
    /// [`list_done`](super::DeltaFifo::list_done) was called without an open
    /// [`list_start`](super::DeltaFifo::list_start).
    #[error("no streamed relist is in progress")]
    NoListInProgress,
    /// User code the FIFO called panicked; the object it was called for was
    /// skipped (L9).
    #[error("{callback} panicked: {message}")]
    Panicked {
        /// Which user code panicked.
        callback: UserCode,
        /// The panic message.
        message: String,
    },
    /// The FIFO is closed and has nothing left to pop.
    #[error("delta fifo is closed")]
    Closed,
}

/// User code a [`DeltaFifo`](super::DeltaFifo) calls, named in
/// [`Error::Panicked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UserCode {
    /// The [key function](super::FifoOptions::key_fn).
    KeyFunction,
    /// The [transform](super::FifoOptions::transform).
    Transform,
    /// The [known-objects view](super::FifoOptions::known_objects).
    KnownObjects,
}

impl std::fmt::Display for UserCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::KeyFunction => f.write_str("the key function"),
            Self::Transform => f.write_str("the transform"),
            Self::KnownObjects => f.write_str("the known-objects view"),
        }
    }
}

/// A `Result` whose error defaults to this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
