//! Which notifications belong to the initial list: a subscriber's queue
//! counts them so its sync status knows when the list has been handed out.

use crate::notification::Notification;

/// Whether `n` is an `Added` of the informer's initial list.
pub(crate) fn is_initial_added<K>(n: &Notification<K>) -> bool {
    matches!(
        n,
        Notification::Added {
            in_initial_list: true,
            ..
        }
    )
}
