//! [`Writer`]: the one handle that changes a store.

use std::{collections::hash_map, fmt, mem, sync::Arc};

use super::{
    Error,
    indexers::{IndexKind, Indexers},
    reader::Store,
    shared::{Entry, Shared, State},
};
use crate::key::ObjectKey;

/// The write side of a [`Store`]: the only handle that can add, replace or
/// remove objects, or mark the store synced.
///
/// There is one writer per store (it is not `Clone`); it hands out as many
/// read-only [`Store`]s as wanted with [`reader`](Writer::reader). An
/// informer keeps its writer to itself, so the `Store` it gives out always
/// agrees with what it told its subscribers. Build your own writer to fill a
/// store from a pipeline of your own.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{ObjectKey, store::{Indexers, Writer, NAMESPACE_INDEX}};
///
/// let writer = Writer::new(Indexers::<ConfigMap>::new());
/// let store = writer.reader();
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("app".into());
/// let key = ObjectKey::from_object(&cm)?;
/// assert!(writer.apply_upsert(key.clone(), Arc::new(cm))?.is_none());
///
/// assert!(store.get(&key).is_some());
/// assert_eq!(store.by_index(NAMESPACE_INDEX, "default")?.len(), 1);
///
/// assert!(writer.apply_delete(&key).is_some());
/// assert!(store.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Writer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Writer<K> {
    /// An empty store with these indexers (the namespace index is always
    /// among them), not synced yet.
    pub fn new(indexers: Indexers<K>) -> Self {
        Self {
            shared: Arc::new(Shared::new(indexers)),
        }
    }

    /// A read-only handle on this writer's store. Readers see every write
    /// once it returns, and outlive the writer.
    pub fn reader(&self) -> Store<K> {
        Store::from_shared(Arc::clone(&self.shared))
    }

    /// Stores `object` under `key` and refiles it in every index, as one step
    /// that readers see whole. Returns the object it replaced.
    ///
    /// Custom index functions run first, outside the lock. If one panics the
    /// store is left exactly as it was (the older version, if any, stays
    /// filed under its older values) and the error names the index.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, store::{Error, Indexers, Writer}};
    ///
    /// let writer = Writer::new(Indexers::<ConfigMap>::new().with("strict", |cm| {
    ///     vec![cm.metadata.labels.as_ref().expect("labelled")["app"].clone()]
    /// }));
    /// let key: ObjectKey = "default/app".parse()?;
    /// let error = writer.apply_upsert(key.clone(), Arc::new(ConfigMap::default())).unwrap_err();
    /// assert!(matches!(error, Error::IndexerPanicked { ref index, .. } if index == "strict"));
    /// assert!(writer.reader().get(&key).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply_upsert(&self, key: ObjectKey, object: Arc<K>) -> Result<Option<Arc<K>>, Error> {
        // User code first, with no lock held: a slow index function delays
        // only this writer, and a panicking one changes nothing.
        let values = self.shared.indexers.values_of(&object)?;
        let mut state = self.shared.state.write();
        let State { objects, indexes } = &mut *state;
        let entry = Entry { object, values };
        let (old, new) = match objects.entry(key.clone()) {
            hash_map::Entry::Occupied(mut slot) => {
                let old = mem::replace(slot.get_mut(), entry);
                (Some(old), slot.into_mut())
            }
            hash_map::Entry::Vacant(slot) => (None, slot.insert(entry)),
        };
        for (position, (_, kind)) in self.shared.indexers.entries.iter().enumerate() {
            let index = &mut indexes[position];
            match kind {
                // A key never changes namespace, so only a new key is filed.
                IndexKind::Namespace => {
                    if old.is_none() {
                        index.insert(key.namespace().unwrap_or(""), &key);
                    }
                }
                IndexKind::Custom(_) => {
                    let new_values = &new.values[position];
                    let old_values = old.as_ref().map_or(&[][..], |o| &o.values[position]);
                    if old_values == new_values.as_slice() {
                        continue;
                    }
                    for value in old_values {
                        index.remove(value, &key);
                    }
                    for value in new_values {
                        index.insert(value, &key);
                    }
                }
            }
        }
        let wake = self.shared.has_waiters();
        drop(state);
        if wake {
            self.shared.changed.notify_waiters();
        }
        Ok(old.map(|entry| entry.object))
    }

    /// Removes `key` and its index entries, as one step that readers see
    /// whole. Returns the object removed. Runs no user code: the object is
    /// unfiled from the values kept when it was stored.
    pub fn apply_delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut state = self.shared.state.write();
        let State { objects, indexes } = &mut *state;
        let old = objects.remove(key)?;
        for (position, (_, kind)) in self.shared.indexers.entries.iter().enumerate() {
            let index = &mut indexes[position];
            match kind {
                IndexKind::Namespace => index.remove(key.namespace().unwrap_or(""), key),
                IndexKind::Custom(_) => {
                    for value in &old.values[position] {
                        index.remove(value, key);
                    }
                }
            }
        }
        let wake = self.shared.has_waiters();
        drop(state);
        if wake {
            self.shared.changed.notify_waiters();
        }
        Some(old.object)
    }

    /// Marks the store synced and wakes every
    /// [`Store::wait_until_synced`]. It never turns back.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::store::{Indexers, Writer};
    ///
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// let store = writer.reader();
    /// assert!(!store.has_synced());
    /// writer.mark_synced();
    /// assert!(store.has_synced());
    /// ```
    pub fn mark_synced(&self) {
        self.shared.synced.send_replace(true);
    }
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("store", &self.reader())
            .finish()
    }
}
