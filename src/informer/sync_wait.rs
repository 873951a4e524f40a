//! Waiting for the first sync with a deadline (I6–I9): [`wait_for_sync`]
//! reads the source's [`SyncProgress`](super::sync_progress::SyncProgress)
//! together with the store's synced flag and the informer's end.

use std::{future, time::Duration};

use kube::Resource;
use tokio::time::Instant;

use super::{core::Core, sync_error::SyncError};

/// Waits until `core`'s informer synced (I6), until the source's latest
/// answer is a refusal (I7), until `deadline` (I8, `None` for never), or
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
                        last_error: latest.borrow().error.clone(),
                    })
                };
            }
        }
    }
}
