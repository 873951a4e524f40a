//! [`InformerKey`]: what makes two requests share one informer.

use std::any::TypeId;

use crate::resource::WatchedResource;

/// What makes two informers the same informer (the [module docs'](super)
/// sharing key): the resource an informer watches, as every stage names it, and
/// the Rust type it caches, which the resource alone does not say (a
/// metadata-only informer watches the same resource as a full one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct InformerKey {
    type_id: TypeId,
    pub(super) resource: WatchedResource,
}

impl InformerKey {
    /// The key of an informer caching `K` and watching `resource`.
    pub(super) fn of<K: 'static>(resource: WatchedResource) -> Self {
        Self {
            type_id: TypeId::of::<K>(),
            resource,
        }
    }

    /// The resource URL with its selectors, for messages.
    pub(super) fn describe(&self) -> String {
        let mut text = self.resource.path();
        for (name, selector) in [
            ("labelSelector", &self.resource.label_selector),
            ("fieldSelector", &self.resource.field_selector),
        ] {
            if let Some(selector) = selector {
                text.push_str(&format!(" {name}={selector:?}"));
            }
        }
        text
    }
}
