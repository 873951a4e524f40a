//! How a new delta joins a key's pending deltas: the F5 dedup for
//! [`Coalesce::KeepAll`] and the bounded merge for [`Coalesce::Latest`] (F12).

use smallvec::SmallVec;

use super::options::Coalesce;
use crate::delta::{Delta, DeltaType};

type Items<K> = SmallVec<[Delta<K>; 1]>;

/// Appends `delta` to a non-empty pending list under the given policy.
pub(crate) fn append<K>(items: &mut Items<K>, delta: Delta<K>, coalesce: Coalesce) {
    match coalesce {
        Coalesce::KeepAll => {
            items.push(delta);
            dedup_last_two(items);
        }
        Coalesce::Latest => append_latest(items, delta),
    }
}

/// F5: two `Deleted` in a row become one. The older survives because it
/// carries a watched final state, unless it is only a tombstone.
fn dedup_last_two<K>(items: &mut Items<K>) {
    let n = items.len();
    if n < 2 {
        return;
    }
    if items[n - 1].delta_type != DeltaType::Deleted
        || items[n - 2].delta_type != DeltaType::Deleted
    {
        return;
    }
    let newer = items.pop().expect("n >= 2");
    if items[n - 2].object.is_tombstone() {
        items[n - 2] = newer;
    }
}

fn is_deleted<K>(delta: &Delta<K>) -> bool {
    delta.delta_type == DeltaType::Deleted
}

fn append_latest<K>(items: &mut Items<K>, delta: Delta<K>) {
    let last_is_deleted = items.last().is_some_and(is_deleted);
    if !is_deleted(&delta) {
        if last_is_deleted {
            // A re-creation: whatever preceded the delete is gone for good.
            let len = items.len();
            items.drain(..len - 1);
            items.push(delta);
        } else {
            let last = items.last_mut().expect("pending deltas are never empty");
            last.delta_type = merged_type(last.delta_type, delta.delta_type);
            last.object = delta.object;
        }
    } else if last_is_deleted {
        items.push(delta);
        dedup_last_two(items);
    } else if items.iter().any(is_deleted) {
        // A re-creation deleted again: only the newest final state matters.
        items.clear();
        items.push(delta);
    } else {
        items.push(delta);
    }
}

/// The type of two object deltas merged into one: a pending `Added` or
/// `Updated` keeps its meaning, a `Replaced` or `Sync` yields to what came next.
fn merged_type(older: DeltaType, newer: DeltaType) -> DeltaType {
    match older {
        DeltaType::Added | DeltaType::Updated => older,
        _ => newer,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::key::ObjectKey;

    fn d(t: DeltaType, v: u8) -> Delta<u8> {
        Delta::new(t, Arc::new(v))
    }

    fn tomb(v: u8) -> Delta<u8> {
        Delta::tombstone(ObjectKey::new(None, "a").unwrap(), Arc::new(v))
    }

    fn run(coalesce: Coalesce, deltas: Vec<Delta<u8>>) -> Vec<(DeltaType, u8, bool)> {
        let mut it = deltas.into_iter();
        let mut items: Items<u8> = SmallVec::new();
        items.push(it.next().unwrap());
        for delta in it {
            append(&mut items, delta, coalesce);
        }
        items
            .iter()
            .map(|x| (x.delta_type, **x.object.object(), x.object.is_tombstone()))
            .collect()
    }

    use DeltaType::*;

    // F5
    #[test]
    fn f5_keep_all_dedups_only_deleted_pairs() {
        let got = run(Coalesce::KeepAll, vec![d(Deleted, 1), d(Deleted, 2)]);
        assert_eq!(got, [(Deleted, 1, false)]);
        let got = run(Coalesce::KeepAll, vec![tomb(1), d(Deleted, 2)]);
        assert_eq!(got, [(Deleted, 2, false)]);
        let got = run(Coalesce::KeepAll, vec![d(Deleted, 1), tomb(2)]);
        assert_eq!(got, [(Deleted, 1, false)]);
        let got = run(Coalesce::KeepAll, vec![d(Updated, 1), d(Updated, 2)]);
        assert_eq!(got.len(), 2);
    }

    // F12
    #[test]
    fn f12_latest_shapes() {
        let l = Coalesce::Latest;
        assert_eq!(
            run(l, vec![d(Added, 1), d(Updated, 2), d(Sync, 3)]),
            [(Added, 3, false)]
        );
        assert_eq!(
            run(l, vec![d(Sync, 1), d(Updated, 2)]),
            [(Updated, 2, false)]
        );
        assert_eq!(
            run(l, vec![d(Added, 1), d(Deleted, 1)]),
            [(Added, 1, false), (Deleted, 1, false)]
        );
        assert_eq!(
            run(
                l,
                vec![d(Added, 1), d(Deleted, 1), d(Added, 2), d(Updated, 3)]
            ),
            [(Deleted, 1, false), (Added, 3, false)]
        );
        assert_eq!(
            run(l, vec![d(Deleted, 1), d(Added, 2), d(Deleted, 2)]),
            [(Deleted, 2, false)]
        );
        assert_eq!(
            run(l, vec![d(Updated, 1), tomb(1), d(Deleted, 2)]),
            [(Updated, 1, false), (Deleted, 2, false)]
        );
    }
}
