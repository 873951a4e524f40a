//! Seeded random traces.
//!
//! Trace `n` of seed `s` depends only on `(s, n)`, so one failing trace of a
//! run of thousands regenerates alone (`--seed S --trace N`).
//!
//! Keys come from a small pool (two namespaces and a cluster-scoped name
//! over a handful of names) so operations keep colliding on the same keys:
//! deletes of unknown keys, relists where vanished keys are pending or only
//! known, resyncs while keys are pending, Deleted after a tombstone and a
//! tombstone after Deleted, requeues after the key became pending again.

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::trace::{Header, Obj, Op, Trace};

const NAMESPACES: [&str; 3] = ["default", "kube-system", ""];
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// The seed of trace `index` in a run seeded with `seed` (SplitMix64 of both).
pub(crate) fn trace_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Gen {
    rng: StdRng,
    next_rv: u64,
    transform: bool,
}

impl Gen {
    fn obj(&mut self) -> Obj {
        self.next_rv += 1;
        let rv = self.next_rv.to_string();
        // Rarely: a nameless object (key error) or, with the transform on,
        // an object the transform rejects.
        if self.rng.random_ratio(1, 40) {
            return Obj {
                ns: "default".into(),
                name: None,
                rv,
            };
        }
        let ns = NAMESPACES[self.rng.random_range(0..NAMESPACES.len())];
        let name = if self.transform && self.rng.random_ratio(1, 15) {
            "reject-me".to_owned()
        } else {
            NAMES[self.rng.random_range(0..NAMES.len())].to_owned()
        };
        Obj {
            ns: ns.into(),
            name: Some(name),
            rv,
        }
    }

    fn replace(&mut self) -> Op {
        let len = match self.rng.random_range(0..10) {
            0 => 0,
            1..=6 => self.rng.random_range(1..=4),
            _ => self.rng.random_range(4..=9),
        };
        let mut items: Vec<Obj> = (0..len).map(|_| self.obj()).collect();
        // Sometimes list the same key twice: the synced count counts keys.
        if !items.is_empty() && self.rng.random_ratio(1, 8) {
            let mut dup = items[self.rng.random_range(0..items.len())].clone();
            self.next_rv += 1;
            dup.rv = self.next_rv.to_string();
            items.push(dup);
        }
        self.next_rv += 1;
        Op::Replace {
            items,
            rv: self.next_rv.to_string(),
        }
    }
}

/// Random trace `index` of the run seeded with `seed`.
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::generate;
///
/// // The 17th trace of seed 42, without generating the 16 before it.
/// let trace = generate::trace(42, 17);
/// assert_eq!(trace, generate::trace(42, 17));
/// assert!(!trace.ops.is_empty());
/// ```
pub fn trace(seed: u64, index: u64) -> Trace {
    let mut rng = StdRng::seed_from_u64(trace_seed(seed, index));
    let header = Header {
        trace: format!("random seed={seed} trace={index}"),
        about: None,
        emit_replaced: rng.random_bool(0.5),
        known_objects: rng.random_bool(0.75),
        transform: rng.random_bool(0.25),
        streamed_relist: rng.random_bool(0.3),
    };
    let requeue = rng.random_bool(0.3);
    let len = rng.random_range(4..=60);
    let close_at = rng.random_bool(0.25).then(|| rng.random_range(0..len));
    let mut g = Gen {
        rng,
        next_rv: 0,
        transform: header.transform,
    };
    let mut ops = Vec::with_capacity(len + 1);
    // Half the traces start the way an informer does, with the initial list,
    // so the synced count (F7) and initial-list pops are exercised.
    if g.rng.random_bool(0.5) {
        ops.push(g.replace());
    }
    for i in 0..len {
        if close_at == Some(i) {
            ops.push(Op::Close);
            continue;
        }
        let roll = g.rng.random_range(0..100);
        let op = match roll {
            0..=17 => Op::Add { obj: g.obj() },
            18..=31 => Op::Update { obj: g.obj() },
            32..=45 => Op::Delete { obj: g.obj() },
            46..=53 => g.replace(),
            54..=60 => Op::Resync,
            61..=66 if requeue => Op::Requeue,
            _ => Op::Pop,
        };
        ops.push(op);
    }
    Trace { header, ops }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_reproducible_and_differ_by_index() {
        assert_eq!(trace(7, 3), trace(7, 3));
        assert_ne!(trace(7, 3).ops, trace(7, 4).ops);
        assert_ne!(trace(7, 3).ops, trace(8, 3).ops);
    }
}
