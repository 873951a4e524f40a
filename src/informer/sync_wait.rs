//! Waiting for the first sync (I6–I9): [`SyncProgress`],
//! what the source said last, and [`wait_for_sync`], the wait that reads it
//! together with the store's synced flag and the informer's end.
//!
//! The pump writes the progress only on the paths that are rare already:
//! an error from the source, and the start of a relist. Objects and watch
//! events pass it by, so waiting costs the informer nothing per event.

use std::{future, sync::Arc, time::Duration};

use kube::Resource;
use tokio::{sync::watch, time::Instant};

use super::{core::Core, error::Error};
use crate::{resource::WatchedResource, sync_error::SyncError};

/// What the source said last, for sync waiters: its latest error, and
/// whether a list was answered since.
#[derive(Debug)]
pub(crate) struct SyncProgress {
    latest: watch::Sender<Latest>,
}

#[derive(Debug, Default)]
struct Latest {
    /// The last error the source reported.
    error: Option<Error>,
    /// Whether a list was answered after that error: a refusal it carried
    /// no longer stands, and a waiter stops reporting it (I7).
    answered_since: bool,
}

impl Latest {
    /// The refusal waiters report now, if the latest answer was one (I7).
    fn refusal(&self, resource: &WatchedResource) -> Option<SyncError> {
        if self.answered_since {
            return None;
        }
        let (status, message) = self.error.as_ref()?.api_answer()?;
        SyncError::from_answer(resource, status, message)
    }
}

impl SyncProgress {
    pub(crate) fn new() -> Self {
        Self {
            latest: watch::Sender::new(Latest::default()),
        }
    }

    /// The source reported `error` (the error path only). Waiters look at
    /// it at once: it may be a refusal.
    pub(crate) fn failed(&self, error: &Error) {
        self.latest.send_modify(|latest| {
            latest.error = Some(error.clone());
            latest.answered_since = false;
        });
    }

    /// The last error the source reported, if it reported one.
    pub(crate) fn last_error(&self) -> Option<Error> {
        self.latest.borrow().error.clone()
    }

    /// A relist began: the API server answered a list. Once per relist,
    /// never per object. Waiters are not woken: a refusal that no longer
    /// stands gives them nothing to return.
    pub(crate) fn list_answered(&self) {
        self.latest.send_if_modified(|latest| {
            latest.answered_since = true;
            false
        });
    }
}

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
    let mut latest = core.sync_progress.latest.subscribe();
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
