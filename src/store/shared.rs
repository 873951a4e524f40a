//! What a [`Writer`](super::Writer) and its [`Store`](super::Store) readers
//! share: objects and indexes under one lock, the indexers, the synced flag,
//! and the wake-up of [`Store::wait_for`](super::Store::wait_for).

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use crate::hash::KeyMap;

use parking_lot::RwLock;
use tokio::sync::{Notify, watch};

use super::{compact::Compact, index::Index, indexers::Indexers, stored::Stored};
use crate::key::ObjectKey;

pub(super) struct Shared<K> {
    pub(super) state: RwLock<State<K>>,
    pub(super) indexers: Indexers<K>,
    pub(super) synced: watch::Sender<bool>,
    /// Wakes every waiter of `wait_for` after a write that changed an
    /// object (RW4).
    pub(super) changed: Notify,
    /// How many `wait_for` calls are waiting, read by the writer under the
    /// write lock so that a store nobody waits on pays one load per write,
    /// not a wake-up. A waiter counts itself before it takes the read lock
    /// to look, so a write after its look sees it counted.
    pub(super) waiting: AtomicUsize,
    /// The compact cache's codec, hot set and counters; `None` in the
    /// default mode, where every object is kept decoded.
    pub(super) compact: Option<Compact<K>>,
}

/// Objects and indexes under one lock, so no reader sees one without the
/// other.
pub(super) struct State<K> {
    pub(super) objects: KeyMap<ObjectKey, Entry<K>>,
    /// One per indexer, in the order of `Indexers::entries`.
    pub(super) indexes: Vec<Index>,
}

/// One cached object and the custom index values it is filed under.
///
/// The values are kept so that replacing or removing the object unfiles it
/// from exactly what it was filed under, without calling user index
/// functions again (they may panic, be slow, or have changed their mind).
pub(super) struct Entry<K> {
    /// Always decoded in the default mode; encoded in the compact mode,
    /// unless it could not be (CM6).
    pub(super) object: Stored<K>,
    /// Indexed like `Indexers::entries`; empty (no allocation) when the store
    /// has no custom indexer. The namespace index's slot stays empty: its
    /// value comes from the key.
    pub(super) values: Box<[Vec<String>]>,
}

impl<K> Shared<K> {
    pub(super) fn new(indexers: Indexers<K>, compact: Option<Compact<K>>) -> Self {
        let indexes = indexers.entries.iter().map(|_| Index::default()).collect();
        Self {
            state: RwLock::new(State {
                objects: KeyMap::default(),
                indexes,
            }),
            indexers,
            synced: watch::Sender::new(false),
            changed: Notify::new(),
            waiting: AtomicUsize::new(0),
            compact,
        }
    }

    /// `stored` as an object: itself when decoded, else through the
    /// compact cache (`admit`: may join the hot set, CM4). `None` when its
    /// bytes do not decode (CM6).
    pub(super) fn resolve(
        &self,
        key: &ObjectKey,
        stored: Stored<K>,
        admit: bool,
    ) -> Option<Arc<K>> {
        match (stored, &self.compact) {
            (Stored::Decoded(object), _) => Some(object),
            (Stored::Encoded(bytes), Some(compact)) => compact.resolve(key, bytes, admit),
            // Only a compact store encodes.
            (Stored::Encoded(_), None) => None,
        }
    }

    /// Resolves `(key, stored)` pairs taken under the read lock, after it
    /// was released, leaving out those that do not decode (CM6).
    pub(super) fn resolve_all(&self, entries: Vec<(ObjectKey, Stored<K>)>) -> Vec<Arc<K>> {
        entries
            .into_iter()
            .filter_map(|(key, stored)| self.resolve(&key, stored, false))
            .collect()
    }

    /// Whether a write that just changed the state must wake waiters; read
    /// while the write lock is held (see `waiting`).
    pub(super) fn has_waiters(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }
}

/// One waiter of `wait_for`, counted in `Shared::waiting` while it lives.
pub(super) struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    pub(super) fn register<K>(shared: &'a Shared<K>) -> Self {
        shared.waiting.fetch_add(1, Ordering::Relaxed);
        Self(&shared.waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
