//! Why [`finalizer`](super::finalizer) failed.

/// Why [`finalizer`](super::finalizer) failed; `E` is the reconcile's error.
///
/// Each variant says whether anything was written: only the two patch
/// errors come after a request, and neither leaves a partial change (a
/// JSON patch applies whole or not at all). Every one of them is worth a
/// retry except the three about bad input, [`Error::UnnamedObject`],
/// [`Error::InvalidFinalizer`] and [`Error::WrongNamespace`], which fail the
/// same way each time.
///
/// It is a [`std::error::Error`] when `E` is (`anyhow::Error` is not one:
/// it displays and debugs, and a runner reports it all the same).
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
#[derive(Debug, thiserror::Error)]
pub enum Error<E> {
    /// The reconcile returned an error for [`Event::Apply`](super::Event::Apply).
    #[error("apply failed: {0}")]
    ApplyFailed(#[source] E),
    /// The reconcile returned an error for
    /// [`Event::Cleanup`](super::Event::Cleanup); the finalizer stays, so
    /// the object stays, and the cleanup runs again on the next reconcile.
    #[error("cleanup failed: {0}")]
    CleanupFailed(#[source] E),
    /// The patch adding the finalizer failed. A 422 (`Invalid`) means a
    /// `test` of the patch failed: the object's finalizers or uid changed
    /// since it was read (Z5); nothing was written, and a retry on the
    /// newer object succeeds.
    #[error("adding the finalizer failed: {0}")]
    AddFinalizer(#[source] kube::Error),
    /// The patch removing the finalizer, after a successful cleanup,
    /// failed. A 422 (`Invalid`) means a `test` failed: the finalizer is
    /// no longer where it was read, or the object is another one (Z5);
    /// nothing was removed, and the next reconcile runs the cleanup again
    /// on the newer object (cleanups must be safe to repeat).
    #[error("removing the finalizer failed: {0}")]
    RemoveFinalizer(#[source] kube::Error),
    /// The object has no `metadata.name` (or an empty one), so there is
    /// nothing to patch.
    #[error("the object has no name")]
    UnnamedObject,
    /// The finalizer name is not a qualified name with a prefix, such as
    /// `example.com/cleanup` (Z6).
    #[error("finalizer name {name:?} is invalid: {why}")]
    InvalidFinalizer {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The `Api` reaches another namespace than the object's (say, an
    /// `Api::all` for a namespaced object): build it with
    /// `Api::namespaced(client, namespace)` for the object's namespace.
    #[error("the object is in namespace {object:?} but the Api reaches namespace {api:?}")]
    WrongNamespace {
        /// The object's namespace (`None` when cluster-scoped).
        object: Option<String>,
        /// The `Api`'s namespace (`None` for all namespaces or cluster scope).
        api: Option<String>,
    },
}
