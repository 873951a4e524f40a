//! The hasher of every map and set the stages keep by key.
//!
//! foldhash rather than std's SipHash: hashing keys is on the path of every
//! event (the FIFO's coalescing, the store, the indexes, the work queue), and
//! SipHash cost a third of a work-queue round. By default its seed is random
//! per process, so crafted object names cannot be aimed at a known hash.
//!
//! With the `deterministic` feature the seed is fixed instead: the order in
//! which a map yields its keys then depends only on the sequence of changes
//! made to it, so [`Store::list`](crate::Store::list), resync rounds, late-join
//! replays and relist deletions come in the same order on every run. Seeded
//! simulations (kube-informer-testing's `Simulation`) need that to repeat a
//! run. Enable it in `[dev-dependencies]` only: with a fixed seed, whoever
//! can name objects can choose names that collide.

use std::collections::{HashMap, HashSet};

/// The seed: random per process, or fixed with the `deterministic` feature.
#[cfg(not(feature = "deterministic"))]
pub(crate) type KeyHasher = foldhash::fast::RandomState;
/// The seed: random per process, or fixed with the `deterministic` feature.
#[cfg(feature = "deterministic")]
pub(crate) type KeyHasher = foldhash::fast::FixedState;

/// A map from keys of any kind, hashed with [`KeyHasher`].
pub(crate) type KeyMap<K, V> = HashMap<K, V, KeyHasher>;
/// A set of keys of any kind, hashed with [`KeyHasher`].
pub(crate) type KeySet<K> = HashSet<K, KeyHasher>;

#[cfg(all(test, feature = "deterministic"))]
mod tests {
    use super::KeyMap;

    #[test]
    fn rs8_a_fixed_seed_yields_keys_in_the_same_order_in_every_map() {
        let fill = || {
            let mut map = KeyMap::default();
            for i in 0..1000 {
                map.insert(format!("ns/object-{i}"), i);
            }
            map.into_keys().collect::<Vec<_>>()
        };
        assert_eq!(fill(), fill());
    }
}
