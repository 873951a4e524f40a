//! What a subscriber receives: one [`Notification`] per change the informer
//! applied to its store (I1, I2).

use std::sync::Arc;

use kube::Resource;

/// A change to the informer's cache, as delivered to each subscriber.
///
/// Objects are `Arc<K>`: the same allocation the store holds, shared by every
/// subscriber (with the [compact cache](crate::store::compact) the store
/// keeps them encoded, and reads of it return equal objects). A handler cannot mutate the cache through it, which is why this
/// crate needs no cache mutation detector.
///
/// An object that only notifications hold (the one an update replaced, a
/// deleted one) is not freed by the subscriber that drops it last: the
/// informer keeps a reference, and once every subscriber has dropped theirs
/// frees it on its own task between two rounds of changes, the task that
/// decodes the watch, whose heap it came from. An informer with no change
/// to apply lets go of such references after a second.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::Notification;
///
/// let n = Notification::Added { object: Arc::new(ConfigMap::default()), in_initial_list: true };
/// match &n {
///     Notification::Added { in_initial_list, .. } => assert!(*in_initial_list),
///     Notification::Updated { .. } | Notification::Deleted { .. } => unreachable!(),
/// }
/// assert!(!n.is_resync());
/// ```
#[derive(Debug)]
pub enum Notification<K> {
    /// The key was not in the store and now is.
    Added {
        /// The new object.
        object: Arc<K>,
        /// Whether it was delivered as part of the initial list (popped before
        /// the FIFO synced, I4) or of a late subscriber's replay (L1).
        in_initial_list: bool,
    },
    /// The key was in the store and was replaced.
    Updated {
        /// The state the store held before.
        old: Arc<K>,
        /// The state the store holds now.
        new: Arc<K>,
        /// Whether `old` and `new` have the same resourceVersion: a periodic
        /// resync or a relist that found nothing new (I3).
        resync: bool,
    },
    /// The key was removed from the store.
    Deleted {
        /// The final state, or the last known state when
        /// `final_state_unknown` is true.
        object: Arc<K>,
        /// The deletion was inferred from a relist, not watched, so `object`
        /// may be older than the object's real final state (I2).
        final_state_unknown: bool,
    },
}

impl<K> Notification<K> {
    /// The newest object this notification carries: the added object, the new
    /// state of an update, or the deleted object.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Notification::Added { object, .. } | Notification::Deleted { object, .. } => object,
            Notification::Updated { new, .. } => new,
        }
    }

    /// Whether this is an update produced by a resync (I3).
    pub fn is_resync(&self) -> bool {
        matches!(self, Notification::Updated { resync: true, .. })
    }
}

/// Whether `new` is `old` unchanged: both carry the same resourceVersion
/// (I3). The one rule for "is this update a resync": the informer sets
/// [`Notification::Updated`]'s `resync` by it, and
/// [`changed_only`](crate::NotificationStreamExt::changed_only) drops the
/// updates it holds for. As client-go, which compares the `ResourceVersion`
/// strings of old and new for equality, and where a missing resourceVersion
/// is the empty string.
pub(crate) fn same_resource_version<K: Resource>(old: &K, new: &K) -> bool {
    old.meta().resource_version.as_deref().unwrap_or("")
        == new.meta().resource_version.as_deref().unwrap_or("")
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Added {
                object,
                in_initial_list,
            } => Notification::Added {
                object: Arc::clone(object),
                in_initial_list: *in_initial_list,
            },
            Notification::Updated { old, new, resync } => Notification::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
                resync: *resync,
            },
            Notification::Deleted {
                object,
                final_state_unknown,
            } => Notification::Deleted {
                object: Arc::clone(object),
                final_state_unknown: *final_state_unknown,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::same_resource_version;

    fn cm(resource_version: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.resource_version = resource_version.map(str::to_owned);
        cm
    }

    // I3
    #[test]
    fn i3_the_same_resource_version_is_equal_strings_and_missing_is_empty() {
        assert!(same_resource_version(&cm(Some("7")), &cm(Some("7"))));
        assert!(!same_resource_version(&cm(Some("7")), &cm(Some("8"))));
        // Go has no "missing": an unset ResourceVersion is "".
        assert!(same_resource_version(&cm(None), &cm(None)));
        assert!(same_resource_version(&cm(None), &cm(Some(""))));
        assert!(!same_resource_version(&cm(None), &cm(Some("1"))));
    }
}
