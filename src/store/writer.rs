//! [`Writer`]: the one handle that changes a store.

use std::{collections::hash_map, fmt, mem, sync::Arc};

#[cfg(feature = "compact")]
use serde::{Serialize, de::DeserializeOwned};

use super::{
    Error,
    compact::{Codec, Compact, CompactCache},
    indexers::{IndexKind, Indexers},
    reader::Store,
    shared::{Entry, Shared, State},
    stored::Stored,
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
/// use kube_informer::{ObjectKey, store::{Indexers, NAMESPACE_INDEX}};
/// use kube_informer::unstable::store::Writer;
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
        Self::with_codec(indexers, None)
    }

    /// An empty compact store (see [`CompactCache`]) with these indexers:
    /// it keeps each object encoded and decodes it when read (CM1–CM9).
    /// An object whose encoding would not read back equal to it, by `K`'s
    /// `PartialEq`, is kept decoded instead (CM9).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, store::{CompactCache, Indexers}};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// let writer = Writer::compact(Indexers::<ConfigMap>::new(), CompactCache::default());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// let key = ObjectKey::from_object(&cm)?;
    /// writer.apply_upsert(key.clone(), Arc::new(cm.clone()))?;
    ///
    /// let store = writer.reader();
    /// assert_eq!(*store.get(&key).unwrap(), cm);
    /// assert_eq!(store.compact_stats().unwrap().encoded_objects, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "compact")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
    pub fn compact(indexers: Indexers<K>, cache: CompactCache) -> Self
    where
        K: Serialize + DeserializeOwned + PartialEq,
    {
        Self::with_codec(indexers, Some((Codec::msgpack(), cache)))
    }

    /// A default store (`None`) or a compact one.
    pub(crate) fn with_codec(
        indexers: Indexers<K>,
        compact: Option<(Codec<K>, CompactCache)>,
    ) -> Self {
        let compact = compact.map(|(codec, cache)| Compact::new(codec, cache));
        Self {
            shared: Arc::new(Shared::new(indexers, compact)),
        }
    }

    /// A read-only handle on this writer's store. Readers see every write
    /// once it returns, and outlive the writer.
    pub fn reader(&self) -> Store<K> {
        Store::from_shared(Arc::clone(&self.shared))
    }

    /// Stores `object` under `key` and refiles it in every index, as one step
    /// that readers see whole. Returns the object it replaced (in a compact
    /// store, decoded: CM5; `None` if its bytes did not decode: CM6).
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
    /// use kube_informer::{ObjectKey, store::{Error, Indexers}};
    /// use kube_informer::unstable::store::Writer;
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
        Ok(match self.upsert(key, object, OldVersion::Decoded)? {
            Replaced::Nothing | Replaced::Unreadable | Replaced::NotDecoded => None,
            Replaced::Old(old) => Some(old),
        })
    }

    /// [`apply_upsert`](Self::apply_upsert), telling a replaced version
    /// that could not be decoded (CM6) from no replaced version; with
    /// [`OldVersion::IfDecoded`], a compact store decodes no replaced
    /// version (CM8).
    pub(crate) fn upsert(
        &self,
        key: ObjectKey,
        object: Arc<K>,
        old_version: OldVersion,
    ) -> Result<Replaced<K>, Error> {
        // User code first, with no lock held: a slow index function delays
        // only this writer, and a panicking one changes nothing. So does
        // encoding (CM2).
        let values = self.shared.indexers.values_of(&object)?;
        let (stored, kept) = match &self.shared.compact {
            None => (Stored::Decoded(object), None),
            Some(compact) => (compact.store(&key, &object), Some(object)),
        };
        let new_bytes = match &stored {
            Stored::Encoded(bytes) => Some(Arc::clone(bytes)),
            Stored::Decoded(_) => None,
        };
        let old = self.write_upsert(&key, stored, values);
        let Some(old) = old else {
            return Ok(Replaced::Nothing);
        };
        let Some(compact) = &self.shared.compact else {
            return Ok(old.decoded().map_or(Replaced::Unreadable, Replaced::Old));
        };
        compact.forget(&old);
        let old_bytes = match &old {
            Stored::Encoded(bytes) => Some(bytes),
            Stored::Decoded(_) => None,
        };
        // A hot key stays hot with the version just written (CM4), and a
        // hot old version needs no decode (CM5).
        let new = new_bytes.zip(kept);
        let was_hot = compact.rewrite_hot(&key, old_bytes, new);
        Ok(match (was_hot, old_version) {
            (Some(old), _) => Replaced::Old(old),
            (None, OldVersion::IfDecoded) => {
                old.decoded().map_or(Replaced::NotDecoded, Replaced::Old)
            }
            (None, OldVersion::Decoded) => self
                .shared
                .resolve(&key, old, false)
                .map_or(Replaced::Unreadable, Replaced::Old),
        })
    }

    /// The locked part of an upsert: swaps the entry and refiles the key.
    fn write_upsert(
        &self,
        key: &ObjectKey,
        stored: Stored<K>,
        values: Box<[Vec<String>]>,
    ) -> Option<Stored<K>> {
        let mut state = self.shared.state.write();
        let State { objects, indexes } = &mut *state;
        let entry = Entry {
            object: stored,
            values,
        };
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
                        index.insert(key.namespace().unwrap_or(""), key);
                    }
                }
                IndexKind::Custom(_) => {
                    let new_values = &new.values[position];
                    let old_values = old.as_ref().map_or(&[][..], |o| &o.values[position]);
                    if old_values == new_values.as_slice() {
                        continue;
                    }
                    for value in old_values {
                        index.remove(value, key);
                    }
                    for value in new_values {
                        index.insert(value, key);
                    }
                }
            }
        }
        let wake = self.shared.has_waiters();
        drop(state);
        if wake {
            self.shared.changed.notify_waiters();
        }
        old.map(|entry| entry.object)
    }

    /// Removes `key` and its index entries, as one step that readers see
    /// whole. Returns the object removed. Runs no user code: the object is
    /// unfiled from the values kept when it was stored.
    pub fn apply_delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.remove(key)?;
        self.shared.resolve(key, old, false)
    }

    /// [`apply_delete`](Self::apply_delete) without decoding what it
    /// removed: what the informer calls, which tells subscribers the
    /// object the FIFO queued.
    pub(crate) fn delete(&self, key: &ObjectKey) {
        self.remove(key);
    }

    fn remove(&self, key: &ObjectKey) -> Option<Stored<K>> {
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
        if let Some(compact) = &self.shared.compact {
            compact.forget(&old.object);
            let old_bytes = match &old.object {
                Stored::Encoded(bytes) => Some(bytes),
                Stored::Decoded(_) => None,
            };
            let _ = compact.rewrite_hot(key, old_bytes, None);
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
    /// use kube_informer::store::Indexers;
    /// use kube_informer::unstable::store::Writer;
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

/// What an upsert replaced.
pub(crate) enum Replaced<K> {
    /// The key was not held.
    Nothing,
    /// This version, decoded.
    Old(Arc<K>),
    /// A version whose stored bytes did not decode (CM6).
    Unreadable,
    /// A version a compact store kept encoded and, as asked, did not
    /// decode (CM8).
    NotDecoded,
}

/// Whether an upsert into a compact store decodes the version it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OldVersion {
    /// Always: the caller hands it on.
    Decoded,
    /// Only when it is at hand decoded (the default mode, the hot set):
    /// nothing would read it.
    IfDecoded,
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("store", &self.reader())
            .finish()
    }
}
