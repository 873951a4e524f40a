//! F7 with a streamed relist open: live events and pops during the first
//! listing neither sync the FIFO early nor undercount.

use crate::fifo_common;

use fifo_common::cm;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::fifo::{DeltaFifo, FifoOptions};

// F7
#[test]
fn f7_a_live_event_during_the_first_streamed_relist_does_not_sync_early() {
    let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    fifo.list_start();
    fifo.listed(cm("a", "1")).unwrap();
    fifo.add(cm("b", "2")).unwrap();
    fifo.try_pop().unwrap();
    fifo.try_pop().unwrap();
    assert!(!fifo.has_synced(), "synced before ListDone");
    fifo.listed(cm("c", "1")).unwrap();
    fifo.list_done("3").unwrap();
    assert!(!fifo.has_synced(), "c was not popped yet");
    fifo.try_pop().unwrap();
    assert!(fifo.has_synced());
}

// F7
#[test]
fn f7_a_listed_key_popped_twice_does_not_undercount() {
    let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    fifo.list_start();
    fifo.listed(cm("a", "1")).unwrap();
    fifo.try_pop().unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.try_pop().unwrap();
    fifo.listed(cm("b", "1")).unwrap();
    fifo.listed(cm("c", "1")).unwrap();
    fifo.list_done("3").unwrap();
    fifo.try_pop().unwrap();
    assert!(!fifo.has_synced(), "c is still queued");
    fifo.try_pop().unwrap();
    assert!(fifo.has_synced());
}

// L9 (FIFO side)
#[test]
fn l9_a_panicking_key_function_is_an_error_and_the_queue_stays_whole() {
    let key_fn = |cm: &ConfigMap| {
        assert!(
            cm.metadata.name.as_deref() != Some("boom"),
            "no key for boom"
        );
        kube_informer::ObjectKey::from_object(cm)
    };
    let fifo = DeltaFifo::new(FifoOptions::default().key_fn(key_fn));
    fifo.add(cm("a", "1")).unwrap();
    let error = fifo.add(cm("boom", "1")).unwrap_err();
    assert!(matches!(
        error,
        kube_informer::store::Error::Panicked { .. }
    ));
    assert_eq!(fifo.len(), 1);
    assert_eq!(fifo.try_pop().unwrap().key().as_str(), "default/a");
}

// F7
#[test]
fn f7_a_requeue_during_the_first_streamed_relist_does_not_sync_early() {
    let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    fifo.list_start();
    fifo.listed(cm("a", "1")).unwrap();
    let deltas = fifo.try_pop().unwrap();
    fifo.requeue(deltas).unwrap();
    assert!(!fifo.has_synced(), "synced before ListDone");
    fifo.listed(cm("b", "1")).unwrap();
    fifo.list_done("2").unwrap();
    fifo.try_pop().unwrap();
    assert!(!fifo.has_synced(), "b is still queued");
    fifo.try_pop().unwrap();
    assert!(fifo.has_synced());
}
