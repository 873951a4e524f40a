//! [`Registry`]: the factory's informers by sharing key, each behind the
//! factory's lock with the options it was built with and its spawned run.

use std::{any::Any, collections::HashMap};

use tokio::task::JoinHandle;

use super::{
    hold::{Hold, ManagedInformer},
    key::InformerKey,
};
use crate::informer::{self, Informer, Options};

/// One informer of the factory.
pub(super) struct Entry {
    pub(super) key: InformerKey,
    /// What the informer was built with, for comparing later requests.
    pub(super) options: Options,
    /// The informer, as its own type behind the operations the factory
    /// applies to all of them.
    pub(super) informer: Box<dyn ManagedInformer>,
    /// Its `run`, once the factory started it.
    pub(super) task: Option<JoinHandle<Result<(), informer::Error>>>,
}

/// The factory's informers, in the order they were asked for, and whether
/// it was shut down.
#[derive(Default)]
pub(super) struct Registry {
    pub(super) entries: Vec<Entry>,
    by_key: HashMap<InformerKey, usize>,
    pub(super) shut_down: bool,
}

impl Registry {
    /// The informer under `key` as its own type, with the options it was
    /// built with; `None` when the key holds none. The key names `K`'s type,
    /// so no entry of another type is ever under it; were one there, it
    /// would read as none and the request would replace it.
    pub(super) fn get_mut<K: 'static>(
        &mut self,
        key: &InformerKey,
    ) -> Option<(&mut Hold<K>, &Options)> {
        let index = *self.by_key.get(key)?;
        let entry = &mut self.entries[index];
        let informer: &mut dyn Any = entry.informer.as_mut();
        let hold = informer.downcast_mut::<Hold<K>>()?;
        Some((hold, &entry.options))
    }

    /// Holds `informer` under `key`, in place of what the key held.
    pub(super) fn insert<K>(&mut self, key: InformerKey, options: Options, informer: Informer<K>)
    where
        Hold<K>: ManagedInformer,
    {
        let entry = Entry {
            key: key.clone(),
            options,
            informer: Box::new(Hold::Held(informer)),
            task: None,
        };
        match self.by_key.get(&key) {
            Some(&index) => self.entries[index] = entry,
            None => {
                self.by_key.insert(key, self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// The entries of the informers the factory holds (not released).
    pub(super) fn held(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|entry| entry.informer.is_held())
    }

    /// Drops the entries of released informers that stopped.
    pub(super) fn prune(&mut self) {
        if self.entries.iter().all(|entry| entry.informer.is_alive()) {
            return;
        }
        self.entries.retain(|entry| entry.informer.is_alive());
        self.by_key = self
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.key.clone(), index))
            .collect();
    }
}
