//! TEMPORARY stand-ins for APIs being built on other branches; removed at
//! merge.
#![allow(dead_code, missing_docs, unreachable_pub)]

use kube::Resource;

pub trait Predicate<K> {
    fn passes(&self, old: &K, new: &K) -> bool;
}

impl<K, F: Fn(&K, &K) -> bool> Predicate<K> for F {
    fn passes(&self, old: &K, new: &K) -> bool {
        self(old, new)
    }
}

pub mod predicate {
    use kube::Resource;
    pub fn labels<K: Resource>() -> impl Fn(&K, &K) -> bool + Send + Sync + 'static {
        |old: &K, new: &K| old.meta().labels != new.meta().labels
    }
}

pub fn controller_owner_key_with<O: Resource, K: Resource>(
    child: &K,
    dt: &O::DynamicType,
) -> Option<crate::ObjectKey> {
    let group = |v: &str| {
        v.rsplit_once('/')
            .map(|(g, _)| g.to_owned())
            .unwrap_or_default()
    };
    let meta = child.meta();
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| {
            r.controller == Some(true)
                && r.kind == O::kind(dt)
                && group(&r.api_version) == O::group(dt)
        })
        .and_then(|r| crate::ObjectKey::new(meta.namespace.as_deref(), &r.name).ok())
}
