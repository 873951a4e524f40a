//! Running the factory's informers: starting them, waiting for their first
//! sync, letting one go and shutting them all down.

use futures::future::{join_all, try_join_all};
use kube::Resource;

use super::{InformerFactory, hold::Hold, key::InformerKey};
use crate::informer::{Informer, SyncError};

impl InformerFactory {
    /// Spawns the `run` of every informer not started yet on the current
    /// tokio runtime. Call it again after asking for more informers.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn start(&self) {
        let mut registry = self.state.inner.lock();
        if registry.shut_down {
            return;
        }
        for entry in &mut registry.entries {
            if entry.task.is_some() {
                continue;
            }
            if let Some(run) = entry.informer.run() {
                tracing::debug!(resource = %entry.key.resource.path(), "factory: starting informer");
                entry.task = Some(tokio::spawn(run));
            }
        }
    }

    /// Waits until every informer the factory holds has synced (at once
    /// with none asked for), failing fast: the first [`SyncError`] any of
    /// them meets is the answer, without waiting for the others (I10). An
    /// informer fails its wait when it stops before its first sync (I12;
    /// also one that never ran, L7) or when its resource is refused (401,
    /// 403) or not served (404) as its latest answer (I7); other source
    /// errors are retried and waited through. Released informers (FA2) are
    /// left out, and informers not [started](Self::start) do not sync.
    ///
    /// It has no deadline of its own: wrap it in `tokio::time::timeout` for
    /// one, which then holds for all the informers at once. Their informers
    /// keep running and retrying after an error.
    ///
    /// Cancel-safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use kube::Api;
    /// use kube_informer::{InformerFactory, informer::SyncError};
    /// use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let configmaps = factory.build(Api::<ConfigMap>::all(server.client()), |b| b)?;
    /// factory.start();
    /// factory.wait_until_synced().await?;
    ///
    /// // No RBAC rule for Secrets: the first list is refused.
    /// server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), usize::MAX);
    /// let secrets = factory.build(Api::<Secret>::all(server.client()), |b| b)?;
    /// factory.start();
    /// // A deadline for all of them is the caller's.
    /// match tokio::time::timeout(Duration::from_secs(30), factory.wait_until_synced()).await {
    ///     Ok(Err(SyncError::Refused { resource, status: 403, .. })) => {
    ///         assert_eq!(resource.resource, "secrets");
    ///     }
    ///     other => panic!("expected a refusal, got {other:?}"),
    /// }
    /// # drop((configmaps, secrets));
    /// factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until_synced(&self) -> Result<(), SyncError> {
        let waits: Vec<_> = {
            let registry = self.state.inner.lock();
            registry
                .held()
                .filter_map(|entry| entry.informer.wait_until_synced())
                .collect()
        };
        try_join_all(waits).await.map(drop)
    }

    /// Stops every informer and waits for their `run` to return. Informers
    /// asked for afterwards come stopped.
    pub async fn shutdown(&self) {
        let tasks: Vec<_> = {
            let mut registry = self.state.inner.lock();
            registry.shut_down = true;
            registry
                .entries
                .iter_mut()
                .filter_map(|entry| {
                    // FA4: released ones that still run stop too.
                    entry.informer.stop();
                    entry.task.take()
                })
                .collect()
        };
        for task in join_all(tasks).await {
            if let Ok(Err(error)) = task {
                tracing::warn!(%error, "factory: informer ended with an error");
            }
        }
    }

    /// Lets go of `informer` (FA2): the factory drops its own handle on it
    /// and the caller's, so it stops as soon as nothing else holds it (no
    /// other [`Informer`] clone, [`Store`](crate::Store), subscription or
    /// error stream, L8); at once if nothing does. Returns whether it
    /// stopped: `false` while something else still holds it.
    ///
    /// Until it stops, a request for its key gets it back (and the factory
    /// holds it again) and [`shutdown`](Self::shutdown) still stops it;
    /// [`len`](Self::len) and the sync waits leave it out. Once it stopped,
    /// the next request for its key gets a new informer (FA1). An informer
    /// the factory does not hold (another factory's, or one released
    /// already) is only dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::InformerFactory;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let factory = InformerFactory::new(server.client());
    /// let configmaps = factory.build(Api::<ConfigMap>::all(server.client()), |b| b)?;
    /// factory.start();
    /// factory.wait_until_synced().await?;
    /// let store = configmaps.store();
    /// assert!(!factory.release(configmaps), "the store still holds it");
    /// assert_eq!(factory.len(), 0);
    /// drop(store); // the informer stops now
    /// # factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn release<K>(&self, informer: Informer<K>) -> bool
    where
        K: Resource + Send + Sync + 'static,
    {
        let weak = informer.downgrade();
        let key = InformerKey::of::<K>(informer.watched_resource().clone());
        let let_go = {
            let mut registry = self.state.inner.lock();
            // Forget released informers that stopped since, so the
            // factory's memory stays with the informers that may run.
            registry.prune();
            registry.get_mut::<K>(&key).and_then(|(hold, _)| {
                let Hold::Held(held) = hold else {
                    return None;
                };
                held.same_as(&informer).then(|| {
                    tracing::debug!(resource = %key.describe(), "factory: releasing informer");
                    std::mem::replace(hold, Hold::Released(informer.downgrade()))
                })
            })
        };
        // Outside the lock: the last handle's drop stops the informer.
        drop(let_go);
        drop(informer);
        !weak.is_alive()
    }
}
