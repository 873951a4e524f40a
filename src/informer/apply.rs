//! Turning one key's popped [`Deltas`] into store writes and
//! [`Notification`]s (I1–I5).
//!
//! This is the only place the informer writes to its [`Store`]; it runs on the
//! single writer inside [`Informer::run`](super::Informer::run), so the "old"
//! object it reads before a write is exactly the one the write replaces.

use std::sync::Arc;

use kube::Resource;

use super::{error::Error, report::ErrorReporter};
use crate::{
    delta::{DeltaType, Deltas},
    key::ObjectKey,
    notification::{Notification, same_resource_version},
    store::{Error as StoreError, OldVersion, Replaced, Writer},
};

/// Applies `deltas` to `store`, oldest first (I5), appends the
/// notifications that describe the changes to `out`, in the same order, and
/// returns the key. `out` is the writer's reused buffer, so a batch costs no
/// allocation of its own.
///
/// - `Sync`, `Replaced`, `Added`, `Updated`: the key is upserted; if the store
///   held it the result is `Updated { old, new, resync }` where `resync` says
///   whether both have the same resourceVersion (I1, I3), otherwise
///   `Added { in_initial_list }` (I1, I4).
/// - `Deleted`: the key is removed and `Deleted` carries exactly the queued
///   object; a tombstone is reported as `final_state_unknown` (I2). The
///   notification is sent even when the store did not hold the key, because
///   the delete was news to the FIFO.
/// - A write the store refuses (an index function panicked) leaves the store
///   as it was and sends no notification for that delta; the error goes to
///   `reporter` and the informer goes on, so a later version that indexes
///   fine is an `Updated` from the last stored one.
/// - With `old_version` [`OldVersion::IfDecoded`] (no subscriber would read
///   the notification), an update whose replaced version a compact store
///   kept encoded gives no notification: the version is not decoded (CM8).
pub(crate) fn apply_deltas<K>(
    store: &Writer<K>,
    deltas: Deltas<K>,
    in_initial_list: bool,
    old_version: OldVersion,
    out: &mut Vec<Notification<K>>,
    reporter: &ErrorReporter,
) -> ObjectKey
where
    K: Resource + Send + Sync + 'static,
{
    // Iterating the deltas in place keeps a single inline delta off the heap.
    let key = deltas.key().clone();
    for delta in deltas {
        let notification = match delta.delta_type {
            DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                let new = delta.object.into_object();
                match store.upsert(key.clone(), Arc::clone(&new), old_version) {
                    Ok(Replaced::Old(old)) => {
                        let resync = same_resource_version(&*old, &*new);
                        Notification::Updated { old, new, resync }
                    }
                    Ok(Replaced::Nothing) => Notification::Added {
                        object: new,
                        in_initial_list,
                    },
                    // A compact store held a version it could not decode
                    // (CM6): the new one is stored, the old one is unknown,
                    // so subscribers are told of the object as if new.
                    Ok(Replaced::Unreadable) => {
                        reporter.report(Error::Store(Arc::new(StoreError::Undecodable {
                            key: key.to_string(),
                        })));
                        Notification::Added {
                            object: new,
                            in_initial_list,
                        }
                    }
                    Ok(Replaced::NotDecoded) => continue,
                    Err(error) => {
                        reporter.report(Error::Store(Arc::new(error)));
                        continue;
                    }
                }
            }
            DeltaType::Deleted => {
                let final_state_unknown = delta.object.is_tombstone();
                // Removal files the key out under the index values kept for
                // it, so it runs no user code and cannot panic.
                store.delete(&key);
                Notification::Deleted {
                    object: delta.object.into_object(),
                    final_state_unknown,
                }
            }
        };
        out.push(notification);
    }
    key
}
