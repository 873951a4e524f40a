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

/// A [`KnownObjects`] view whose panics come back as
/// [`Error::Panicked`](crate::key::error::Error::Panicked) (L9): the FIFO calls the view
/// under its lock, so an unwind must not leave through it.
pub(crate) struct Guarded<'a, K>(pub(crate) &'a dyn KnownObjects<K>);

impl<K> Guarded<'_, K> {
    pub(crate) fn get_by_key(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Arc<K>>, crate::key::error::Error> {
        crate::panic::catch(|| self.0.get_by_key(key)).map_err(panicked)
    }

    pub(crate) fn list_keys(&self) -> Result<Vec<ObjectKey>, crate::key::error::Error> {
        crate::panic::catch(|| self.0.list_keys()).map_err(panicked)
    }
}

fn panicked(message: String) -> crate::key::error::Error {
    crate::key::error::Error::Panicked {
        callback: crate::key::error::UserCode::KnownObjects,
        message,
    }
}
