//! Callbacks for code written in client-go's ResourceEventHandler style
//! (OnAdd / OnUpdate / OnDelete), driven by
//! [`Subscription::handle`](super::Subscription::handle).

use std::sync::Arc;

/// Receives one subscriber's notifications as method calls.
///
/// Every method has a no-op default, so implement only what you need.
/// Objects arrive as `Arc<K>`, the very allocation the store holds: a handler
/// cannot mutate the cache through them, which is why this crate has no
/// cache mutation detector. client-go's usual UpdateFunc guard "skip if the
/// resourceVersion did not change" is
/// [`changed_only`](crate::ext::NotificationStreamExt::changed_only) on the
/// stream.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::dispatch::ResourceEventHandler;
///
/// #[derive(Default)]
/// struct Counter { live: usize }
///
/// impl ResourceEventHandler<ConfigMap> for Counter {
///     fn on_add(&mut self, _obj: &Arc<ConfigMap>, _in_initial_list: bool) { self.live += 1 }
///     fn on_delete(&mut self, _obj: &Arc<ConfigMap>, _final_state_unknown: bool) { self.live -= 1 }
/// }
///
/// let mut counter = Counter::default();
/// counter.on_add(&Arc::new(ConfigMap::default()), true);
/// counter.on_update(&Arc::new(ConfigMap::default()), &Arc::new(ConfigMap::default()));
/// assert_eq!(counter.live, 1);
/// ```
pub trait ResourceEventHandler<K>: Send {
    /// An object entered the cache; `in_initial_list` when it came with the
    /// initial list or a late subscriber's replay.
    fn on_add(&mut self, obj: &Arc<K>, in_initial_list: bool) {
        let _ = (obj, in_initial_list);
    }

    /// An object in the cache was replaced (possibly by a resync, with the
    /// same resourceVersion).
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object left the cache; `final_state_unknown` when the deletion was
    /// inferred from a relist and `obj` is the last state known.
    fn on_delete(&mut self, obj: &Arc<K>, final_state_unknown: bool) {
        let _ = (obj, final_state_unknown);
    }
}
