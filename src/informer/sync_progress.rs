//! [`SyncProgress`]: what the source said last, for sync waiters.
//!
//! The pump writes the progress only on the paths that are rare already:
//! an error from the source, and the start of a relist. Objects and watch
//! events pass it by, so waiting costs the informer nothing per event.

use tokio::sync::watch;

use super::error::Error;
use crate::{resource::WatchedResource, sync_error::SyncError};

/// What the source said last, for sync waiters: its latest error, and
/// whether a list was answered since.
#[derive(Debug)]
pub(crate) struct SyncProgress {
    latest: watch::Sender<Latest>,
}

#[derive(Debug, Default)]
pub(super) struct Latest {
    /// The last error the source reported.
    pub(super) error: Option<Error>,
    /// Whether a list was answered after that error: a refusal it carried
    /// no longer stands, and a waiter stops reporting it (I7).
    answered_since: bool,
}

impl Latest {
    /// The refusal waiters report now, if the latest answer was one (I7).
    pub(super) fn refusal(&self, resource: &WatchedResource) -> Option<SyncError> {
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

    /// What the source says from now on, for one waiter.
    pub(super) fn subscribe(&self) -> watch::Receiver<Latest> {
        self.latest.subscribe()
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
