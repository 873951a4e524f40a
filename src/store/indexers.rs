//! Named index functions: from an object to the values it is filed under.

use std::{fmt, sync::Arc};

/// The name of the index every [`Store`](super::Store) has: objects by the
/// namespace part of their key (`""` for cluster-scoped objects).
pub const NAMESPACE_INDEX: &str = "namespace";

/// A function from an object to the values it is indexed under.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

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
/// use kube_informer::store::{Indexers, NAMESPACE_INDEX};
///
/// let indexers = Indexers::<ConfigMap>::new().with("by-app", |cm| {
///     cm.metadata
///         .labels
///         .as_ref()
///         .and_then(|l| l.get("app").cloned())
///         .into_iter()
///         .collect()
/// });
/// assert_eq!(indexers.names().collect::<Vec<_>>(), [NAMESPACE_INDEX, "by-app"]);
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

    /// The index names, the namespace index first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
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
