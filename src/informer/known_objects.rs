//! The store as the FIFO's known-objects view.
//!
//! The store and the FIFO do not know each other (each imports only the
//! plain data); the informer, which owns both, adapts a store reader to the
//! FIFO's [`KnownObjects`] trait here.

use std::sync::Arc;

use crate::{fifo::KnownObjects, key::ObjectKey, store::Store};

/// A [`Store`] reader seen by the FIFO as what its consumer already holds.
pub(crate) struct StoreKnownObjects<K>(pub(crate) Store<K>);

impl<K: Send + Sync> KnownObjects<K> for StoreKnownObjects<K> {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        // Relists and resyncs visit every key once: they must not flush a
        // compact store's hot set (CM4).
        self.0.peek(key)
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.list_keys()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::store::{Indexers, Writer};

    #[test]
    fn the_view_follows_the_store() {
        let writer = Writer::new(Indexers::<ConfigMap>::new());
        let known: Arc<dyn KnownObjects<ConfigMap>> = Arc::new(StoreKnownObjects(writer.reader()));
        let key: ObjectKey = "ns/a".parse().unwrap();
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some("a".into());
        writer.apply_upsert(key.clone(), Arc::new(cm)).unwrap();
        assert!(known.get_by_key(&key).is_some());
        assert!(known.get_by_key(&"ns/b".parse().unwrap()).is_none());
        assert_eq!(known.list_keys(), std::slice::from_ref(&key));
        writer.apply_delete(&key);
        assert!(known.list_keys().is_empty());
    }
}
