//! The compact cache's hot set: a bounded CLOCK of decoded objects, each
//! kept with the encoded version it was decoded from (CM3, CM4).
//!
//! A key joins on its second read by `get` within the last
//! `2 × capacity` first reads (a doorkeeper of key hashes): random reads
//! over many keys then cost one decode each, without also evicting and
//! dropping a decoded object per read, and keys read once do not push out
//! the keys read often.

use std::{collections::VecDeque, hash::BuildHasher, sync::Arc};

use crate::{
    hash::{KeyHasher, KeyMap, KeySet},
    key::ObjectKey,
};

struct Slot<K> {
    /// The stored bytes this object was decoded from: it is served only
    /// while the store holds these very bytes (CM3). Holding the `Arc`
    /// keeps the allocation alive, so a pointer match cannot be a reuse.
    bytes: Arc<[u8]>,
    object: Arc<K>,
    /// Read since the clock hand last passed: spared once.
    referenced: bool,
}

/// At most `capacity` decoded objects (CM4), evicted by CLOCK (second
/// chance): a key read again since the hand last passed it is spared once.
pub(super) struct HotSet<K> {
    capacity: usize,
    slots: KeyMap<ObjectKey, Slot<K>>,
    /// The clock: keys in the order the hand visits them. A key removed by
    /// a write stays here until the hand reaches it and finds no slot.
    hand: VecDeque<ObjectKey>,
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
            slots: KeyMap::default(),
            hand: VecDeque::new(),
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
        let slot = self.slots.get_mut(key)?;
        if !Arc::ptr_eq(&slot.bytes, bytes) {
            return None;
        }
        slot.referenced = true;
        Some(Arc::clone(&slot.object))
    }

    /// Keeps `object`, decoded from `bytes` for a `get` of `key`, if the
    /// key was read lately too, evicting another key if the set is full.
    pub(super) fn admit(&mut self, key: &ObjectKey, bytes: Arc<[u8]>, object: Arc<K>) {
        if self.capacity == 0 {
            return;
        }
        if let Some(slot) = self.slots.get_mut(key.as_str()) {
            slot.bytes = bytes;
            slot.object = object;
            return;
        }
        if !self.read_before(key) {
            return;
        }
        while self.slots.len() >= self.capacity {
            self.evict_one();
        }
        self.slots.insert(
            key.clone(),
            Slot {
                bytes,
                object,
                referenced: false,
            },
        );
        self.hand.push_back(key.clone());
        self.tidy_hand();
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
        let slot = self.slots.get_mut(key.as_str())?;
        let was = old
            .filter(|old| Arc::ptr_eq(&slot.bytes, old))
            .map(|_| Arc::clone(&slot.object));
        match new {
            Some((bytes, object)) => {
                slot.bytes = bytes;
                slot.object = object;
            }
            None => {
                self.slots.remove(key.as_str());
            }
        }
        was
    }

    fn evict_one(&mut self) {
        while let Some(key) = self.hand.pop_front() {
            match self.slots.get_mut(key.as_str()) {
                // Removed by a write since it was queued.
                None => continue,
                Some(slot) if slot.referenced => {
                    slot.referenced = false;
                    self.hand.push_back(key);
                }
                Some(_) => {
                    self.slots.remove(key.as_str());
                    return;
                }
            }
        }
    }

    /// Keys removed and admitted again leave copies on the clock; once it
    /// holds more than twice the set, it is rebuilt from the kept keys.
    fn tidy_hand(&mut self) {
        if self.hand.len() > 2 * self.capacity + 16 {
            let mut seen = crate::hash::KeySet::default();
            let slots = &self.slots;
            self.hand
                .retain(|key| slots.contains_key(key.as_str()) && seen.insert(key.clone()));
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
    fn cm4_the_clock_stays_bounded_when_keys_come_and_go() {
        let mut hot = HotSet::new(2);
        for i in 0..1_000 {
            let b = bytes(b"x");
            hot.admit(&key("a"), Arc::clone(&b), Arc::new(i));
            hot.admit(&key("a"), Arc::clone(&b), Arc::new(i));
            assert!(hot.get("ns/a", &b).is_some());
            hot.rewrite(&key("a"), Some(&b), None);
        }
        assert!(hot.hand.len() <= 2 * 2 + 17);
    }
}
