//! The compact cache's hot set: a bounded set of decoded objects, each
//! kept with the encoded version it was decoded from (CM3, CM4).
//!
//! A key joins on its second read by `get` within the last
//! `2 × capacity` first reads (a doorkeeper of key hashes): random reads
//! over many keys then cost one decode each, without also evicting and
//! dropping a decoded object per read, and keys read once do not push out
//! the keys read often. Which admitted key leaves when the set is full is
//! `quick_cache`'s choice (S3-FIFO: keys read again since they joined are
//! kept over keys that were not).

use std::{collections::VecDeque, hash::BuildHasher, sync::Arc};

use quick_cache::{UnitWeighter, unsync::Cache};

use crate::{
    hash::{KeyHasher, KeySet},
    key::ObjectKey,
};

struct Slot<K> {
    /// The stored bytes this object was decoded from: it is served only
    /// while the store holds these very bytes (CM3). Holding the `Arc`
    /// keeps the allocation alive, so a pointer match cannot be a reuse.
    bytes: Arc<[u8]>,
    object: Arc<K>,
}

/// At most `capacity` decoded objects (CM4).
pub(super) struct HotSet<K> {
    capacity: usize,
    slots: Cache<ObjectKey, Slot<K>, UnitWeighter, KeyHasher>,
    /// Hashes of keys read once lately, oldest first, at most
    /// `2 × capacity`; a key read again while here is admitted.
    doorkeeper: KeySet<u64>,
    doorkeeper_order: VecDeque<u64>,
    hasher: KeyHasher,
}

impl<K> HotSet<K> {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            slots: Cache::with(
                capacity,
                capacity as u64,
                UnitWeighter,
                KeyHasher::default(),
                Default::default(),
            ),
            doorkeeper: KeySet::default(),
            doorkeeper_order: VecDeque::new(),
            hasher: KeyHasher::default(),
        }
    }

    /// Whether `key`, read now by `get` and not kept, was read lately too:
    /// if not, it is noted and not admitted yet.
    fn read_before(&mut self, key: &ObjectKey) -> bool {
        let hash = self.hasher.hash_one(key.as_str());
        if self.doorkeeper.remove(&hash) {
            return true;
        }
        if self.doorkeeper_order.len() >= 2 * self.capacity {
            while let Some(oldest) = self.doorkeeper_order.pop_front() {
                // Hashes admitted since are gone from the set already.
                if self.doorkeeper.remove(&oldest) {
                    break;
                }
            }
        }
        self.doorkeeper.insert(hash);
        self.doorkeeper_order.push_back(hash);
        false
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The object decoded from `bytes` under `key`, if kept.
    pub(super) fn get(&mut self, key: &str, bytes: &Arc<[u8]>) -> Option<Arc<K>> {
        let slot = self.slots.get(key)?;
        Arc::ptr_eq(&slot.bytes, bytes).then(|| Arc::clone(&slot.object))
    }

    /// Keeps `object`, decoded from `bytes` for a `get` of `key`, if the
    /// key was read lately too, evicting another key if the set is full.
    pub(super) fn admit(&mut self, key: &ObjectKey, bytes: Arc<[u8]>, object: Arc<K>) {
        if self.capacity == 0 {
            return;
        }
        if let Some(mut slot) = self.slots.peek_mut(key.as_str()) {
            *slot = Slot { bytes, object };
            return;
        }
        if !self.read_before(key) {
            return;
        }
        self.slots.insert(key.clone(), Slot { bytes, object });
    }

    /// A write replaced `old` (if any) under `key` by `new` (`None`: the key
    /// was removed). Returns the replaced version decoded if the set held
    /// it; keeps the key hot with its new version, or forgets it.
    pub(super) fn rewrite(
        &mut self,
        key: &ObjectKey,
        old: Option<&Arc<[u8]>>,
        new: Option<(Arc<[u8]>, Arc<K>)>,
    ) -> Option<Arc<K>> {
        match new {
            Some((bytes, object)) => {
                let mut slot = self.slots.peek_mut(key.as_str())?;
                let was = old
                    .filter(|old| Arc::ptr_eq(&slot.bytes, old))
                    .map(|_| Arc::clone(&slot.object));
                *slot = Slot { bytes, object };
                was
            }
            None => {
                let (_, slot) = self.slots.remove(key.as_str())?;
                old.filter(|old| Arc::ptr_eq(&slot.bytes, old))
                    .map(|_| slot.object)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        format!("ns/{name}").parse().unwrap()
    }

    fn bytes(b: &[u8]) -> Arc<[u8]> {
        b.into()
    }

    #[test]
    fn cm3_a_version_is_served_only_for_its_own_bytes() {
        let mut hot = HotSet::new(4);
        let v1 = bytes(b"v1");
        hot.admit(&key("a"), Arc::clone(&v1), Arc::new(1));
        assert_eq!(hot.get("ns/a", &v1), None, "admitted on the second read");
        hot.admit(&key("a"), Arc::clone(&v1), Arc::new(1));
        assert_eq!(hot.get("ns/a", &v1).as_deref(), Some(&1));
        // Equal bytes in another allocation are another stored version.
        assert_eq!(hot.get("ns/a", &bytes(b"v1")), None);
        let v2 = bytes(b"v2");
        assert_eq!(
            hot.rewrite(&key("a"), Some(&v1), Some((Arc::clone(&v2), Arc::new(2))))
                .as_deref(),
            Some(&1)
        );
        assert_eq!(hot.get("ns/a", &v1), None);
        assert_eq!(hot.get("ns/a", &v2).as_deref(), Some(&2));
        assert_eq!(hot.rewrite(&key("a"), Some(&v2), None).as_deref(), Some(&2));
        assert_eq!(hot.get("ns/a", &v2), None);
    }

    #[test]
    fn cm4_the_set_stays_bounded_and_spares_keys_read_again() {
        let mut hot = HotSet::new(3);
        let a = bytes(b"a");
        hot.admit(&key("a"), Arc::clone(&a), Arc::new(0));
        hot.admit(&key("a"), Arc::clone(&a), Arc::new(0));
        for i in 0..100 {
            // `a` is read between admissions: it stays.
            assert!(hot.get("ns/a", &a).is_some(), "round {i}");
            for _ in 0..2 {
                hot.admit(&key(&format!("k{i}")), bytes(b"k"), Arc::new(i));
            }
            assert!(hot.len() <= 3);
        }
        // Keys read once are not admitted, and the doorkeeper stays bounded.
        for i in 0..100 {
            hot.admit(&key(&format!("once{i}")), bytes(b"k"), Arc::new(i));
        }
        assert!(hot.get("ns/a", &a).is_some());
        assert!(hot.doorkeeper.len() <= 6 && hot.doorkeeper_order.len() <= 6);
        assert!(HotSet::<u8>::new(0).get("ns/a", &a).is_none());
        let mut none = HotSet::new(0);
        none.admit(&key("a"), a, Arc::new(0));
        assert_eq!(none.len(), 0);
    }

    #[test]
    fn cm4_the_set_stays_bounded_when_keys_come_and_go() {
        let mut hot = HotSet::new(2);
        for i in 0..1_000 {
            let b = bytes(b"x");
            let k = key(&format!("k{}", i % 5));
            hot.admit(&k, Arc::clone(&b), Arc::new(i));
            hot.admit(&k, Arc::clone(&b), Arc::new(i));
            assert!(hot.get(k.as_str(), &b).is_some());
            if i % 2 == 0 {
                hot.rewrite(&k, Some(&b), None);
            }
            assert!(hot.len() <= 2);
        }
    }
}
