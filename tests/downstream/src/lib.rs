//! What a user's controller crate looks like: informers built from its own
//! `kube::Api`s, on a typed kind and on a dynamic one.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    core::{ApiResource, DynamicObject, GroupVersionKind},
};
use kube_informer::{Informer, InformerFactory, ObjectKey, informer, source};
use kube_runtime::reflector::ObjectRef;

/// Pods by the node they run on.
pub const BY_NODE: &str = "by-node";

/// An informer on every Pod, indexed by node, managed fields dropped.
pub fn pod_informer(client: Client) -> Informer<Pod> {
    Informer::builder(Api::<Pod>::all(client))
        .strip_managed_fields()
        .indexer(BY_NODE, |pod: &Pod| {
            pod.spec.iter().filter_map(|s| s.node_name.clone()).collect()
        })
        .build()
}

/// An informer on a kind known only at run time.
pub fn dynamic_informer(client: Client, gvk: &GroupVersionKind) -> Informer<DynamicObject> {
    let resource = ApiResource::from_gvk(gvk);
    Informer::builder(Api::<DynamicObject>::all_with(client, &resource))
        .source_config(source::Config::default().page_size(100))
        .build()
}

/// The same informers shared through a factory.
pub fn shared_informers(
    factory: &InformerFactory,
    client: Client,
    gvk: &GroupVersionKind,
) -> Result<(Informer<Pod>, Informer<DynamicObject>), informer::Error> {
    let pods = factory.build(Api::<Pod>::all(client.clone()), |b| {
        b.strip_managed_fields().indexer(BY_NODE, |pod: &Pod| {
            pod.spec.iter().filter_map(|s| s.node_name.clone()).collect()
        })
    })?;
    let resource = ApiResource::from_gvk(gvk);
    let dynamic = factory.build(Api::<DynamicObject>::all_with(client, &resource), |b| b)?;
    Ok((pods, dynamic))
}

/// The Pods on `node`, through the informer's read-only store.
pub fn pods_on(informer: &Informer<Pod>, node: &str) -> Vec<Arc<Pod>> {
    informer.store().by_index(BY_NODE, node).unwrap_or_default()
}

/// A kube-runtime reference to a cached Pod, for code that speaks
/// `ObjectRef`.
pub fn object_ref(key: &ObjectKey) -> ObjectRef<Pod> {
    ObjectRef::from(key)
}
