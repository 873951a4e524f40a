//! Property test: random operation sequences run against the real DeltaFifo
//! and against a small, obviously-correct reference model of the F rules.
//! Every pop, every error and `has_synced` after every step must agree.

mod fifo_common;

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
        1 => prop::collection::vec(name, 0..5).prop_map(Op::StreamedRelist),
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

    fn populate(&mut self) {
        self.populated = true;
        self.check_synced();
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

    fn relist(&mut self, list: &[u8], known: &BTreeMap<String, String>, rv: &str) -> bool {
        let mut listed = BTreeSet::new();
        for &n in list {
            if NAMES[n as usize] == "x" {
                return false;
            }
            let k = key(NAMES[n as usize]).to_string();
            listed.insert(k.clone());
            self.append(&k, (Replaced, rv.to_owned(), false));
        }
        let vanished: Vec<(String, String)> = self
            .queue
            .iter()
            .filter(|(k, _)| !listed.contains(k))
            .map(|(k, d)| (k.clone(), d.last().unwrap().1.clone()))
            .collect();
        let mut deletions = vanished.len();
        for (k, obj_rv) in vanished {
            self.append(&k, (Deleted, obj_rv, true));
        }
        for (k, obj_rv) in known {
            if listed.contains(k) || self.pending(k).is_some() {
                continue;
            }
            self.append(k, (Deleted, obj_rv.clone(), true));
            deletions += 1;
        }
        if !self.populated {
            self.populated = true;
            self.count = listed.len() + deletions;
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
                model.populate();
                prop_assert_eq!(got.is_ok(), name != "x");
                if name != "x" {
                    model.append(key(name).as_str(), (t, rv.clone(), false));
                }
            }
            Op::Delete(n) => {
                let name = NAMES[*n as usize];
                let k = key(name).to_string();
                let got = fifo.delete(cm(name, &rv));
                model.populate();
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
                fifo.list_start();
                let mut ok = true;
                for &n in list {
                    ok &= fifo.listed(cm(NAMES[n as usize], &rv)).is_ok();
                }
                fifo.list_done(&rv).unwrap();
                prop_assert_eq!(ok, !list.contains(&4));
                // Rejected objects are skipped by a streamed relist, and the
                // rest behaves like a replace of the accepted objects.
                let accepted: Vec<u8> = list.iter().copied().filter(|&n| n != 4).collect();
                prop_assert!(model.relist(&accepted, &store, &rv));
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
                    model.populate();
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
