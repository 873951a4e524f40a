//! Turning one key's popped [`Deltas`] into store writes and
//! [`Notification`]s (I1–I5).
//!
//! This is the only place the informer writes to its [`Store`]; it runs on the
//! single writer inside [`Informer::run`](super::Informer::run), so the "old"
//! object it reads before a write is exactly the one the write replaces.

use std::sync::Arc;

use kube::Resource;

use super::{
    error::{Callback, Error},
    report::ErrorReporter,
};
use crate::{
    delta::{DeltaType, Deltas},
    fifo,
    key::ObjectKey,
    notification::Notification,
    store::Store,
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
///
/// L9: the store runs the user's index functions. If one panics, that delta
/// is skipped: the panic is reported as [`Error::Panicked`] with
/// [`Callback::Indexer`], no notification is sent for it, and the store
/// keeps what it held for the key (the store leaves itself whole on such a
/// panic); the following deltas still apply.
pub(crate) fn apply_deltas<K>(
    store: &Store<K>,
    deltas: Deltas<K>,
    in_initial_list: bool,
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
                let upserted = fifo::catch(|| store.apply_upsert(key.clone(), Arc::clone(&new)));
                let replaced = match upserted {
                    Ok(replaced) => replaced,
                    Err(message) => {
                        report_indexer_panic(reporter, &key, message);
                        continue;
                    }
                };
                match replaced {
                    Some(old) => {
                        let resync = same_resource_version(&*old, &*new);
                        Notification::Updated { old, new, resync }
                    }
                    None => Notification::Added {
                        object: new,
                        in_initial_list,
                    },
                }
            }
            DeltaType::Deleted => {
                let final_state_unknown = delta.object.is_tombstone();
                if let Err(message) = fifo::catch(|| store.apply_delete(&key)) {
                    report_indexer_panic(reporter, &key, message);
                    continue;
                }
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

fn report_indexer_panic(reporter: &ErrorReporter, key: &ObjectKey, message: String) {
    reporter.report(Error::Panicked {
        callback: Callback::Indexer,
        message: format!("{message} (object {key} skipped)"),
    });
}

/// I3: an update whose old and new objects carry the same resourceVersion is a
/// resync, whatever delta produced it. A missing resourceVersion reads as the
/// empty string, as it does in Go.
fn same_resource_version<K: Resource>(old: &K, new: &K) -> bool {
    old.meta().resource_version.as_deref().unwrap_or("")
        == new.meta().resource_version.as_deref().unwrap_or("")
}
