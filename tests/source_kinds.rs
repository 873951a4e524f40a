//! The source works for namespaced and cluster-wide Apis, DynamicObjects and
//! metadata-only watches; selectors apply everywhere.

use crate::source_helpers;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Node, Pod},
};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DynamicObject, GroupVersionKind},
};
use kube_informer::source::{self, Config, Event};
use kube_informer_testing::{FakeApiServer, ResourceType};
use serde_json::json;
use source_helpers::*;

#[tokio::test(start_paused = true)]
async fn cluster_scoped_nodes() {
    let server = FakeApiServer::start().await;
    let mut node = Node::default();
    node.metadata.name = Some("node-1".into());
    server.create(&node).unwrap();
    let api: Api<Node> = Api::all(server.client());
    let mut events = spawned(source::watch_source(api, Config::default()));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["node-1"]);
    assert_eq!(server.requests()[0].path, "/api/v1/nodes");
    wait_watches(&server, 1).await;
    node.metadata.name = Some("node-2".into());
    server.create(&node).unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Added", "node-2".into())
    );
}

#[tokio::test(start_paused = true)]
async fn all_namespaces_and_one_namespace() {
    let server = FakeApiServer::start().await;
    let mut other = cm("x", "web");
    other.metadata.namespace = Some("other".into());
    server.create(&other).unwrap();
    server.create(&cm("y", "web")).unwrap();

    let all: Api<ConfigMap> = Api::all(server.client());
    let mut events = spawned(source::watch_source(all, Config::default()));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["y", "x"], "key order: default/y before other/x");

    let default = cm_source(&server, Config::default());
    let mut default = default;
    let (names, _) = read_relist(&mut default).await;
    assert_eq!(names, ["y"]);
}

#[tokio::test(start_paused = true)]
async fn dynamic_objects() {
    let server = FakeApiServer::start().await;
    let rt = ResourceType::new("example.com", "v1", "widgets", "Widget", true);
    server
        .create_value(
            &rt,
            json!({"metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}}),
        )
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &ar);
    let mut events = spawned(source::watch_source(api, Config::default()));
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    match next_event(&mut events).await {
        Event::Listed(w) => {
            assert_eq!(w.name_any(), "w1");
            assert_eq!(w.data["spec"]["size"], 3);
        }
        other => panic!("{:?}", label(&other)),
    }
    assert_eq!(label(&next_event(&mut events).await).0, "ListDone");
    assert_eq!(
        server.requests()[0].path,
        "/apis/example.com/v1/namespaces/default/widgets"
    );

    wait_watches(&server, 1).await;
    server
        .create_value(
            &rt,
            json!({"metadata": {"name": "w2", "namespace": "default"}}),
        )
        .unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Added", "w2".into())
    );
}

#[tokio::test(start_paused = true)]
async fn typed_deployments_in_a_group() {
    let server = FakeApiServer::start().await;
    let mut d = Deployment::default();
    d.metadata.name = Some("web".into());
    d.metadata.namespace = Some("default".into());
    server.create(&d).unwrap();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    let mut events = spawned(source::watch_source(api, Config::default()));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["web"]);
}

#[tokio::test(start_paused = true)]
async fn metadata_only() {
    let server = FakeApiServer::start().await;
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    server.create(&pod).unwrap();
    let api: Api<Pod> = Api::all(server.client());
    let mut events = spawned(source::watch_metadata_source(api, Config::default()));
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    match next_event(&mut events).await {
        Event::Listed(meta) => {
            assert_eq!(meta.name_any(), "p");
            assert_eq!(meta.labels()["app"], "web");
        }
        other => panic!("{:?}", label(&other)),
    }
    assert_eq!(label(&next_event(&mut events).await).0, "ListDone");
    wait_watches(&server, 1).await;
    server.delete::<Pod>(Some("default"), "p").unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Deleted", "p".into())
    );
    assert!(server.requests().iter().all(|r| r.is_metadata_only()));
}

#[tokio::test(start_paused = true)]
async fn label_selector_filters_and_relabel_deletes() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "db")).unwrap();
    let mut events = cm_source(&server, Config::default().label_selector("app=web"));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    wait_watches(&server, 1).await;
    // b enters the selection: the watch says Added; a leaves it: Deleted.
    server.update(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "b".into()));
    server.update(&cm("a", "db")).unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Deleted", "a".into())
    );
    for request in server.requests() {
        assert_eq!(request.param("labelSelector"), Some("app=web"));
    }
}

#[tokio::test(start_paused = true)]
async fn field_selector_is_sent_and_applied() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "web")).unwrap();
    let mut events = cm_source(&server, Config::default().field_selector("metadata.name=b"));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["b"]);
    wait_watches(&server, 1).await;
    for request in server.requests() {
        assert_eq!(request.param("fieldSelector"), Some("metadata.name=b"));
    }
}

#[test]
fn public_source_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Event<ConfigMap>>();
    send_sync::<Config<ConfigMap>>();
    send_sync::<kube_informer::source::Error>();
    send_sync::<kube_informer::source::BackoffConfig>();
    // The streams themselves are `Send + 'static` by their signatures.
}
