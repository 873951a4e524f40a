//! The helper's side of Z11: which object a finished cleanup is recorded
//! for, in the log of the [`RecordedApi`](crate::own_writes::RecordedApi)
//! it was given.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{key::ObjectKey, own_writes::WriteLog};

/// The finished cleanups of one object under one finalizer, as far as the
/// helper can know them: nothing without a log, or for an object without
/// a uid (one built by hand cannot be told from its successor).
pub(super) struct Cleanups<'a> {
    record: Option<(&'a WriteLog, ObjectKey, String)>,
    finalizer: &'a str,
}

impl<'a> Cleanups<'a> {
    pub(super) fn of(log: Option<&'a WriteLog>, meta: &ObjectMeta, finalizer: &'a str) -> Self {
        let uid = meta.uid.as_deref().filter(|uid| !uid.is_empty());
        let key = meta
            .name
            .as_deref()
            .and_then(|name| ObjectKey::new(meta.namespace.as_deref(), name).ok());
        let record = match (log, key, uid) {
            (Some(log), Some(key), Some(uid)) => Some((log, key, uid.to_owned())),
            _ => None,
        };
        Self { record, finalizer }
    }

    /// Whether this object's cleanup finished already.
    pub(super) fn finished_before(&self) -> bool {
        self.record
            .as_ref()
            .is_some_and(|(log, key, uid)| log.cleanups().has_finished(key, uid, self.finalizer))
    }

    /// This object's cleanup finished; its finalizer is still on.
    pub(super) fn finished(&self) {
        if let Some((log, key, uid)) = &self.record {
            log.cleanups().finished(key, uid, self.finalizer);
        }
    }

    /// The finalizer is off, or the object is gone: nothing to remember.
    pub(super) fn settled(&self) {
        if let Some((log, key, _)) = &self.record {
            log.cleanups().forget(key, Some(self.finalizer));
        }
    }

    /// The object is not being deleted: no cleanup of it can have finished.
    pub(super) fn live(&self) {
        if let Some((log, key, _)) = &self.record {
            log.cleanups().forget(key, None);
        }
    }
}
