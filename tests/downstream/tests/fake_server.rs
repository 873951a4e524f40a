//! The user's test: their informers against the fake API server, with a
//! list/watch fault, and no cluster.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::core::GroupVersionKind;
use kube_informer::InformerFactory;
use kube_informer_downstream::{
    dynamic_informer, object_ref, pod_informer, pods_on, shared_informers,
};
use kube_informer_testing::{FakeApiServer, RequestMatch, WatchFault};

fn pod(name: &str, node: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("default".into());
    pod.metadata.name = Some(name.into());
    pod.spec = Some(PodSpec {
        node_name: Some(node.into()),
        ..Default::default()
    });
    pod
}

#[tokio::test]
async fn pods_and_dynamic_objects_sync_through_a_dropped_watch() {
    let server = FakeApiServer::start().await;
    server.create(&pod("web-0", "node-1")).unwrap();
    server.inject_watch_fault(RequestMatch::Watch, 0, WatchFault::DropConnection);

    let pods = pod_informer(server.client());
    let gvk = GroupVersionKind::gvk("", "v1", "Pod");
    let dynamic = dynamic_informer(server.client(), &gvk);
    tokio::spawn(pods.run());
    tokio::spawn(dynamic.run());
    pods.wait_until_synced().await.unwrap();
    dynamic.wait_until_synced().await.unwrap();

    server.create(&pod("web-1", "node-1")).unwrap();
    let second_pod = async {
        while pods_on(&pods, "node-1").len() < 2 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), second_pod)
        .await
        .expect("the second pod reaches the store");
    assert!(!dynamic.store().namespace("default").list().is_empty());
    let key = "default/web-0".parse().unwrap();
    assert_eq!(object_ref(&key).name, "web-0");
}

#[tokio::test]
async fn the_factory_shares_what_the_builder_builds() {
    let server = FakeApiServer::start().await;
    server.create(&pod("web-0", "node-1")).unwrap();
    let factory = InformerFactory::new(server.client());
    let gvk = GroupVersionKind::gvk("", "v1", "Pod");
    let (pods, dynamic) = shared_informers(&factory, server.client(), &gvk).unwrap();
    let (again, _) = shared_informers(&factory, server.client(), &gvk).unwrap();
    assert_eq!(factory.len(), 2);
    factory.start();
    factory.wait_until_synced().await.unwrap();
    assert_eq!(pods_on(&pods, "node-1").len(), 1);
    assert_eq!(pods_on(&again, "node-1").len(), 1);
    assert_eq!(dynamic.store().len(), 1);
    factory.shutdown().await;
}
