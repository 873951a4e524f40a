//! Waiting for the first sync (I6–I9): [`wait_for_sync`]
//! reads the source's [`SyncProgress`](super::sync_progress::SyncProgress)
//! together with the store's synced flag and the informer's end.

use std::{future, future::Future, pin::Pin, sync::Arc, time::Duration};

use kube::Resource;
use tokio::time::Instant;

use super::core::{Core, Share};
use crate::{
    dispatch::UpstreamSync, resource::WatchedResource, store::Owner, sync_error::SyncError,
};

/// Waits until `core`'s informer synced (I6), until the source's latest
/// answer is a refusal (I7), until `deadline` (I8, `None` for never: the informer's own wait), or
/// until the informer ends (I9), whichever comes first. `timeout` is what
/// a [`SyncError::TimedOut`] reports; a `deadline` of `None` (a timeout
/// the clock cannot hold, `Duration::MAX`) never passes, where adding it
/// to the clock would panic.
///
/// Cancel-safe: everything it waits on is a watch or a future it owns.
pub(crate) async fn wait_for_sync<K>(
    core: &Core<K>,
    deadline: Option<Instant>,
    timeout: Duration,
) -> Result<(), SyncError>
where
    K: Resource + Send + Sync + 'static,
{
    let resource = &core.resource;
    let mut synced = core.store.watch_synced();
    let mut latest = core.sync_progress.subscribe();
    let ended = core.life.ended();
    let expired = async move {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => future::pending().await,
        }
    };
    tokio::pin!(ended, expired);
    loop {
        if *synced.borrow_and_update() {
            return Ok(());
        }
        if let Some(refusal) = latest.borrow_and_update().refusal(resource) {
            return Err(refusal);
        }
        // Both senders live in `core`, which the caller holds: `changed`
        // cannot fail while this waits, and would only disable its branch.
        tokio::select! {
            biased;
            Ok(()) = synced.changed() => {}
            _ = &mut ended => {
                return if core.store.has_synced() {
                    Ok(())
                } else {
                    Err(SyncError::Stopped { resource: resource.clone() })
                };
            }
            Ok(()) = latest.changed() => {}
            () = &mut expired => {
                return if core.store.has_synced() {
                    Ok(())
                } else {
                    Err(SyncError::TimedOut {
                        resource: resource.clone(),
                        waited: timeout,
                        last_error: latest
                            .borrow()
                            .error
                            .clone()
                            .map(|error| Arc::new(error) as _),
                    })
                };
            }
        }
    }
}

// A store and a subscription wait through their informer's wait: the same
// answers, whichever handle a caller holds.
impl<K: Resource + Send + Sync + 'static> Owner for Share<K> {
    fn ended(&self) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let ended = self.core.life.ended();
        Box::pin(async move {
            ended.await;
        })
    }

    fn wait_until_synced(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<(), SyncError>> + Send + 'static>> {
        let core = Arc::clone(&self.core);
        Box::pin(async move { wait_for_sync(&core, None, Duration::MAX).await })
    }
}

impl<K: Resource + Send + Sync + 'static> UpstreamSync for Core<K> {
    fn wait_until_synced(
        self: Arc<Self>,
    ) -> Pin<Box<dyn Future<Output = Result<(), SyncError>> + Send + 'static>> {
        Box::pin(async move { wait_for_sync(&self, None, Duration::MAX).await })
    }

    fn resource(&self) -> WatchedResource {
        self.resource.clone()
    }
}
