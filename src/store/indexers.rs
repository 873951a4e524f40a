//! Named index functions: from an object to the values it is filed under.

use std::{fmt, sync::Arc};

use super::Error;

/// The name of the index every [`Store`](super::Store) has: objects by the
/// namespace part of their key (`""` for cluster-scoped objects).
pub const NAMESPACE_INDEX: &str = "namespace";

/// A function from an object to the values it is indexed under.
pub(crate) type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// How one index computes its values.
pub(crate) enum IndexKind<K> {
    /// The built-in namespace index: its value comes from the key, so it costs
    /// no call and no allocation per object.
    Namespace,
    /// A user function.
    Custom(IndexFn<K>),
}

impl<K> Clone for IndexKind<K> {
    fn clone(&self) -> Self {
        match self {
            IndexKind::Namespace => IndexKind::Namespace,
            IndexKind::Custom(f) => IndexKind::Custom(Arc::clone(f)),
        }
    }
}

/// The named index functions of a [`Store`](super::Store).
///
/// The [`NAMESPACE_INDEX`] is always there; adding an indexer under that name
/// replaces it, and adding one under a name already used replaces the older.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, source::Event, store::{Indexers, NAMESPACE_INDEX}};
///
/// let indexers = Indexers::<ConfigMap>::new().with("by-app", |cm| {
///     cm.metadata
///         .labels
///         .as_ref()
///         .and_then(|l| l.get("app").cloned())
///         .into_iter()
///         .collect()
/// });
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).indexers(indexers).build();
/// // Both indexes answer: the namespace index is always there.
/// assert!(informer.store().index_values(NAMESPACE_INDEX)?.is_empty());
/// assert!(informer.store().index_values("by-app")?.is_empty());
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
pub struct Indexers<K> {
    pub(crate) entries: Vec<(String, IndexKind<K>)>,
}

impl<K> Indexers<K> {
    /// Only the built-in [`NAMESPACE_INDEX`].
    pub fn new() -> Self {
        Self {
            entries: vec![(NAMESPACE_INDEX.to_owned(), IndexKind::Namespace)],
        }
    }

    /// Adds (or replaces) the index `name`, filing each object under the
    /// values `index` returns for it. An object may have no value, one, or
    /// several.
    ///
    /// The function runs once per stored version of an object, outside the
    /// store's lock; the values it returned are kept with the object, so
    /// replacing or removing the object never calls it again. If it panics,
    /// the write is refused with [`Error::IndexerPanicked`] and the store
    /// stays exactly as it was.
    #[must_use]
    pub fn with<F>(mut self, name: impl Into<String>, index: F) -> Self
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        let name = name.into();
        let kind = IndexKind::Custom(Arc::new(index));
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = kind,
            None => self.entries.push((name, kind)),
        }
        self
    }

    /// The index names, the namespace index first. For the builder (a
    /// factory compares requests by them) and the crate's tests.
    #[doc(hidden)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The values of every custom index for `object`, in the order of
    /// `entries` (the namespace index's slot stays empty); an empty slice,
    /// which costs no allocation, when there is no custom index.
    ///
    /// Each index function runs inside `catch_unwind`: a panic becomes
    /// [`Error::IndexerPanicked`] naming the index, so the caller can leave
    /// the store untouched.
    pub(super) fn values_of(&self, object: &K) -> Result<Box<[Vec<String>]>, Error> {
        if !self.has_custom() {
            return Ok(Box::default());
        }
        self.entries
            .iter()
            .map(|(name, kind)| match kind {
                IndexKind::Namespace => Ok(Vec::new()),
                // The object is only read and nothing of ours is borrowed
                // mutably across the call, so a panic cannot leave our state
                // half-changed: asserting unwind safety is sound.
                IndexKind::Custom(index_fn) => {
                    crate::panic::catch(|| index_fn(object)).map_err(|message| {
                        Error::IndexerPanicked {
                            index: name.clone(),
                            message,
                        }
                    })
                }
            })
            .collect()
    }

    /// The position of the index `name` among `entries`.
    pub(super) fn position(&self, name: &str) -> Result<usize, Error> {
        self.entries
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| Error::UnknownIndex(name.to_owned()))
    }

    /// The position of the built-in namespace index, unless an indexer of
    /// that name replaced it.
    pub(super) fn namespace_position(&self) -> Option<usize> {
        self.entries
            .iter()
            .position(|(_, kind)| matches!(kind, IndexKind::Namespace))
    }

    fn has_custom(&self) -> bool {
        self.entries
            .iter()
            .any(|(_, kind)| matches!(kind, IndexKind::Custom(_)))
    }
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Indexers")
            .field("names", &self.names().collect::<Vec<_>>())
            .finish()
    }
}
