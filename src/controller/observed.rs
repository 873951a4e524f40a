//! What a deletion-aware reconcile is handed, and the record of deleted
//! objects it is read from.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::{hash::KeyMap, key::ObjectKey};

/// The object a reconcile of
/// [`run_with_deletions`](super::Controller::run_with_deletions) is about.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::controller::Observed;
///
/// let gone = Observed::Deleted(Arc::new(ConfigMap::default()));
/// assert!(gone.is_deleted());
/// let _last_state: &ConfigMap = gone.object();
/// ```
#[derive(Debug)]
pub enum Observed<K> {
    /// The object as the cache holds it when the reconcile starts.
    Present(Arc<K>),
    /// The object was deleted; this is its last known state, from the
    /// deletion the informer delivered (its final state, or the last state
    /// the cache held when the deletion was found by a relist).
    Deleted(Arc<K>),
}

impl<K> Observed<K> {
    /// The object, present or last known.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Present(object) | Self::Deleted(object) => object,
        }
    }

    /// The object, present or last known, by value.
    pub fn into_object(self) -> Arc<K> {
        match self {
            Self::Present(object) | Self::Deleted(object) => object,
        }
    }

    /// Whether the object was deleted.
    pub fn is_deleted(&self) -> bool {
        matches!(self, Self::Deleted(_))
    }
}

impl<K> Clone for Observed<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Present(object) => Self::Present(object.clone()),
            Self::Deleted(object) => Self::Deleted(object.clone()),
        }
    }
}

/// The last state of each deleted object whose deletion has not been
/// reconciled yet. An entry goes when a reconcile of its deletion succeeds
/// or the key is added again; it lives only as long as the process (C4).
pub(super) struct Tombstones<K> {
    deleted: Mutex<KeyMap<ObjectKey, Arc<K>>>,
}

impl<K> Tombstones<K> {
    pub(super) fn new() -> Self {
        Self {
            deleted: Mutex::new(KeyMap::default()),
        }
    }

    pub(super) fn deleted(&self, key: ObjectKey, last: Arc<K>) {
        self.deleted.lock().insert(key, last);
    }

    pub(super) fn present(&self, key: &ObjectKey) {
        self.deleted.lock().remove(key);
    }

    pub(super) fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.deleted.lock().get(key).cloned()
    }

    /// Forgets `key`'s deletion if it is still the one `seen`: a reconcile
    /// of it succeeded.
    pub(super) fn reconciled(&self, key: &ObjectKey, seen: &Arc<K>) {
        let mut deleted = self.deleted.lock();
        if deleted.get(key).is_some_and(|last| Arc::ptr_eq(last, seen)) {
            deleted.remove(key);
        }
    }
}
