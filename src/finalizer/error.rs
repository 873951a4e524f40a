//! Why [`finalizer`](super::finalizer) failed.

use std::fmt;

/// Why [`finalizer`](super::finalizer) failed; `E` is the reconcile's error.
///
/// Each variant says whether anything was written: only the two patch
/// errors come after a request, and neither leaves a partial change (a
/// JSON patch applies whole or not at all). Every one of them is worth a
/// retry except the three about bad input, [`Error::UnnamedObject`],
/// [`Error::InvalidFinalizer`] and [`Error::WrongNamespace`], which fail the
/// same way each time.
///
/// It is a [`std::error::Error`] for any `E` that displays and debugs,
/// `anyhow::Error` included (kube-runtime's asks `E: std::error::Error`),
/// so it converts into [`kube_informer::Error`](crate::Error) with `?`.
/// The reconcile's error is in the message, once: it is not also the
/// [`source`](std::error::Error::source); a patch's [`kube::Error`] is.
///
/// # Examples
///
/// ```
/// use kube_informer::finalizer::Error;
///
/// let error: Error<std::io::Error> = Error::InvalidFinalizer {
///     name: "cleanup".into(),
///     why: "it has no prefix".into(),
/// };
/// assert_eq!(error.to_string(), "finalizer name \"cleanup\" is invalid: it has no prefix");
/// ```
#[derive(Debug)]
pub enum Error<E> {
    /// The reconcile returned an error for [`Event::Apply`](super::Event::Apply).
    ApplyFailed(E),
    /// The reconcile returned an error for
    /// [`Event::Cleanup`](super::Event::Cleanup); the finalizer stays, so
    /// the object stays, and the cleanup runs again on the next reconcile.
    CleanupFailed(E),
    /// The patch adding the finalizer failed. A 422 (`Invalid`) means a
    /// `test` of the patch failed: the object's finalizers or uid changed
    /// since it was read (Z5); nothing was written, and a retry on the
    /// newer object succeeds.
    AddFinalizer(kube::Error),
    /// The patch removing the finalizer, after a successful cleanup,
    /// failed. A 422 (`Invalid`) means a `test` failed: the finalizer is
    /// no longer where it was read, or the object is another one (Z5);
    /// nothing was removed, and the next reconcile runs the cleanup again
    /// on the newer object (cleanups must be safe to repeat).
    RemoveFinalizer(kube::Error),
    /// The object has no `metadata.name` (or an empty one), so there is
    /// nothing to patch.
    UnnamedObject,
    /// The finalizer name is not a qualified name with a prefix, such as
    /// `example.com/cleanup` (Z6).
    InvalidFinalizer {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The `Api` reaches another namespace than the object's (say, an
    /// `Api::all` for a namespaced object): build it with
    /// `Api::namespaced(client, namespace)` for the object's namespace.
    WrongNamespace {
        /// The object's namespace (`None` when cluster-scoped).
        object: Option<String>,
        /// The `Api`'s namespace (`None` for all namespaces or cluster scope).
        api: Option<String>,
    },
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ApplyFailed(error) => write!(f, "apply failed: {error}"),
            Self::CleanupFailed(error) => write!(f, "cleanup failed: {error}"),
            Self::AddFinalizer(error) => write!(f, "adding the finalizer failed: {error}"),
            Self::RemoveFinalizer(error) => write!(f, "removing the finalizer failed: {error}"),
            Self::UnnamedObject => f.write_str("the object has no name"),
            Self::InvalidFinalizer { name, why } => {
                write!(f, "finalizer name {name:?} is invalid: {why}")
            }
            Self::WrongNamespace { object, api } => write!(
                f,
                "the object is in namespace {object:?} but the Api reaches namespace {api:?}"
            ),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::AddFinalizer(error) | Self::RemoveFinalizer(error) => Some(error),
            Self::ApplyFailed(_)
            | Self::CleanupFailed(_)
            | Self::UnnamedObject
            | Self::InvalidFinalizer { .. }
            | Self::WrongNamespace { .. } => None,
        }
    }
}
