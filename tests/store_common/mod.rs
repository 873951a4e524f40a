//! Helpers shared by the store and dispatch tests.
#![allow(dead_code)]

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Notification, ObjectKey, Subscription};

/// A ConfigMap `ns/name` at resourceVersion `rv`.
pub fn cm(ns: &str, name: &str, rv: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(ns.into());
    cm.metadata.name = Some(name.into());
    cm.metadata.resource_version = Some(rv.into());
    Arc::new(cm)
}

/// A ConfigMap with one label.
pub fn labelled(ns: &str, name: &str, label: &str) -> Arc<ConfigMap> {
    let mut cm = (*cm(ns, name, "1")).clone();
    cm.metadata.labels = Some([("app".to_string(), label.to_string())].into());
    Arc::new(cm)
}

pub fn key(s: &str) -> ObjectKey {
    s.parse().unwrap()
}

pub fn key_of(obj: &ConfigMap) -> ObjectKey {
    ObjectKey::from_object(obj).unwrap()
}

pub fn added(obj: Arc<ConfigMap>, initial: bool) -> Notification<ConfigMap> {
    Notification::Added {
        object: obj,
        in_initial_list: initial,
    }
}

pub fn updated(old: Arc<ConfigMap>, new: Arc<ConfigMap>) -> Notification<ConfigMap> {
    let resync = old.metadata.resource_version == new.metadata.resource_version;
    Notification::Updated { old, new, resync }
}

pub fn deleted(obj: Arc<ConfigMap>) -> Notification<ConfigMap> {
    Notification::Deleted {
        object: obj,
        final_state_unknown: false,
    }
}

/// A compact, comparable rendering: `A ns/name@rv`, `U old->new`, `D ...`,
/// with `*` for in_initial_list / resync / final_state_unknown.
pub fn show(n: &Notification<ConfigMap>) -> String {
    let id = |o: &ConfigMap| {
        format!(
            "{}@{}",
            key_of(o),
            o.metadata.resource_version.as_deref().unwrap_or("")
        )
    };
    match n {
        Notification::Added {
            object,
            in_initial_list,
        } => format!(
            "A {}{}",
            id(object),
            if *in_initial_list { "*" } else { "" }
        ),
        Notification::Updated { old, new, resync } => format!(
            "U {}->{}{}",
            id(old),
            new.metadata.resource_version.as_deref().unwrap_or(""),
            if *resync { "*" } else { "" }
        ),
        Notification::Deleted {
            object,
            final_state_unknown,
        } => format!(
            "D {}{}",
            id(object),
            if *final_state_unknown { "*" } else { "" }
        ),
    }
}

/// Everything queued for `sub` right now, rendered by [`show`], without
/// waiting.
pub fn drain(sub: &mut Subscription<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(Some(n)) = sub.next().now_or_never() {
        out.push(show(&n));
    }
    out
}

/// Whether the suite runs in the compact cache mode
/// (`KUBE_INFORMER_CACHE=compact` in a build with the `compact` feature,
/// the switch of `cache_mode_common`'s `CacheModeExt::cache_from_env`).
pub fn compact_mode() -> bool {
    crate::cache_mode_common::compact_from_env()
}

/// A store writer in the mode the suite runs in.
pub fn new_writer(
    indexers: kube_informer::store::Indexers<ConfigMap>,
) -> kube_informer::unstable::store::Writer<ConfigMap> {
    use kube_informer::unstable::store::Writer;
    #[cfg(feature = "compact")]
    if compact_mode() {
        return Writer::compact(indexers, kube_informer::store::CompactCache::default());
    }
    Writer::new(indexers)
}

/// What a read or a write hands back is what was written: the same
/// allocation in the default mode, an equal object in the compact mode
/// (CM5).
pub fn assert_same(got: &Arc<ConfigMap>, written: &Arc<ConfigMap>) {
    if compact_mode() {
        assert_eq!(**got, **written);
    } else {
        assert!(Arc::ptr_eq(got, written));
    }
}
