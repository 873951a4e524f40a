//! [`NamespacedStore`]: one namespace's slice of a [`Store`].

use std::{fmt, sync::Arc};

use super::reader::Store;

/// The objects of one namespace in a [`Store`], looked up by name: what a
/// client-go namespace lister (`lister.Pods("ns")`) offers. Made by
/// [`Store::namespace`]; cheap to clone, and it always reads the store as it
/// is now.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{ObjectKey, store::Indexers};
/// use kube_informer::unstable::store::Writer;
///
/// let writer = Writer::new(Indexers::<ConfigMap>::new());
/// let prod = writer.reader().namespace("prod");
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("prod".into());
/// cm.metadata.name = Some("settings".into());
/// writer.apply_upsert(ObjectKey::from_object(&cm)?, Arc::new(cm))?;
///
/// assert!(prod.get("settings").is_some());
/// assert_eq!(prod.list().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NamespacedStore<K> {
    store: Store<K>,
    namespace: String,
}

impl<K> Store<K> {
    /// A view of the objects in `namespace` only, like a client-go
    /// namespace lister: [`list`](NamespacedStore::list) and
    /// [`get`](NamespacedStore::get) by name.
    ///
    /// The empty string names no namespace: its view holds the
    /// cluster-scoped objects (client-go's listers read `""` as "all
    /// namespaces"; use [`Store::list`] for that).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// for (ns, name) in [("default", "a"), ("default", "b"), ("prod", "a")] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.namespace = Some(ns.into());
    ///     cm.metadata.name = Some(name.into());
    ///     writer.apply_upsert(ObjectKey::from_object(&cm)?, Arc::new(cm))?;
    /// }
    /// let default = writer.reader().namespace("default");
    /// assert_eq!(default.list().len(), 2);
    /// assert!(default.get("a").is_some());
    /// assert!(writer.reader().namespace("staging").get("a").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn namespace(&self, namespace: impl Into<String>) -> NamespacedStore<K> {
        NamespacedStore::new(self.clone(), namespace.into())
    }
}

impl<K> NamespacedStore<K> {
    fn new(store: Store<K>, namespace: String) -> Self {
        Self { store, namespace }
    }

    /// Every object of the namespace, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.store.in_namespace(&self.namespace)
    }

    /// The object of the namespace named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        let namespace = Some(self.namespace.as_str()).filter(|ns| !ns.is_empty());
        self.store.get_by(namespace, name)
    }
}

impl<K> Clone for NamespacedStore<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespacedStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespacedStore")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}
