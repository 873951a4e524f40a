//! The read-your-own-writes gate (RW7, RW8): before a key's reconcile,
//! wait until the controller's caches show the writes its previous
//! reconcile recorded, up to a deadline.

use std::{sync::Arc, time::Duration};

use futures::future::{self, BoxFuture, FutureExt};
use kube::Resource;
use tokio::time::Instant;

use crate::{
    WatchedResource,
    key::ObjectKey,
    metrics::ControllerRecorder,
    own_writes::{RecordedWrite, WriteLog},
    resource_version::Written,
    store::Store,
};

/// One cache the controller reads, named by the resource it holds.
#[derive(Clone)]
pub(super) struct Cache {
    group: String,
    resource: String,
    store: Arc<dyn CatchUp>,
}

impl Cache {
    /// The cache of `watched` held in `store`.
    pub(super) fn new<K>(watched: &WatchedResource, store: Store<K>) -> Self
    where
        K: Resource + Send + Sync + 'static,
    {
        Self {
            group: watched.group.clone(),
            resource: watched.resource.clone(),
            store: Arc::new(store),
        }
    }

    fn holds(&self, write: &RecordedWrite) -> bool {
        self.resource == write.resource && self.group == write.group
    }
}

/// A store of any type, as the gate asks it.
trait CatchUp: Send + Sync {
    fn caught_up(&self, key: &ObjectKey, written: &Written) -> bool;
    fn wait_for(&self, key: ObjectKey, written: Written) -> BoxFuture<'static, ()>;
}

impl<K: Resource + Send + Sync + 'static> CatchUp for Store<K> {
    fn caught_up(&self, key: &ObjectKey, written: &Written) -> bool {
        Store::caught_up(self, key, written)
    }

    fn wait_for(&self, key: ObjectKey, written: Written) -> BoxFuture<'static, ()> {
        let store = self.clone();
        // An informer that stops ends the wait (RW4): nothing
        // more will arrive, and the reconcile goes on with what is cached.
        async move {
            store.wait_for(&key, &written).await;
        }
        .boxed()
    }
}

/// What the gate of one controller holds.
pub(super) struct OwnWritesGate {
    pub(super) log: WriteLog,
    pub(super) deadline: Duration,
    pub(super) caches: Vec<Cache>,
    pub(super) recorder: Arc<ControllerRecorder>,
}

impl OwnWritesGate {
    /// Waits until every cache of a written object's resource has caught up
    /// with the writes recorded under `parent`, or the deadline passed
    /// (RW7, RW8). Takes the records: a reconcile that follows records
    /// anew.
    pub(super) async fn settle(&self, parent: &ObjectKey) {
        let writes = self.log.take(parent);
        let waits: Vec<_> = writes
            .iter()
            .flat_map(|write| {
                self.caches
                    .iter()
                    .filter(move |cache| cache.holds(write))
                    .filter(move |cache| !cache.store.caught_up(&write.key, &write.written))
                    .map(move |cache| {
                        cache
                            .store
                            .wait_for(write.key.clone(), write.written.clone())
                    })
            })
            .collect();
        if waits.is_empty() {
            return;
        }
        self.recorder.own_writes_held();
        let started = Instant::now();
        match tokio::time::timeout(self.deadline, future::join_all(waits)).await {
            Ok(_) => self.recorder.own_writes_caught_up(started.elapsed()),
            Err(_) => {
                self.recorder.own_writes_expired(started.elapsed());
                tracing::warn!(
                    object.ref = %parent,
                    deadline = ?self.deadline,
                    "the caches did not show this key's last writes in time; reconciling anyway"
                );
            }
        }
    }
}
