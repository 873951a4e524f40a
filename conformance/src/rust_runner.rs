//! Runs a trace through kube-informer's DeltaFifo and records what an
//! observer sees, in the same JSON lines as the Go harness.

use std::{collections::BTreeMap, sync::Arc};

use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    DeltaObject, DeltaType, Deltas, ObjectKey,
    fifo::{DeltaFifo, FifoOptions, KnownObjects},
    store::Error,
};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::{
    coverage::{Before, Coverage, classify},
    trace::{Obj, Op, Trace},
};

/// The annotation the trace transform increments on every run.
pub const TRANSFORM_COUNT: &str = "conformance/transformed";
/// The trace transform rejects objects whose name starts with this.
pub const REJECT_PREFIX: &str = "reject";

/// The informer's store as the FIFO's known objects: updated from popped
/// deltas, listing keys sorted (the Go harness sorts too, so tombstones of
/// vanished known keys queue in the same order on both sides).
#[derive(Debug, Default)]
struct KnownStore(Mutex<BTreeMap<ObjectKey, Arc<ConfigMap>>>);

impl KnownObjects<ConfigMap> for KnownStore {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        self.0.lock().get(key).cloned()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.lock().keys().cloned().collect()
    }
}

impl KnownStore {
    /// Applies popped deltas the way an informer does: Deleted removes,
    /// every other type adds or replaces.
    fn apply(&self, deltas: &Deltas<ConfigMap>) {
        let mut map = self.0.lock();
        for delta in deltas {
            match delta.delta_type {
                DeltaType::Deleted => {
                    map.remove(deltas.key());
                }
                _ => {
                    map.insert(deltas.key().clone(), Arc::clone(delta.object.object()));
                }
            }
        }
    }
}

/// Builds the ConfigMap a trace object names.
pub fn config_map(obj: &Obj) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = (!obj.ns.is_empty()).then(|| obj.ns.clone());
    cm.metadata.name = obj.name.clone();
    cm.metadata.resource_version = Some(obj.rv.clone());
    cm
}

fn trace_transform(
    mut cm: ConfigMap,
) -> Result<ConfigMap, Box<dyn std::error::Error + Send + Sync>> {
    if cm
        .metadata
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with(REJECT_PREFIX))
    {
        return Err("conformance transform rejects this object".into());
    }
    let annotations = cm.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let runs: u64 = annotations
        .get(TRANSFORM_COUNT)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    annotations.insert(TRANSFORM_COUNT.to_owned(), (runs + 1).to_string());
    Ok(cm)
}

/// The category both runners report for an error; messages differ.
pub fn error_kind(err: &Error) -> String {
    match err {
        Error::MissingName
        | Error::EmptyName
        | Error::EmptyNamespace
        | Error::Slash { .. }
        | Error::Malformed(_) => "key".to_owned(),
        Error::Transform { .. } => "transform".to_owned(),
        Error::Closed => "closed".to_owned(),
        other => format!("other: {other}"),
    }
}

/// Runs `trace` through a fresh DeltaFifo and returns one JSON value per
/// operation (no header echo, no end line).
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::{rust_runner, trace::Trace};
///
/// let trace = Trace::parse(
///     r#"{"trace":"t","emitReplaced":true,"knownObjects":false}
/// {"op":"add","obj":{"ns":"default","name":"a","rv":"1"}}
/// {"op":"pop"}"#,
/// )?;
/// let out = rust_runner::run(&trace);
/// assert_eq!(out[1]["key"], "default/a");
/// assert_eq!(out[1]["deltas"][0]["type"], "Added");
/// # Ok::<(), kube_informer_conformance::trace::TraceError>(())
/// ```
pub fn run(trace: &Trace) -> Vec<Value> {
    run_with_coverage(trace, &mut Coverage::new())
}

/// Like [`run`], and counts in `coverage` the edge cases the trace reached.
pub fn run_with_coverage(trace: &Trace, coverage: &mut Coverage) -> Vec<Value> {
    let known = trace
        .header
        .known_objects
        .then(|| Arc::new(KnownStore::default()));
    let mut options = FifoOptions::default().emit_replaced(trace.header.emit_replaced);
    if let Some(known) = &known {
        options = options.known_objects(Arc::clone(known) as Arc<dyn KnownObjects<ConfigMap>>);
    }
    if trace.header.transform {
        options = options.transform(trace_transform);
    }
    let fifo = DeltaFifo::new(options);
    let mut last_pop: Option<Deltas<ConfigMap>> = None;
    let mut replaced_once = false;
    let mut lines = Vec::with_capacity(trace.ops.len());

    for (i, op) in trace.ops.iter().enumerate() {
        let before = Before {
            fifo: &fifo,
            known: known.as_deref().map(|k| k as &dyn KnownObjects<ConfigMap>),
            last_pop: last_pop.as_ref(),
            emit_replaced: trace.header.emit_replaced,
            streamed_relist: trace.header.streamed_relist,
            transform: trace.header.transform,
            replaced_once,
        };
        classify(&before, op, coverage);
        replaced_once |= matches!(op, Op::Replace { .. });
        let mut line = Map::new();
        line.insert("i".into(), json!(i));
        line.insert("op".into(), json!(op_name(op)));
        let result = match op {
            Op::Add { obj } => fifo.add(config_map(obj)),
            Op::Update { obj } => fifo.update(config_map(obj)),
            Op::Delete { obj } => fifo.delete(config_map(obj)),
            Op::Replace { items, rv } if trace.header.streamed_relist => {
                streamed_relist(&fifo, items, rv)
            }
            Op::Replace { items, rv } => fifo.replace(items.iter().map(config_map), rv),
            Op::Resync => fifo.resync(),
            Op::Close => {
                fifo.close();
                Ok(())
            }
            Op::Pop => {
                pop(&fifo, known.as_deref(), &mut line, &mut last_pop);
                Ok(())
            }
            Op::Requeue => match &last_pop {
                Some(deltas) => fifo.requeue(deltas.clone()),
                None => {
                    line.insert("result".into(), json!("nothing"));
                    Ok(())
                }
            },
        };
        match result {
            Err(e) => {
                line.insert("err".into(), json!(error_kind(&e)));
            }
            Ok(()) => {
                line.entry("err").or_insert(Value::Null);
            }
        }
        line.insert("synced".into(), json!(fifo.has_synced()));
        line.insert("len".into(), json!(fifo.len()));
        lines.push(Value::Object(line));
    }
    lines
}

/// A Replace delivered as a streamed relist (F13). A rejected item ends the
/// relist there, abandoned without `list_done`, as client-go's Replace stops
/// at it and leaves no relist open behind.
fn streamed_relist(fifo: &DeltaFifo<ConfigMap>, items: &[Obj], rv: &str) -> Result<(), Error> {
    fifo.list_start();
    for obj in items {
        if let Err(error) = fifo.listed(config_map(obj)) {
            fifo.list_abandon();
            return Err(error);
        }
    }
    fifo.list_done(rv)
}

fn pop(
    fifo: &DeltaFifo<ConfigMap>,
    known: Option<&KnownStore>,
    line: &mut Map<String, Value>,
    last_pop: &mut Option<Deltas<ConfigMap>>,
) {
    if fifo.is_empty() && !fifo.is_closed() {
        line.insert("result".into(), json!("empty"));
        return;
    }
    // A pop counts as part of the initial list if the FIFO had not synced
    // before it (what client-go passes to its process function).
    let initial = !fifo.has_synced();
    match fifo.pop().now_or_never() {
        None => {
            line.insert("result".into(), json!("blocked"));
        }
        Some(Err(Error::Closed)) => {
            line.insert("result".into(), json!("closed"));
        }
        Some(Err(e)) => {
            line.insert("result".into(), json!("error"));
            line.insert("err".into(), json!(error_kind(&e)));
        }
        Some(Ok(deltas)) => {
            if let Some(known) = known {
                known.apply(&deltas);
            }
            line.insert("result".into(), json!("item"));
            line.insert("initial".into(), json!(initial));
            line.insert("key".into(), json!(deltas.key().as_str()));
            line.insert("deltas".into(), describe(&deltas));
            *last_pop = Some(deltas);
        }
    }
}

fn describe(deltas: &Deltas<ConfigMap>) -> Value {
    deltas
        .iter()
        .map(|delta| {
            let mut entry = Map::new();
            entry.insert("type".into(), json!(format!("{:?}", delta.delta_type)));
            let (key, tombstone) = match &delta.object {
                DeltaObject::DeletedFinalStateUnknown { key, .. } => (Some(key.clone()), true),
                DeltaObject::Object(obj) => (ObjectKey::from_object(&**obj).ok(), false),
            };
            entry.insert("tombstone".into(), json!(tombstone));
            if let Some(key) = key {
                entry.insert("key".into(), json!(key.as_str()));
            }
            let meta = &delta.object.object().metadata;
            entry.insert(
                "rv".into(),
                json!(meta.resource_version.as_deref().unwrap_or("")),
            );
            let runs: u64 = meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(TRANSFORM_COUNT))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            entry.insert("tx".into(), json!(runs));
            Value::Object(entry)
        })
        .collect()
}

/// The name of an operation as the trace spells it.
pub fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Add { .. } => "add",
        Op::Update { .. } => "update",
        Op::Delete { .. } => "delete",
        Op::Replace { .. } => "replace",
        Op::Resync => "resync",
        Op::Pop => "pop",
        Op::Close => "close",
        Op::Requeue => "requeue",
    }
}
