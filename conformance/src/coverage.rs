//! Which edge cases a run reached, judged from the FIFO's state just before
//! each operation, so a generator change that stops reaching one is noticed.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    DeltaType, Deltas, ObjectKey,
    fifo::{DeltaFifo, KnownObjects},
};

use crate::{
    rust_runner::{REJECT_PREFIX, config_map},
    trace::{Obj, Op},
};

/// Every edge case the generator must reach.
pub const EDGE_CASES: &[&str] = &[
    "add-before-first-replace",
    "delete-unknown-key",
    "delete-known-idle-key",
    "delete-after-tombstone",
    "update-unknown-key",
    "replace-vanished-pending-key",
    "replace-vanished-known-only-key",
    "replace-tombstone-after-deleted",
    "replace-duplicate-keys",
    "replace-key-error",
    "replace-empty-list",
    "replace-emit-sync",
    "replace-streamed",
    "resync-while-pending",
    "resync-without-known-objects",
    "op-after-close",
    "pop-empty",
    "pop-closed",
    "pop-initial-list",
    "requeue-key-pending-again",
    "requeue-key-idle",
    "key-error",
    "transform-rejects",
];

/// How often each edge case was reached.
pub type Coverage = BTreeMap<&'static str, u64>;

/// What the classifier may look at before an operation.
pub(crate) struct Before<'a> {
    pub(crate) fifo: &'a DeltaFifo<ConfigMap>,
    pub(crate) known: Option<&'a dyn KnownObjects<ConfigMap>>,
    pub(crate) last_pop: Option<&'a Deltas<ConfigMap>>,
    pub(crate) emit_replaced: bool,
    pub(crate) streamed_relist: bool,
    pub(crate) transform: bool,
    pub(crate) replaced_once: bool,
}

fn key_of(obj: &Obj) -> Option<ObjectKey> {
    ObjectKey::from_object(&config_map(obj)).ok()
}

fn rejected(b: &Before<'_>, obj: &Obj) -> bool {
    b.transform
        && obj
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(REJECT_PREFIX))
}

/// Records the edge cases `op` is about to hit.
pub(crate) fn classify(b: &Before<'_>, op: &Op, coverage: &mut Coverage) {
    let mut hit = |case: &'static str| *coverage.entry(case).or_default() += 1;
    let known = |key: &ObjectKey| b.known.is_some_and(|k| k.get_by_key(key).is_some());
    if b.fifo.is_closed() && !matches!(op, Op::Pop | Op::Close) {
        hit("op-after-close");
    }
    match op {
        Op::Add { obj } | Op::Update { obj } | Op::Delete { obj } => {
            let Some(key) = key_of(obj) else {
                hit("key-error");
                return;
            };
            if rejected(b, obj) {
                hit("transform-rejects");
            }
            let pending = b.fifo.get_by_key(&key);
            match op {
                Op::Add { .. } if !b.replaced_once => hit("add-before-first-replace"),
                Op::Update { .. } if pending.is_none() && !known(&key) => hit("update-unknown-key"),
                Op::Delete { .. } => match &pending {
                    None if known(&key) => hit("delete-known-idle-key"),
                    None => hit("delete-unknown-key"),
                    Some(d) if d.newest().object.is_tombstone() => hit("delete-after-tombstone"),
                    Some(_) => {}
                },
                _ => {}
            }
        }
        Op::Replace { items, .. } => {
            if items.is_empty() {
                hit("replace-empty-list");
            }
            if !b.emit_replaced {
                hit("replace-emit-sync");
            }
            if b.streamed_relist {
                hit("replace-streamed");
            }
            let mut listed = HashSet::new();
            for obj in items {
                match key_of(obj) {
                    Some(key) => {
                        if !listed.insert(key) {
                            hit("replace-duplicate-keys");
                        }
                    }
                    None => {
                        hit("replace-key-error");
                        return;
                    }
                }
            }
            for key in b.fifo.list_keys() {
                if listed.contains(&key) {
                    continue;
                }
                hit("replace-vanished-pending-key");
                if let Some(d) = b.fifo.get_by_key(&key) {
                    let newest = d.newest();
                    if newest.delta_type == DeltaType::Deleted && !newest.object.is_tombstone() {
                        hit("replace-tombstone-after-deleted");
                    }
                }
            }
            if let Some(k) = b.known {
                let known_only = k
                    .list_keys()
                    .into_iter()
                    .any(|key| !listed.contains(&key) && b.fifo.get_by_key(&key).is_none());
                if known_only {
                    hit("replace-vanished-known-only-key");
                }
            }
        }
        Op::Resync => match b.known {
            None => hit("resync-without-known-objects"),
            Some(k) => {
                if k.list_keys()
                    .iter()
                    .any(|key| b.fifo.get_by_key(key).is_some())
                {
                    hit("resync-while-pending");
                }
            }
        },
        Op::Pop => {
            if b.fifo.is_empty() {
                hit(if b.fifo.is_closed() {
                    "pop-closed"
                } else {
                    "pop-empty"
                });
            } else if !b.fifo.has_synced() {
                hit("pop-initial-list");
            }
        }
        Op::Requeue => {
            if let Some(d) = b.last_pop {
                hit(if b.fifo.get_by_key(d.key()).is_some() {
                    "requeue-key-pending-again"
                } else {
                    "requeue-key-idle"
                });
            }
        }
        Op::Close => {}
    }
}
