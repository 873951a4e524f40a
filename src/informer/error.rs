//! What can go wrong while an informer runs, and what its handle refuses.

use std::sync::Arc;

/// An error boxed so it can be shared by every listener of
/// [`Informer::errors`](super::Informer::errors).
pub type SharedError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of the [`informer`](super) module.
///
/// Errors reported while running (source and queueing failures) are
/// delivered to [`Informer::errors`](super::Informer::errors) and to the
/// builder's [`on_error`](super::InformerBuilder::on_error) callback; the
/// informer keeps going after them. The others are returned by the call that
/// failed. Cloning is cheap: the cause is shared.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The list/watch source yielded an error; it retries by itself (R9).
    #[error("list/watch source failed: {0}")]
    Source(#[source] SharedError),
    /// An event from the source could not be queued (for example an object
    /// without a name, or a transform that failed); that one object was
    /// skipped.
    #[error("could not queue an event: {0}")]
    Queue(#[source] Arc<crate::fifo::Error>),
    /// An object could not be stored (an index function panicked); the
    /// store kept the object's previous state and no notification was sent
    /// for that change.
    #[error("could not store an object: {0}")]
    Store(#[source] Arc<crate::store::Error>),
    /// `run` was called on an informer that is already running or has run.
    #[error("informer is already running or has run")]
    AlreadyRunning,
    /// The informer has stopped: it accepts no new subscriptions (L6).
    #[error("informer has stopped")]
    Stopped,
}

impl Error {
    /// Whether this error was reported while running (a source or queueing
    /// failure) rather than returned by a refused call.
    pub fn is_runtime(&self) -> bool {
        matches!(self, Error::Source(_) | Error::Queue(_) | Error::Store(_))
    }
}

/// A `Result` whose error defaults to the informer's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
