//! One test (or more) per DeltaFifo rule F1–F13 of the conformance list.

use crate::fifo_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fifo_common::{DeltaSummary, Known, Popped, cm, key, popped, rv, summary};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Delta, DeltaObject, DeltaType, Deltas, ObjectKey};
use kube_informer::{
    fifo::{Coalesce, DeltaFifo, FifoOptions},
    store::Error,
};

use DeltaType::*;

fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(FifoOptions::default())
}

fn with_known(known: Arc<Known>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(FifoOptions::default().known_objects(known))
}

fn s(t: DeltaType, rv: &str) -> DeltaSummary {
    (t, rv.to_owned(), false)
}

fn tomb(rv: &str) -> DeltaSummary {
    (Deleted, rv.to_owned(), true)
}

fn drain(fifo: &DeltaFifo<ConfigMap>) -> Vec<Popped> {
    std::iter::from_fn(|| fifo.try_pop())
        .map(|d| popped(&d))
        .collect()
}

#[test]
fn f1_every_delta_type_is_produced() {
    let known = Known::with([cm("k", "1")]);
    let f = with_known(known.clone());
    f.add(cm("a", "1")).unwrap();
    f.update(cm("a", "2")).unwrap();
    f.delete(cm("a", "3")).unwrap();
    f.replace([cm("b", "4")], "10").unwrap();
    f.resync().unwrap();
    let all: Vec<DeltaType> = drain(&f)
        .into_iter()
        .flat_map(|(_, d)| d.into_iter().map(|x| x.0))
        .collect();
    // a: Added, Updated, Deleted; b: Replaced; k: Deleted tombstone (unlisted).
    assert_eq!(all, [Added, Updated, Deleted, Replaced, Deleted]);
    f.resync().unwrap();
    assert_eq!(drain(&f), [("default/k".into(), vec![s(Sync, "1")])]);

    // With Replaced turned off, relisted objects are Sync.
    let f = DeltaFifo::new(FifoOptions::default().emit_replaced(false));
    f.replace([cm("b", "1")], "1").unwrap();
    assert_eq!(summary(&f.try_pop().unwrap()), [s(Sync, "1")]);
}

#[test]
fn f2_keys_and_nameless_objects() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    let mut cluster = ConfigMap::default();
    cluster.metadata.name = Some("global".into());
    f.add(cluster).unwrap();
    assert_eq!(
        f.list_keys(),
        [key("a"), ObjectKey::new(None, "global").unwrap()]
    );

    let err = f.add(ConfigMap::default()).unwrap_err();
    assert!(matches!(err, Error::MissingName), "{err:?}");
    assert!(matches!(
        f.update(ConfigMap::default()),
        Err(Error::MissingName)
    ));
    assert!(matches!(
        f.delete(ConfigMap::default()),
        Err(Error::MissingName)
    ));
    assert!(matches!(
        f.replace([ConfigMap::default()], "1"),
        Err(Error::MissingName)
    ));
    // Nothing queued before was lost.
    assert_eq!(f.len(), 2);

    // A tombstone is keyed by the key it carries.
    let other = Arc::new(cm("other", "1"));
    let deltas = Deltas::new(
        key("a"),
        Delta {
            delta_type: Deleted,
            object: DeltaObject::DeletedFinalStateUnknown {
                key: key("a"),
                object: other,
            },
        },
    );
    let g = fifo();
    g.requeue(deltas).unwrap();
    assert_eq!(g.list_keys(), [key("a")]);
}

#[test]
fn f3_key_keeps_its_first_place_until_popped() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.add(cm("b", "2")).unwrap();
    f.update(cm("a", "3")).unwrap();
    f.update(cm("unknown", "4")).unwrap();
    assert_eq!(f.list_keys(), [key("a"), key("b"), key("unknown")]);
    let first = f.try_pop().unwrap();
    assert_eq!(
        popped(&first),
        ("default/a".into(), vec![s(Added, "1"), s(Updated, "3")])
    );
    // Popped, then changed again: it goes to the tail.
    f.update(cm("a", "5")).unwrap();
    assert_eq!(
        drain(&f),
        [
            ("default/b".into(), vec![s(Added, "2")]),
            ("default/unknown".into(), vec![s(Updated, "4")]),
            ("default/a".into(), vec![s(Updated, "5")]),
        ]
    );
}

#[test]
fn f4_delete_without_known_objects_needs_pending_deltas() {
    let f = fifo();
    f.delete(cm("a", "1")).unwrap();
    assert!(f.is_empty());
    f.add(cm("a", "1")).unwrap();
    f.delete(cm("a", "2")).unwrap();
    assert_eq!(
        summary(&f.try_pop().unwrap()),
        [s(Added, "1"), s(Deleted, "2")]
    );
}

#[test]
fn f4_delete_with_known_objects_needs_known_or_pending() {
    let known = Known::with([cm("held", "1")]);
    let f = with_known(known);
    f.delete(cm("stranger", "1")).unwrap();
    assert!(f.is_empty());
    f.delete(cm("held", "2")).unwrap();
    assert_eq!(drain(&f), [("default/held".into(), vec![s(Deleted, "2")])]);
}

#[test]
fn f5_two_deletes_collapse_keeping_the_older() {
    let known = Known::with([cm("a", "1")]);
    let f = with_known(known);
    f.delete(cm("a", "2")).unwrap();
    f.delete(cm("a", "3")).unwrap();
    assert_eq!(summary(&f.try_pop().unwrap()), [s(Deleted, "2")]);
}

#[test]
fn f5_a_delete_after_a_tombstone_replaces_it() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.replace([], "5").unwrap(); // a vanished: tombstone
    f.delete(cm("a", "2")).unwrap();
    assert_eq!(
        summary(&f.try_pop().unwrap()),
        [s(Added, "1"), s(Deleted, "2")]
    );

    // …but a tombstone after a watched delete is dropped.
    f.add(cm("b", "1")).unwrap();
    f.delete(cm("b", "2")).unwrap();
    f.replace([], "6").unwrap();
    assert_eq!(
        summary(&f.try_pop().unwrap()),
        [s(Added, "1"), s(Deleted, "2")]
    );
}

#[test]
fn f5_nothing_else_is_merged() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.add(cm("a", "2")).unwrap();
    f.update(cm("a", "3")).unwrap();
    f.update(cm("a", "4")).unwrap();
    f.replace([cm("a", "5")], "1").unwrap();
    f.replace([cm("a", "6")], "2").unwrap();
    let got: Vec<_> = summary(&f.try_pop().unwrap())
        .into_iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(got, [Added, Added, Updated, Updated, Replaced, Replaced]);
}

#[test]
fn f6_replace_tombstones_vanished_pending_keys_then_known_keys() {
    let known = Known::with([
        cm("k2", "1"),
        cm("k1", "1"),
        cm("listed", "1"),
        cm("p1", "0"),
    ]);
    let f = with_known(known);
    f.add(cm("p2", "7")).unwrap();
    f.update(cm("p1", "8")).unwrap();
    f.replace([cm("listed", "2"), cm("new", "3")], "100")
        .unwrap();
    assert_eq!(
        drain(&f),
        [
            ("default/p2".into(), vec![s(Added, "7"), tomb("7")]),
            ("default/p1".into(), vec![s(Updated, "8"), tomb("8")]),
            ("default/listed".into(), vec![s(Replaced, "2")]),
            ("default/new".into(), vec![s(Replaced, "3")]),
            ("default/k1".into(), vec![tomb("1")]),
            ("default/k2".into(), vec![tomb("1")]),
        ]
    );
    assert_eq!(f.last_sync_resource_version().as_deref(), Some("100"));
}

#[test]
fn f6_tombstone_of_a_tombstoned_key_carries_the_unwrapped_object() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.replace([], "1").unwrap();
    f.replace([], "2").unwrap();
    let deltas = f.try_pop().unwrap();
    assert_eq!(summary(&deltas), [s(Added, "1"), tomb("1")]);
    match &deltas.newest().object {
        DeltaObject::DeletedFinalStateUnknown { key: k, object } => {
            assert_eq!(k, &key("a"));
            assert!(Arc::ptr_eq(object, deltas[0].object.object()));
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
}

#[test]
fn f7_has_synced_after_first_replace_items_are_popped() {
    let known = Known::with([cm("gone", "1")]);
    let f = with_known(known);
    assert!(!f.has_synced());
    // Two listed keys (one listed twice) + one tombstone = 3 items.
    f.replace([cm("a", "1"), cm("b", "1"), cm("a", "2")], "1")
        .unwrap();
    assert!(!f.has_synced());
    f.try_pop().unwrap();
    f.try_pop().unwrap();
    assert!(!f.has_synced());
    // A later replace does not change the count; resync does not either.
    f.replace([cm("c", "1")], "2").unwrap();
    f.resync().unwrap();
    f.try_pop().unwrap();
    assert!(f.has_synced());
    while f.try_pop().is_some() {}
    assert!(f.has_synced(), "never turns false again");
}

#[test]
fn f7_add_update_delete_before_replace_mark_synced() {
    for op in 0..3 {
        let known = Known::with([cm("a", "1")]);
        let f = with_known(known);
        match op {
            0 => f.add(cm("a", "2")).unwrap(),
            1 => f.update(cm("a", "2")).unwrap(),
            _ => f.delete(cm("a", "2")).unwrap(),
        }
        assert!(f.has_synced(), "op {op}");
        // The count of a later replace is not set: still synced.
        f.replace([cm("b", "1")], "1").unwrap();
        assert!(f.has_synced(), "op {op}");
    }
    // As in client-go, a rejected add still marks the FIFO populated (the
    // key is computed under the lock after that); a rejected delete does not.
    let f = fifo();
    assert!(f.delete(ConfigMap::default()).is_err());
    assert!(!f.has_synced());
    assert!(f.add(ConfigMap::default()).is_err());
    assert!(f.has_synced());
    // An empty first relist syncs at once; resync alone does not.
    let f = with_known(Known::with([]));
    f.resync().unwrap();
    assert!(!f.has_synced());
    f.replace([], "1").unwrap();
    assert!(f.has_synced());
}

#[test]
fn f8_resync_queues_sync_for_idle_known_keys_only() {
    let known = Known::with([cm("idle", "1"), cm("busy", "1")]);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let f = DeltaFifo::new(FifoOptions::default().known_objects(known).transform(
        move |o: ConfigMap| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(o)
        },
    ));
    f.update(cm("busy", "2")).unwrap();
    f.resync().unwrap();
    assert_eq!(
        drain(&f),
        [
            ("default/busy".into(), vec![s(Updated, "2")]),
            ("default/idle".into(), vec![s(Sync, "1")]),
        ]
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "resync Sync skips the transform (F11)"
    );
    // Without known objects, nothing happens.
    let g = fifo();
    g.resync().unwrap();
    assert!(g.is_empty());
}

#[tokio::test(start_paused = true)]
async fn f9_pop_waits_until_something_arrives() {
    let f = fifo();
    let producer = f.clone();
    let waiter = tokio::spawn(async move { f.pop().await.map(|d| popped(&d)) });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    producer.add(cm("a", "1")).unwrap();
    assert_eq!(
        waiter.await.unwrap().unwrap(),
        ("default/a".into(), vec![s(Added, "1")])
    );
}

#[tokio::test(start_paused = true)]
async fn f9_close_drains_then_reports_closed() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.close();
    assert!(f.is_closed());
    // Like client-go, a closed FIFO still accepts changes.
    f.add(cm("b", "1")).unwrap();
    assert_eq!(f.pop().await.unwrap().key(), &key("a"));
    assert_eq!(f.pop().await.unwrap().key(), &key("b"));
    assert!(matches!(f.pop().await, Err(Error::Closed)));

    // A waiting pop and a waiting stream wake up on close.
    let g = fifo();
    let pop = tokio::spawn({
        let g = g.clone();
        async move { g.pop().await.map(|_| ()) }
    });
    let stream = tokio::spawn(g.stream().count());
    tokio::task::yield_now().await;
    g.close();
    assert!(matches!(pop.await.unwrap(), Err(Error::Closed)));
    assert_eq!(stream.await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn f9_stream_yields_oldest_first_and_ends_when_closed() {
    let f = fifo();
    for name in ["c", "a", "b"] {
        f.add(cm(name, "1")).unwrap();
    }
    let consumer = tokio::spawn(
        f.stream()
            .map(|d| d.key().name().to_owned())
            .collect::<Vec<_>>(),
    );
    tokio::task::yield_now().await;
    f.add(cm("d", "1")).unwrap();
    tokio::task::yield_now().await;
    f.close();
    assert_eq!(consumer.await.unwrap(), ["c", "a", "b", "d"]);
}

#[test]
fn f10_requeue_goes_to_the_tail_unless_pending_again() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    f.add(cm("b", "1")).unwrap();
    let a = f.try_pop().unwrap();
    f.requeue(a.clone()).unwrap();
    assert_eq!(f.list_keys(), [key("b"), key("a")]);
    assert_eq!(f.get_by_key(&key("a")).unwrap(), a);

    // Pending again: the newer deltas win, the requeued ones are dropped.
    let a = f.try_pop().unwrap(); // b
    assert_eq!(a.key(), &key("b"));
    let a = f.try_pop().unwrap();
    f.update(cm("a", "2")).unwrap();
    f.requeue(a).unwrap();
    assert_eq!(summary(&f.try_pop().unwrap()), [s(Updated, "2")]);
    assert!(f.is_empty());
}

#[test]
fn f10_requeue_rejects_deltas_of_another_key() {
    let f = fifo();
    f.add(cm("keep", "1")).unwrap();
    let mut deltas = Deltas::new(key("a"), live(Added, cm("a", "1")));
    deltas.push(live(Updated, cm("b", "2")));
    let err = f.requeue(deltas).unwrap_err();
    assert!(
        matches!(&err, Error::RequeueKeyMismatch { expected, found } if expected == &key("a") && found == &key("b")),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "requeued deltas for key default/a hold an object keyed default/b"
    );
    assert_eq!(f.list_keys(), [key("keep")]);

    assert_eq!(f.list_keys(), [key("keep")]);
}

// F10: `Deltas::push` takes any delta; a tombstone of another key pushed
// onto a key's deltas is refused whole at the FIFO's door, and nothing of
// it reaches the queue.
#[test]
fn f10_requeue_rejects_a_pushed_tombstone_of_another_key() {
    let f = fifo();
    let mut deltas = Deltas::new(key("a"), live(Added, cm("a", "1")));
    deltas.push(Delta {
        delta_type: Deleted,
        object: DeltaObject::DeletedFinalStateUnknown {
            key: key("b"),
            object: Arc::new(cm("a", "2")),
        },
    });
    let err = f.requeue(deltas).unwrap_err();
    assert!(
        matches!(&err, Error::RequeueKeyMismatch { expected, found } if expected == &key("a") && found == &key("b")),
        "{err:?}"
    );
    assert!(f.is_empty());
    assert_eq!(f.pending_deltas(), 0);
}

fn labelling_fifo(known: Arc<Known>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(
        FifoOptions::default()
            .known_objects(known)
            .transform(|mut o: ConfigMap| {
                if o.metadata.name.as_deref() == Some("bad") {
                    return Err("bad object".into());
                }
                o.metadata.labels = Some([("seen".to_owned(), "yes".to_owned())].into());
                Ok(o)
            }),
    )
}

fn transformed(d: &Delta<ConfigMap>) -> bool {
    d.object.object().metadata.labels.is_some()
}

#[test]
fn f11_transform_runs_on_entering_objects_except_tombstones_and_resync() {
    let known = Known::with([cm("k", "1"), cm("gone", "1")]);
    let f = labelling_fifo(known);
    f.add(cm("a", "1")).unwrap();
    f.update(cm("a", "2")).unwrap();
    f.delete(cm("a", "3")).unwrap();
    f.replace([cm("k", "2")], "1").unwrap();
    let a = f.try_pop().unwrap();
    assert!(a.iter().all(transformed));
    let k = f.try_pop().unwrap();
    assert!(k.iter().all(transformed));
    let gone = f.try_pop().unwrap();
    assert!(gone.newest().object.is_tombstone());
    assert!(
        !transformed(gone.newest()),
        "tombstones carry the known object as is"
    );
    f.resync().unwrap();
    assert!(std::iter::from_fn(|| f.try_pop()).all(|d| !d.iter().any(transformed)));
}

#[test]
fn f11_transform_error_rejects_one_object_and_keeps_earlier_relist_items() {
    let known = Known::with([cm("gone", "1")]);
    let f = labelling_fifo(known);
    f.add(cm("a", "1")).unwrap();
    let err = f.add(cm("bad", "1")).unwrap_err();
    assert!(matches!(&err, Error::Transform { key: k, .. } if k == &key("bad")));
    assert_eq!(err.to_string(), "transform rejected object default/bad");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "bad object"
    );

    let err = f
        .replace([cm("x", "1"), cm("bad", "1"), cm("y", "1")], "9")
        .unwrap_err();
    assert!(matches!(err, Error::Transform { .. }));
    // x stays; y never came; no tombstones were computed; no rv recorded.
    assert_eq!(f.list_keys(), [key("a"), key("x")]);
    assert_eq!(f.last_sync_resource_version(), None);
}

#[test]
fn f12_latest_keeps_one_delta_per_key_and_preserves_added() {
    let f = DeltaFifo::new(FifoOptions::default().coalesce(Coalesce::Latest));
    f.add(cm("a", "0")).unwrap();
    for i in 1..=100 {
        f.update(cm("a", &i.to_string())).unwrap();
    }
    f.update(cm("b", "1")).unwrap();
    f.update(cm("b", "2")).unwrap();
    assert_eq!(
        drain(&f),
        [
            ("default/a".into(), vec![s(Added, "100")]),
            ("default/b".into(), vec![s(Updated, "2")]),
        ]
    );
}

#[test]
fn f12_latest_keeps_deletes_and_recreations() {
    let f = DeltaFifo::new(FifoOptions::default().coalesce(Coalesce::Latest));
    f.add(cm("a", "1")).unwrap();
    f.delete(cm("a", "2")).unwrap();
    f.delete(cm("a", "3")).unwrap();
    assert_eq!(
        summary(&f.get_by_key(&key("a")).unwrap()),
        [s(Added, "1"), s(Deleted, "2")]
    );
    f.add(cm("a", "4")).unwrap();
    f.update(cm("a", "5")).unwrap();
    assert_eq!(
        summary(&f.get_by_key(&key("a")).unwrap()),
        [s(Deleted, "2"), s(Added, "5")]
    );
    f.delete(cm("a", "6")).unwrap();
    assert_eq!(summary(&f.try_pop().unwrap()), [s(Deleted, "6")]);

    // A relist of a pending Added keeps it Added, with the relisted object.
    f.add(cm("b", "1")).unwrap();
    f.replace([cm("b", "2")], "1").unwrap();
    assert_eq!(summary(&f.try_pop().unwrap()), [s(Added, "2")]);
}

/// Runs a relist both ways on two FIFOs in the same starting state.
fn relist_both_ways(list: &[ConfigMap]) -> [Vec<Popped>; 2] {
    let make = || {
        let known = Known::with([cm("k1", "1"), cm("k2", "1"), cm("l", "1")]);
        let f = with_known(known);
        f.add(cm("p", "5")).unwrap();
        f.update(cm("l", "6")).unwrap();
        f
    };
    let whole = make();
    whole.replace(list.iter().cloned(), "77").unwrap();
    let streamed = make();
    streamed.list_start();
    for obj in list {
        streamed.listed(obj.clone()).unwrap();
    }
    streamed.list_done("77").unwrap();
    assert_eq!(whole.has_synced(), streamed.has_synced());
    assert_eq!(streamed.last_sync_resource_version().as_deref(), Some("77"));
    [drain(&whole), drain(&streamed)]
}

#[test]
fn f13_streamed_relist_equals_replace() {
    let [whole, streamed] = relist_both_ways(&[cm("l", "7"), cm("n", "8"), cm("k2", "9")]);
    assert_eq!(whole, streamed);
    assert_eq!(whole.len(), 5); // p, l, n, k2 listed or pending + k1 tombstone
    let [whole, streamed] = relist_both_ways(&[]);
    assert_eq!(whole, streamed);
}

#[test]
fn f13_streamed_first_relist_syncs_like_replace() {
    let f = fifo();
    f.list_start();
    f.listed(cm("a", "1")).unwrap();
    f.listed(cm("b", "1")).unwrap();
    assert!(!f.has_synced());
    // Popped while the listing is still open: counts toward the sync.
    f.try_pop().unwrap();
    f.list_done("1").unwrap();
    assert!(!f.has_synced());
    f.try_pop().unwrap();
    assert!(f.has_synced());
}

#[test]
fn f13_listed_without_list_start_is_an_error() {
    let f = fifo();
    assert!(matches!(
        f.listed(cm("a", "1")),
        Err(Error::NoListInProgress)
    ));
    assert!(matches!(f.list_done("1"), Err(Error::NoListInProgress)));
    assert!(f.is_empty());
    f.list_start();
    f.list_done("1").unwrap();
    assert!(matches!(f.list_done("2"), Err(Error::NoListInProgress)));
}

#[test]
fn f13_replace_supersedes_an_open_streamed_relist() {
    let f = fifo();
    f.list_start();
    f.listed(cm("a", "1")).unwrap();
    f.replace([cm("a", "2"), cm("b", "2")], "2").unwrap();
    assert!(matches!(f.list_done("1"), Err(Error::NoListInProgress)));
    assert_eq!(f.last_sync_resource_version().as_deref(), Some("2"));
    assert_eq!(f.list_keys(), [key("a"), key("b")]);
}

#[test]
fn f13_add_during_a_streamed_relist_is_not_tombstoned() {
    let f = fifo();
    f.list_start();
    f.listed(cm("a", "1")).unwrap();
    f.add(cm("live", "2")).unwrap();
    f.list_done("3").unwrap();
    assert_eq!(
        drain(&f),
        [
            ("default/a".into(), vec![s(Replaced, "1")]),
            ("default/live".into(), vec![s(Added, "2")]),
        ]
    );
}

#[test]
fn objects_are_shared_not_cloned() {
    let f = fifo();
    f.add(cm("a", "1")).unwrap();
    let seen = f.get_by_key(&key("a")).unwrap();
    let popped = f.try_pop().unwrap();
    assert!(Arc::ptr_eq(
        seen[0].object.object(),
        popped[0].object.object()
    ));
    assert_eq!(rv(popped[0].object.object()), "1");
}

/// A delta carrying a live object.
fn live(delta_type: DeltaType, object: ConfigMap) -> Delta<ConfigMap> {
    Delta {
        delta_type,
        object: DeltaObject::Object(Arc::new(object)),
    }
}
