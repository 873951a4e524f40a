//! Callbacks for code written in client-go's AddFunc / UpdateFunc /
//! DeleteFunc style, driven by [`Subscription::handle`](super::Subscription::handle).

use std::{fmt, sync::Arc};

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

type AddFn<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;
type UpdateFn<K> = Box<dyn FnMut(&Arc<K>, &Arc<K>) + Send>;
type DeleteFn<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;

/// A [`ResourceEventHandler`] made of closures, each optional (client-go's
/// `ResourceEventHandlerFuncs`).
///
/// Its builder methods are named like the trait methods they fill in, so
/// calling a handler method on it directly needs the trait path
/// (`ResourceEventHandler::on_add(&mut h, ..)`); usually
/// [`Subscription::handle`](super::Subscription::handle) does the calling.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::dispatch::{EventHandlerFuncs, ResourceEventHandler};
///
/// let mut handler = EventHandlerFuncs::default()
///     .on_add(|cm: &Arc<ConfigMap>, initial| println!("added {:?} (initial: {initial})", cm.metadata.name))
///     .on_delete(|cm: &Arc<ConfigMap>, _| println!("deleted {:?}", cm.metadata.name));
/// // The builder methods share the trait's names; call the trait explicitly.
/// ResourceEventHandler::on_add(&mut handler, &Arc::new(ConfigMap::default()), false);
/// ```
pub struct EventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> EventHandlerFuncs<K> {
    /// Called with the object and `in_initial_list` for every add.
    #[must_use]
    pub fn on_add(mut self, f: impl FnMut(&Arc<K>, bool) + Send + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called with the old and new object for every update.
    #[must_use]
    pub fn on_update(mut self, f: impl FnMut(&Arc<K>, &Arc<K>) + Send + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called with the object and `final_state_unknown` for every delete.
    #[must_use]
    pub fn on_delete(mut self, f: impl FnMut(&Arc<K>, bool) + Send + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

/// A handler that does nothing until given closures.
impl<K> Default for EventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> ResourceEventHandler<K> for EventHandlerFuncs<K> {
    fn on_add(&mut self, obj: &Arc<K>, in_initial_list: bool) {
        if let Some(f) = &mut self.add {
            f(obj, in_initial_list);
        }
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &mut self.update {
            f(old, new);
        }
    }

    fn on_delete(&mut self, obj: &Arc<K>, final_state_unknown: bool) {
        if let Some(f) = &mut self.delete {
            f(obj, final_state_unknown);
        }
    }
}

impl<K> fmt::Debug for EventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventHandlerFuncs")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}
