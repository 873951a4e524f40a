//! The indexed cache: objects by key plus every index, behind one lock.

use std::{collections::HashMap, fmt, sync::Arc};

use parking_lot::RwLock;
use tokio::sync::watch;

use super::{
    Error,
    index::Index,
    indexers::{IndexKind, Indexers},
};
use crate::{fifo::KnownObjects, key::ObjectKey};

/// A cheap-to-clone handle on an informer's indexed cache.
///
/// Reads take a shared lock for as long as the call lasts and never await.
/// Objects come out as `Arc<K>`: the very allocation the informer holds, which
/// a reader cannot mutate.
///
/// The writer side ([`apply_upsert`](Store::apply_upsert),
/// [`apply_delete`](Store::apply_delete), [`mark_synced`](Store::mark_synced))
/// is public for the informer or your own pipeline; an informer is the only
/// writer of the store it hands out.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{ObjectKey, store::{Indexers, Store, NAMESPACE_INDEX}};
///
/// let store = Store::new(Indexers::<ConfigMap>::new());
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("app".into());
/// let key = ObjectKey::from_object(&cm)?;
/// store.apply_upsert(key.clone(), Arc::new(cm));
///
/// let reader = store.clone();
/// assert!(reader.get(&key).is_some());
/// assert_eq!(reader.by_index(NAMESPACE_INDEX, "default")?.len(), 1);
/// assert_eq!(reader.index_values(NAMESPACE_INDEX)?, ["default"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store<K> {
    shared: Arc<Shared<K>>,
}

struct Shared<K> {
    state: RwLock<State<K>>,
    indexers: Indexers<K>,
    synced: watch::Sender<bool>,
}

/// Objects and indexes under one lock, so no reader sees one without the
/// other.
struct State<K> {
    objects: HashMap<ObjectKey, Arc<K>>,
    /// One per indexer, in the order of `Indexers::entries`.
    indexes: Vec<Index>,
}

impl<K> Store<K> {
    /// An empty store with these indexers (the namespace index is always
    /// among them).
    pub fn new(indexers: Indexers<K>) -> Self {
        let indexes = indexers.entries.iter().map(|_| Index::default()).collect();
        Self {
            shared: Arc::new(Shared {
                state: RwLock::new(State {
                    objects: HashMap::new(),
                    indexes,
                }),
                indexers,
                synced: watch::Sender::new(false),
            }),
        }
    }

    /// The object held under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.shared.state.read().objects.get(key).cloned()
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.shared.state.read().objects.values().cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.shared.state.read().objects.keys().cloned().collect()
    }

    /// Every `(key, object)` pair, taken at one instant: what a late
    /// subscriber's replay is made of.
    pub fn snapshot(&self) -> Vec<(ObjectKey, Arc<K>)> {
        let state = self.shared.state.read();
        state
            .objects
            .iter()
            .map(|(k, o)| (k.clone(), Arc::clone(o)))
            .collect()
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.shared.state.read().objects.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects filed under `value` in the index `index_name`.
    ///
    /// Fails only when no index has that name; an unused value gives an empty
    /// list.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let position = self.index_position(index_name)?;
        let state = self.shared.state.read();
        Ok(state.indexes[position]
            .keys(value)
            .filter_map(|key| state.objects.get(key).cloned())
            .collect())
    }

    /// The keys filed under `value` in the index `index_name`.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, Error> {
        let position = self.index_position(index_name)?;
        let state = self.shared.state.read();
        Ok(state.indexes[position].keys(value).cloned().collect())
    }

    /// Every value that at least one object is filed under in `index_name`,
    /// in no particular order.
    pub fn index_values(&self, index_name: &str) -> Result<Vec<String>, Error> {
        let position = self.index_position(index_name)?;
        let state = self.shared.state.read();
        Ok(state.indexes[position]
            .values()
            .map(str::to_owned)
            .collect())
    }

    /// Whether the informer filling this store has delivered its first full
    /// list.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until [`has_synced`](Store::has_synced) is true.
    ///
    /// Cancel-safe. It waits forever if the store is never marked synced;
    /// race it against a timeout or a shutdown signal where that matters.
    pub async fn wait_until_synced(&self) {
        let mut synced = self.shared.synced.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail here.
        let _ = synced.wait_for(|s| *s).await;
    }

    /// A receiver that turns `true` when the store is marked synced, for
    /// code that must select on it (e.g. the dispatch layer's upstream flag).
    pub fn watch_synced(&self) -> watch::Receiver<bool> {
        self.shared.synced.subscribe()
    }

    /// Stores `object` under `key` and refiles it in every index, as one step
    /// that readers see whole. Returns the object it replaced.
    ///
    /// Writer side: for the informer or your own pipeline.
    pub fn apply_upsert(&self, key: ObjectKey, object: Arc<K>) -> Option<Arc<K>> {
        // User index functions run before the lock is taken, so a slow one
        // delays only the writer.
        let new_values = self.custom_values(&object);
        let mut state = self.shared.state.write();
        let State { objects, indexes } = &mut *state;
        let old = objects.insert(key.clone(), object);
        for (position, (_, kind)) in self.shared.indexers.entries.iter().enumerate() {
            let index = &mut indexes[position];
            match kind {
                // A key never changes namespace, so only a new key is filed.
                IndexKind::Namespace => {
                    if old.is_none() {
                        index.insert(key.namespace().unwrap_or(""), &key);
                    }
                }
                IndexKind::Custom(index_fn) => {
                    let new = &new_values[position];
                    let old_values = old.as_deref().map(|o| index_fn(o)).unwrap_or_default();
                    if old_values == *new {
                        continue;
                    }
                    for value in &old_values {
                        index.remove(value, &key);
                    }
                    for value in new {
                        index.insert(value, &key);
                    }
                }
            }
        }
        old
    }

    /// Removes `key` and its index entries, as one step that readers see
    /// whole. Returns the object removed.
    ///
    /// Writer side: for the informer or your own pipeline.
    pub fn apply_delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut state = self.shared.state.write();
        let State { objects, indexes } = &mut *state;
        let old = objects.remove(key)?;
        for (position, (_, kind)) in self.shared.indexers.entries.iter().enumerate() {
            let index = &mut indexes[position];
            match kind {
                IndexKind::Namespace => index.remove(key.namespace().unwrap_or(""), key),
                IndexKind::Custom(index_fn) => {
                    for value in index_fn(&old) {
                        index.remove(&value, key);
                    }
                }
            }
        }
        Some(old)
    }

    /// Marks the store synced and wakes every
    /// [`wait_until_synced`](Store::wait_until_synced). It never turns back.
    ///
    /// Writer side: for the informer or your own pipeline.
    pub fn mark_synced(&self) {
        self.shared.synced.send_replace(true);
    }

    fn index_position(&self, index_name: &str) -> Result<usize, Error> {
        self.shared
            .indexers
            .entries
            .iter()
            .position(|(n, _)| n == index_name)
            .ok_or_else(|| Error::UnknownIndex(index_name.to_owned()))
    }

    /// The values of every custom index for `object`; empty for the
    /// namespace index, whose value comes from the key.
    fn custom_values(&self, object: &K) -> Vec<Vec<String>> {
        self.shared
            .indexers
            .entries
            .iter()
            .map(|(_, kind)| match kind {
                IndexKind::Namespace => Vec::new(),
                IndexKind::Custom(index_fn) => index_fn(object),
            })
            .collect()
    }
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("len", &self.len())
            .field("indexers", &self.shared.indexers)
            .field("synced", &self.has_synced())
            .finish()
    }
}

impl<K: Send + Sync> KnownObjects<K> for Store<K> {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.get(key)
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        Store::list_keys(self)
    }
}
