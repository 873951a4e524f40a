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
/// assert_eq!(prod.namespace(), "prod");
/// assert!(prod.get("settings").is_some());
/// assert_eq!(prod.list().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NamespacedStore<K> {
    store: Store<K>,
    namespace: String,
}

impl<K> NamespacedStore<K> {
    pub(super) fn new(store: Store<K>, namespace: String) -> Self {
        Self { store, namespace }
    }

    /// The namespace this view reads (`""` for cluster-scoped objects).
    pub fn namespace(&self) -> &str {
        &self.namespace
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
