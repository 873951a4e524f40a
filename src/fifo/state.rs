//! The queue itself: plain, synchronous data that the [`DeltaFifo`](super::DeltaFifo)
//! handle keeps behind one lock. Nothing here knows about waking or async.

use std::collections::{VecDeque, hash_map::Entry};
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use super::known::Guarded;
use super::merge;
use super::options::Coalesce;
use crate::delta::{Delta, DeltaType, Deltas};
use crate::hash::{KeyMap, KeySet};
use crate::key::ObjectKey;
use crate::key::error::Error;

/// A streamed relist between `list_start` and `list_done` (F13): only the
/// listed keys are held, never the objects a second time.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) keys: KeySet<ObjectKey>,
}

/// Pending deltas per key plus the order keys were enqueued in, and the
/// bookkeeping behind `has_synced` (F7).
#[derive(Debug)]
pub(crate) struct FifoState<K> {
    items: KeyMap<ObjectKey, Deltas<K>>,
    /// Every key in `items` exactly once, oldest first (F3).
    queue: VecDeque<ObjectKey>,
    /// The deltas held across all keys. Shared so readers that must not
    /// take the lock (the informer's pump asks before every event it reads)
    /// can see it; written only under the lock, by `set_deltas`.
    deltas: Arc<AtomicUsize>,
    coalesce: Coalesce,
    /// Set by the first relist or by any add/update/delete/requeue.
    populated: bool,
    /// Items counted by the first relist that have not been popped yet.
    initial_population_count: usize,
    /// Latched: once true, never false again.
    synced: bool,
    closed: bool,
    listing: Option<Listing>,
    last_sync_resource_version: Option<String>,
}

impl<K> FifoState<K> {
    pub(crate) fn new(coalesce: Coalesce) -> Self {
        Self {
            items: KeyMap::default(),
            queue: VecDeque::new(),
            deltas: Arc::new(AtomicUsize::new(0)),
            coalesce,
            populated: false,
            initial_population_count: 0,
            synced: false,
            closed: false,
            listing: None,
            last_sync_resource_version: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// The count of pending deltas as readers outside the lock see it.
    pub(crate) fn published_deltas(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.deltas)
    }

    fn deltas(&self) -> usize {
        self.deltas.load(Ordering::Relaxed)
    }

    fn set_deltas(&mut self, deltas: usize) {
        self.deltas.store(deltas, Ordering::Relaxed);
    }

    pub(crate) fn is_pending(&self, key: &ObjectKey) -> bool {
        self.items.contains_key(key)
    }

    pub(crate) fn get(&self, key: &ObjectKey) -> Option<&Deltas<K>> {
        self.items.get(key)
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.queue.iter()
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.synced
    }

    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn last_sync_resource_version(&self) -> Option<&str> {
        self.last_sync_resource_version.as_deref()
    }

    /// Records that the consumer's view is being fed by live events.
    pub(crate) fn mark_populated(&mut self) {
        self.populated = true;
        self.check_synced();
    }

    /// A live add, update or delete arrived (`key` when it is an accepted
    /// add or update). Outside a streamed relist it marks the FIFO populated
    /// (F7). Inside one it does not: the FIFO is populated by that relist's
    /// end, and an added or updated key counts as listed (it is evidently
    /// alive, so it gets no tombstone).
    pub(crate) fn live_event(&mut self, key: Option<&ObjectKey>) {
        match &mut self.listing {
            Some(listing) => {
                if let Some(key) = key {
                    listing.keys.insert(key.clone());
                }
            }
            None => self.mark_populated(),
        }
    }

    fn check_synced(&mut self) {
        if self.populated && self.initial_population_count == 0 {
            self.synced = true;
        }
    }

    /// Appends one delta to `key`'s pending deltas (F3, F5, F12); the key
    /// joins the queue's tail only if it had none.
    pub(crate) fn append(&mut self, key: ObjectKey, delta: Delta<K>) {
        let held = self.deltas();
        let deltas = match self.items.entry(key) {
            Entry::Occupied(mut pending) => {
                let items = pending.get_mut().items_mut();
                let before = items.len();
                merge::append(items, delta, self.coalesce);
                held + items.len() - before
            }
            Entry::Vacant(slot) => {
                let key = slot.key().clone();
                self.queue.push_back(key.clone());
                slot.insert(Deltas::new(key, delta));
                held + 1
            }
        };
        self.set_deltas(deltas);
    }

    /// Removes and returns the oldest key's deltas (F9), counting the pop
    /// toward the initial population (F7).
    pub(crate) fn pop(&mut self) -> Option<Deltas<K>> {
        loop {
            let key = self.queue.pop_front()?;
            if self.initial_population_count > 0 {
                self.initial_population_count -= 1;
                self.check_synced();
            }
            // `queue` and `items` hold the same keys; the loop only guards
            // against that invariant ever breaking.
            if let Some(deltas) = self.items.remove(&key) {
                self.set_deltas(self.deltas() - deltas.len());
                return Some(deltas);
            }
        }
    }

    /// Puts popped deltas back at the tail unless the key is pending again
    /// (F10). Like a live change, it populates the FIFO only when no
    /// streamed relist is open (F7): a key handed out and put back while
    /// the first listing streams in must not make it synced before its end.
    /// The key does not count as listed: requeued state is old news.
    pub(crate) fn requeue(&mut self, deltas: Deltas<K>) {
        self.live_event(None);
        if let Entry::Vacant(slot) = self.items.entry(deltas.key().clone()) {
            self.queue.push_back(slot.key().clone());
            let added = deltas.len();
            slot.insert(deltas);
            self.set_deltas(self.deltas() + added);
        }
    }

    /// Opens a streamed relist, discarding one left unfinished.
    pub(crate) fn list_start(&mut self) {
        self.listing = Some(Listing::default());
    }

    pub(crate) fn listing_mut(&mut self) -> Option<&mut Listing> {
        self.listing.as_mut()
    }

    pub(crate) fn take_listing(&mut self) -> Option<Listing> {
        self.listing.take()
    }

    /// Enqueues a tombstone for every key that vanished from a relist and
    /// returns how many (F6): first pending keys (queue order), then keys only
    /// the known objects hold (sorted, so the order is reproducible).
    ///
    /// Every tombstone is worked out before the first is queued, so a
    /// known-objects view that panics leaves the queue as it was (L9).
    pub(crate) fn tombstone_unlisted(
        &mut self,
        listed: &KeySet<ObjectKey>,
        known: Option<Guarded<'_, K>>,
    ) -> Result<usize, Error> {
        let mut vanished: Vec<(ObjectKey, Arc<K>)> = self
            .queue
            .iter()
            .filter(|key| !listed.contains(*key))
            .filter_map(|key| {
                let newest = self.items.get(key)?.newest().object.object();
                Some((key.clone(), Arc::clone(newest)))
            })
            .collect();
        if let Some(known) = known {
            let mut known_keys: Vec<ObjectKey> = known
                .list_keys()?
                .into_iter()
                .filter(|key| !listed.contains(key) && !self.is_pending(key))
                .collect();
            known_keys.sort_unstable();
            known_keys.dedup();
            for key in known_keys {
                // A key listed but gone by the time it is read has no state
                // to carry; client-go would queue a tombstone with no object.
                if let Some(object) = known.get_by_key(&key)? {
                    vanished.push((key, object));
                }
            }
        }
        let deletions = vanished.len();
        for (key, object) in vanished {
            self.append(key.clone(), Delta::tombstone(key, object));
        }
        Ok(deletions)
    }

    /// Ends a relist: the first one fixes how many pops make the FIFO synced
    /// (F7), `population`.
    pub(crate) fn finish_relist(&mut self, population: usize, resource_version: &str) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = population;
            self.check_synced();
        }
        self.last_sync_resource_version = Some(resource_version.to_owned());
    }

    /// Enqueues `Sync` for every known object whose key has nothing pending (F8).
    pub(crate) fn resync(&mut self, objects: Vec<(ObjectKey, Arc<K>)>) {
        for (key, object) in objects {
            if self.is_pending(&key) {
                continue;
            }
            self.append(key, Delta::new(DeltaType::Sync, object));
        }
    }
}
