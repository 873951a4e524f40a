//! How the FIFO sees the objects its consumer already holds (client-go's
//! `KeyListerGetter`), without knowing what holds them.

use std::sync::Arc;

use crate::key::ObjectKey;

/// Read access to the objects the FIFO's consumer has already applied,
/// usually the informer's store (`Store`).
///
/// The FIFO consults it to decide whether a delete of a key with no pending
/// deltas is news (F4), which known keys vanished in a relist (F6), and what
/// to re-deliver on resync (F8).
pub trait KnownObjects<K>: Send + Sync {
    /// The object held under `key`, if any.
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>>;
    /// Every key held.
    fn list_keys(&self) -> Vec<ObjectKey>;
}

impl<K, T: KnownObjects<K> + ?Sized> KnownObjects<K> for Arc<T> {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        (**self).get_by_key(key)
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        (**self).list_keys()
    }
}
