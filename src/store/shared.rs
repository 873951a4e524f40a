//! What a [`Writer`](super::Writer) and its [`Store`](super::Store) readers
//! share: objects and indexes under one lock, the indexers, the synced flag.

use std::sync::Arc;

use crate::hash::KeyMap;

use parking_lot::RwLock;
use tokio::sync::watch;

use super::{index::Index, indexers::Indexers};
use crate::key::ObjectKey;

pub(super) struct Shared<K> {
    pub(super) state: RwLock<State<K>>,
    pub(super) indexers: Indexers<K>,
    pub(super) synced: watch::Sender<bool>,
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
    pub(super) object: Arc<K>,
    /// Indexed like `Indexers::entries`; empty (no allocation) when the store
    /// has no custom indexer. The namespace index's slot stays empty: its
    /// value comes from the key.
    pub(super) values: Box<[Vec<String>]>,
}

impl<K> Shared<K> {
    pub(super) fn new(indexers: Indexers<K>) -> Self {
        let indexes = indexers.entries.iter().map(|_| Index::default()).collect();
        Self {
            state: RwLock::new(State {
                objects: KeyMap::default(),
                indexes,
            }),
            indexers,
            synced: watch::Sender::new(false),
        }
    }
}
