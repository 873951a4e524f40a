//! Property test: random operation sequences run against the real DeltaFifo
//! and against a small, obviously-correct reference model of the F rules.
//! Every pop, every error and `has_synced` after every step must agree.
//!
//! Streamed relists come whole (`StreamedRelist`) and in pieces
//! (`ListStart`, `Listed`, `ListDone`) that interleave with live changes,
//! pops, resyncs, requeues and atomic relists (F7, F13).

use crate::fifo_common;

use std::collections::{BTreeMap, BTreeSet};

use fifo_common::{Known, cm, key, popped};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::fifo::{Coalesce, DeltaFifo, FifoOptions};
use kube_informer::{DeltaType, Deltas};
use proptest::prelude::*;

use DeltaType::*;

type D = fifo_common::DeltaSummary;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Update(u8),
    Delete(u8),
    Replace(Vec<u8>),
    StreamedRelist(Vec<u8>),
    /// The pieces of a streamed relist, free to interleave with the rest.
    ListStart,
    Listed(u8),
    ListDone,
    Resync,
    Pop,
    Requeue,
}

const NAMES: [&str; 5] = ["a", "b", "c", "d", "x"]; // "x" is rejected by the transform

fn op() -> impl Strategy<Value = Op> {
    let name = 0u8..5;
    prop_oneof![
        3 => name.clone().prop_map(Op::Add),
        3 => name.clone().prop_map(Op::Update),
        2 => name.clone().prop_map(Op::Delete),
        1 => prop::collection::vec(name.clone(), 0..5).prop_map(Op::Replace),
        1 => prop::collection::vec(name.clone(), 0..5).prop_map(Op::StreamedRelist),
        1 => Just(Op::ListStart),
        3 => name.prop_map(Op::Listed),
        1 => Just(Op::ListDone),
        1 => Just(Op::Resync),
        4 => Just(Op::Pop),
        1 => Just(Op::Requeue),
    ]
}

/// The reference: a queue as a Vec of (key, deltas), scanned linearly.
struct Model {
    coalesce: Coalesce,
    queue: Vec<(String, Vec<D>)>,
    populated: bool,
    count: usize,
    synced: bool,
    /// The keys of an open streamed relist: listed, or added or updated
    /// while it is open.
    listing: Option<BTreeSet<String>>,
}

impl Model {
    fn pending(&mut self, key: &str) -> Option<&mut Vec<D>> {
        self.queue
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, d)| d)
    }

    fn check_synced(&mut self) {
        if self.populated && self.count == 0 {
            self.synced = true;
        }
    }

    /// A live change (`key` when it is an accepted add or update): it marks
    /// the queue populated, unless a streamed relist is open; then the key
    /// counts as listed and the relist's end populates (F7).
    fn live(&mut self, key: Option<&str>) {
        match &mut self.listing {
            Some(listing) => {
                listing.extend(key.map(str::to_owned));
            }
            None => {
                self.populated = true;
                self.check_synced();
            }
        }
    }

    fn append(&mut self, key: &str, d: D) {
        let coalesce = self.coalesce;
        match self.pending(key) {
            None => self.queue.push((key.to_owned(), vec![d])),
            Some(list) if coalesce == Coalesce::KeepAll => {
                list.push(d);
                dedup(list);
            }
            Some(list) => latest(list, d),
        }
    }

    fn pop(&mut self) -> Option<(String, Vec<D>)> {
        if self.queue.is_empty() {
            return None;
        }
        if self.count > 0 {
            self.count -= 1;
            self.check_synced();
        }
        Some(self.queue.remove(0))
    }

    /// An atomic relist (`replace`): it ends an open streamed relist and
    /// stops at the first rejected object, keeping what it queued before.
    fn relist(&mut self, list: &[u8], known: &BTreeMap<String, String>, rv: &str) -> bool {
        self.listing = Some(BTreeSet::new());
        for &n in list {
            if !self.listed(n, rv) {
                self.listing = None;
                return false;
            }
        }
        self.list_done(known)
    }

    fn list_start(&mut self) {
        self.listing = Some(BTreeSet::new());
    }

    /// One object of a streamed relist; `false` when refused (no relist
    /// open, or rejected by the transform).
    fn listed(&mut self, n: u8, rv: &str) -> bool {
        let name = NAMES[n as usize];
        let Some(listing) = &mut self.listing else {
            return false;
        };
        if name == "x" {
            return false;
        }
        let k = key(name).to_string();
        listing.insert(k.clone());
        self.append(&k, (Replaced, rv.to_owned(), false));
        true
    }

    /// The end of a relist: tombstones for what vanished (F6); the first
    /// one counts everything queued at this point (F7).
    fn list_done(&mut self, known: &BTreeMap<String, String>) -> bool {
        let Some(listed) = self.listing.take() else {
            return false;
        };
        let vanished: Vec<(String, String)> = self
            .queue
            .iter()
            .filter(|(k, _)| !listed.contains(k))
            .map(|(k, d)| (k.clone(), d.last().unwrap().1.clone()))
            .collect();
        for (k, obj_rv) in vanished {
            self.append(&k, (Deleted, obj_rv, true));
        }
        for (k, obj_rv) in known {
            if listed.contains(k) || self.pending(k).is_some() {
                continue;
            }
            self.append(k, (Deleted, obj_rv.clone(), true));
        }
        if !self.populated {
            // Listed keys popped while the relist was open were handed out
            // already; what is queued now is what is left of it.
            self.populated = true;
            self.count = self.queue.len();
            self.check_synced();
        }
        true
    }
}

fn is_del(d: &D) -> bool {
    d.0 == Deleted
}

fn dedup(list: &mut Vec<D>) {
    let n = list.len();
    if n >= 2 && is_del(&list[n - 1]) && is_del(&list[n - 2]) {
        let newer = list.pop().unwrap();
        if list[n - 2].2 {
            list[n - 2] = newer;
        }
    }
}

/// F12 as documented on `Coalesce::Latest`.
fn latest(list: &mut Vec<D>, d: D) {
    let last_del = is_del(list.last().unwrap());
    match (is_del(&d), last_del) {
        (false, true) => {
            let last = list.pop().unwrap();
            *list = vec![last, d];
        }
        (false, false) => {
            let last = list.last_mut().unwrap();
            let t = if matches!(last.0, Added | Updated) {
                last.0
            } else {
                d.0
            };
            *last = (t, d.1, d.2);
        }
        (true, true) => {
            list.push(d);
            dedup(list);
        }
        (true, false) if list.iter().any(is_del) => *list = vec![d],
        (true, false) => list.push(d),
    }
}

fn apply_to_store(store: &mut BTreeMap<String, String>, known: &Known, deltas: &Deltas<ConfigMap>) {
    for d in deltas {
        let obj = d.object.object();
        if d.delta_type == Deleted {
            store.remove(deltas.key().as_str());
            known.remove(deltas.key());
        } else {
            store.insert(deltas.key().to_string(), fifo_common::rv(obj));
            known.insert((**obj).clone());
        }
    }
}

fn run(ops: Vec<Op>, coalesce: Coalesce) -> Result<(), TestCaseError> {
    let known = std::sync::Arc::new(Known::default());
    let fifo = DeltaFifo::new(
        FifoOptions::default()
            .coalesce(coalesce)
            .known_objects(known.clone())
            .transform(|o: ConfigMap| {
                if o.metadata.name.as_deref() == Some("x") {
                    Err("rejected".into())
                } else {
                    Ok(o)
                }
            }),
    );
    let mut model = Model {
        coalesce,
        queue: Vec::new(),
        populated: false,
        count: 0,
        synced: false,
        listing: None,
    };
    // The consumer's store, as the model sees it: key -> resourceVersion.
    let mut store: BTreeMap<String, String> = BTreeMap::new();
    let mut last_popped: Option<Deltas<ConfigMap>> = None;

    for (step, op) in ops.into_iter().enumerate() {
        let rv = step.to_string();
        match &op {
            Op::Add(n) | Op::Update(n) => {
                let name = NAMES[*n as usize];
                let t = if matches!(op, Op::Add(_)) {
                    Added
                } else {
                    Updated
                };
                let got = if t == Added {
                    fifo.add(cm(name, &rv))
                } else {
                    fifo.update(cm(name, &rv))
                };
                let k = key(name).to_string();
                model.live((name != "x").then_some(k.as_str()));
                prop_assert_eq!(got.is_ok(), name != "x");
                if name != "x" {
                    model.append(key(name).as_str(), (t, rv.clone(), false));
                }
            }
            Op::Delete(n) => {
                let name = NAMES[*n as usize];
                let k = key(name).to_string();
                let got = fifo.delete(cm(name, &rv));
                model.live(None);
                let queued = model.pending(&k).is_some() || store.contains_key(&k);
                prop_assert_eq!(got.is_ok(), name != "x" || !queued);
                if queued && name != "x" {
                    model.append(&k, (Deleted, rv.clone(), false));
                }
            }
            Op::Replace(list) => {
                let objs = list.iter().map(|&n| cm(NAMES[n as usize], &rv));
                let got = fifo.replace(objs, &rv);
                let ok = model.relist(list, &store, &rv);
                prop_assert_eq!(got.is_ok(), ok);
            }
            Op::StreamedRelist(list) => {
                // Rejected objects are skipped by a streamed relist.
                fifo.list_start();
                model.list_start();
                for &n in list {
                    let got = fifo.listed(cm(NAMES[n as usize], &rv));
                    prop_assert_eq!(got.is_ok(), model.listed(n, &rv));
                }
                fifo.list_done(&rv).unwrap();
                prop_assert!(model.list_done(&store));
            }
            Op::ListStart => {
                fifo.list_start();
                model.list_start();
            }
            Op::Listed(n) => {
                let got = fifo.listed(cm(NAMES[*n as usize], &rv));
                prop_assert_eq!(got.is_ok(), model.listed(*n, &rv));
            }
            Op::ListDone => {
                let got = fifo.list_done(&rv);
                prop_assert_eq!(got.is_ok(), model.list_done(&store));
            }
            Op::Resync => {
                fifo.resync().unwrap();
                for (k, obj_rv) in &store {
                    if model.pending(k).is_none() {
                        model.append(k, (Sync, obj_rv.clone(), false));
                    }
                }
            }
            Op::Pop => {
                let got = fifo.try_pop();
                let want = model.pop();
                prop_assert_eq!(got.as_ref().map(popped), want, "step {}", step);
                if let Some(deltas) = got {
                    apply_to_store(&mut store, &known, &deltas);
                    last_popped = Some(deltas);
                }
            }
            Op::Requeue => {
                if let Some(deltas) = last_popped.take() {
                    let k = deltas.key().to_string();
                    let summary = popped(&deltas).1;
                    fifo.requeue(deltas).unwrap();
                    model.live(None);
                    if model.pending(&k).is_none() {
                        model.queue.push((k, summary));
                    }
                }
            }
        }
        prop_assert_eq!(
            fifo.has_synced(),
            model.synced,
            "has_synced after step {} {:?}",
            step,
            op
        );
        prop_assert_eq!(fifo.len(), model.queue.len());
        prop_assert_eq!(
            fifo.pending_deltas(),
            model.queue.iter().map(|(_, d)| d.len()).sum::<usize>(),
            "pending deltas after step {}",
            step
        );
        if coalesce == Coalesce::Latest {
            for k in fifo.list_keys() {
                prop_assert!(fifo.get_by_key(&k).unwrap().len() <= 2, "F12 bound");
            }
        }
    }
    // Drain: everything left must agree too.
    while let Some(want) = model.pop() {
        prop_assert_eq!(fifo.try_pop().as_ref().map(popped), Some(want));
    }
    prop_assert!(fifo.try_pop().is_none());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    // F3 F4 F5 F6 F7 F8 F10 F11 F13
    #[test]
    fn keep_all_matches_the_reference_model(ops in prop::collection::vec(op(), 0..60)) {
        run(ops, Coalesce::KeepAll)?;
    }

    // F12 (plus the same rules)
    #[test]
    fn latest_matches_the_reference_model(ops in prop::collection::vec(op(), 0..60)) {
        run(ops, Coalesce::Latest)?;
    }
}
