//! F11 and the FIFO's rule for user code: the key function and the
//! transform run with the FIFO's lock released, so they may call back into
//! the same FIFO (a lock held around them would deadlock here, since the
//! FIFO's lock is not reentrant). Each case runs on its own thread and fails
//! after a deadline instead of hanging.

use std::{
    sync::{Arc, OnceLock, mpsc},
    time::Duration,
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    ObjectKey,
    fifo::{DeltaFifo, FifoOptions, KnownObjects},
};

fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.resource_version = Some(rv.into());
    c
}

/// Known objects that hold one ConfigMap, "known".
struct OneKnown;

impl KnownObjects<ConfigMap> for OneKnown {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        (key.to_string() == "known").then(|| Arc::new(cm("known", "1")))
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        vec!["known".parse().unwrap()]
    }
}

/// A FIFO whose key function and transform both read the FIFO's length.
fn reentrant_fifo() -> DeltaFifo<ConfigMap> {
    let cell: Arc<OnceLock<DeltaFifo<ConfigMap>>> = Arc::new(OnceLock::new());
    let for_key = Arc::clone(&cell);
    let for_transform = Arc::clone(&cell);
    let options = FifoOptions::default()
        .known_objects(Arc::new(OneKnown))
        .key_fn(move |object: &ConfigMap| {
            if let Some(fifo) = for_key.get() {
                let _ = fifo.len();
            }
            ObjectKey::from_object(object)
        })
        .transform(move |object| {
            if let Some(fifo) = for_transform.get() {
                let _ = fifo.len();
            }
            Ok(object)
        });
    let fifo = DeltaFifo::new(options);
    assert!(cell.set(fifo.clone()).is_ok());
    fifo
}

fn within_deadline(what: &str, call: impl FnOnce(&DeltaFifo<ConfigMap>) + Send + 'static) {
    let fifo = reentrant_fifo();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        call(&fifo);
        let _ = done.send(fifo.len());
    });
    assert!(
        finished.recv_timeout(Duration::from_secs(60)).is_ok(),
        "{what} ran user code under the FIFO's lock"
    );
}

#[test]
fn f3_add_and_update_run_user_code_without_the_lock() {
    within_deadline("add/update", |fifo| {
        fifo.add(cm("a", "1")).unwrap();
        fifo.update(cm("a", "2")).unwrap();
    });
}

#[test]
fn f4_delete_runs_user_code_without_the_lock() {
    within_deadline("delete", |fifo| {
        // Queued key, known key, and an unknown one (dropped, F4).
        fifo.add(cm("a", "1")).unwrap();
        fifo.delete(cm("a", "2")).unwrap();
        fifo.delete(cm("known", "2")).unwrap();
        fifo.delete(cm("unknown", "2")).unwrap();
        assert_eq!(fifo.len(), 2);
    });
}

#[test]
fn f6_replace_runs_user_code_without_the_lock() {
    within_deadline("replace", |fifo| {
        fifo.replace([cm("a", "1"), cm("b", "1")], "1").unwrap();
        // a, b listed; "known" vanished and gets a tombstone.
        assert_eq!(fifo.len(), 3);
    });
}

#[test]
fn f13_a_streamed_relist_runs_user_code_without_the_lock() {
    within_deadline("listed", |fifo| {
        fifo.list_start();
        fifo.listed(cm("a", "1")).unwrap();
        fifo.list_done("1").unwrap();
        assert_eq!(fifo.len(), 2);
    });
}

#[test]
fn f8_resync_runs_user_code_without_the_lock() {
    within_deadline("resync", |fifo| {
        fifo.resync().unwrap();
        assert_eq!(fifo.len(), 1);
    });
}
