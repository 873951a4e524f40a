//! Projections (rules PJ1–PJ4 in `src/projection.rs`): a slim type of the
//! user's cached in place of a full one, on the fake API server and tokio's
//! paused clock.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::{ConfigMap, Pod},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::{Api, Resource, ResourceExt, api::PostParams};
use kube_informer::{Controller, Informer, InformerFactory, runner::Action, source};
use kube_informer_testing::{FakeApiServer, ResourceType};
use serde::Deserialize;
use serde_json::json;

/// What a node-aware controller reads of a Pod.
#[derive(Debug, Clone, Deserialize)]
struct SlimPod {
    metadata: ObjectMeta,
    spec: Option<SlimSpec>,
    status: Option<SlimStatus>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimSpec {
    node_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct SlimStatus {
    phase: Option<String>,
}

kube_informer::projection!(SlimPod, Pod);

impl SlimPod {
    fn node(&self) -> Option<&str> {
        self.spec.as_ref()?.node_name.as_deref()
    }

    fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }
}

/// A full Pod as a kubelet would report it: containers, volumes,
/// managedFields, all of which the projection leaves out.
fn pod(name: &str, node: &str, phase: &str, app: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {"app": app},
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}]
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "shop:1", "ports": [{"containerPort": 8080}]}],
            "volumes": [{"name": "data", "emptyDir": {}}]
        },
        "status": {"phase": phase, "podIP": "10.0.0.1"}
    })
}

fn pods() -> ResourceType {
    ResourceType::of::<Pod>()
}

async fn synced<K>(informer: &Informer<K>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    tokio::spawn(informer.run());
    tokio::time::timeout(Duration::from_secs(30), informer.wait_until_synced())
        .await
        .expect("the informer syncs within 30s")
        .expect("the informer syncs");
}

#[test]
fn pj1_a_projection_has_the_full_types_identity() {
    assert_eq!(SlimPod::kind(&()), "Pod");
    assert_eq!(SlimPod::api_version(&()), "v1");
    assert_eq!(SlimPod::plural(&()), "pods");
    assert_eq!(
        SlimPod::url_path(&(), Some("shop")),
        Pod::url_path(&(), Some("shop"))
    );
}

#[tokio::test(start_paused = true)]
async fn pj1_the_store_holds_the_projected_fields_of_listed_and_watched_pods() {
    let server = FakeApiServer::start().await;
    server
        .create_value(&pods(), pod("web-1", "node-a", "Running", "web"))
        .unwrap();
    let informer = Informer::builder(Api::<SlimPod>::all(server.client())).build();
    synced(&informer).await;

    let listed = informer
        .store()
        .get_by(Some("shop"), "web-1")
        .expect("listed");
    assert_eq!(listed.node(), Some("node-a"));
    assert_eq!(listed.phase(), Some("Running"));
    assert_eq!(listed.labels().get("app").map(String::as_str), Some("web"));

    // A watched change arrives decoded the same way.
    let mut update = pod("web-1", "node-a", "Succeeded", "web");
    update["metadata"]["resourceVersion"] = json!(listed.resource_version());
    server.update_value(&pods(), update).unwrap();
    let mut changes = informer.subscribe(Default::default()).unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let notification = changes.next().await.expect("the subscription goes on");
            if notification.object().phase() == Some("Succeeded") {
                break;
            }
        }
    })
    .await
    .expect("the watched update reaches the subscriber");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path.starts_with("/api/v1/pods")),
        "every request went to the full type's resource"
    );
    informer.stop();
}

#[tokio::test(start_paused = true)]
async fn pj2_selectors_go_to_the_server_and_indexes_read_the_projection() {
    let server = FakeApiServer::start().await;
    for (name, node, app) in [
        ("web-1", "node-a", "web"),
        ("web-2", "node-b", "web"),
        ("db-1", "node-a", "db"),
    ] {
        server
            .create_value(&pods(), pod(name, node, "Running", app))
            .unwrap();
    }
    let informer = Informer::builder(Api::<SlimPod>::namespaced(server.client(), "shop"))
        .source_config(source::Config::default().label_selector("app=web"))
        .indexer("node", |pod: &SlimPod| {
            pod.node().map(str::to_owned).into_iter().collect()
        })
        .transform(|mut pod: SlimPod| {
            pod.metadata.managed_fields = None;
            Ok(pod)
        })
        .build();
    synced(&informer).await;

    let store = informer.store();
    let mut names: Vec<_> = store.list().iter().map(|p| p.name_any()).collect();
    names.sort();
    assert_eq!(
        names,
        ["web-1", "web-2"],
        "the label selector kept db-1 out"
    );
    let on_a = store.by_index("node", "node-a").unwrap();
    assert_eq!(on_a.len(), 1);
    assert_eq!(on_a[0].name_any(), "web-1");
    assert!(
        on_a[0].metadata.managed_fields.is_none(),
        "the transform ran"
    );
    let list = server
        .requests()
        .into_iter()
        .find(|r| r.is_list())
        .expect("a list");
    assert!(
        list.query
            .contains(&("labelSelector".to_owned(), "app=web".to_owned())),
        "{:?}",
        list.query
    );
    informer.stop();
}

#[tokio::test(start_paused = true)]
async fn pj3_the_factory_shares_a_projection_and_keeps_it_apart_from_the_full_type() {
    let server = FakeApiServer::start().await;
    server
        .create_value(&pods(), pod("web-1", "node-a", "Running", "web"))
        .unwrap();
    let factory = InformerFactory::new(server.client());
    let slim = factory
        .build(Api::<SlimPod>::all(factory.client()), |b| b)
        .unwrap();
    let again = factory
        .build(Api::<SlimPod>::all(factory.client()), |b| b)
        .unwrap();
    let full = factory
        .build(Api::<Pod>::all(factory.client()), |b| b)
        .unwrap();
    assert_eq!(
        factory.len(),
        2,
        "one informer for the projection, one for Pod"
    );
    factory.start();
    tokio::time::timeout(Duration::from_secs(30), factory.wait_until_synced())
        .await
        .expect("in time")
        .expect("both sync");
    let slim_pod = again.store().get_by(Some("shop"), "web-1").unwrap();
    assert_eq!(slim_pod.node(), Some("node-a"));
    assert_eq!(slim.store().len(), 1);
    let full_pod = full.store().get_by(Some("shop"), "web-1").unwrap();
    assert_eq!(full_pod.spec.as_ref().unwrap().containers.len(), 1);
    factory.shutdown().await;
}

/// What a reconciler was handed: name and phase, in order.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

#[tokio::test(start_paused = true)]
async fn pj4_a_controller_reconciles_a_projection_and_its_owned_objects() {
    let server = FakeApiServer::start().await;
    let created = server
        .create_value(&pods(), pod("web-1", "node-a", "Running", "web"))
        .unwrap();
    let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
    let seen: Seen = Arc::default();

    let client = server.client();
    let outcomes = Controller::new(Api::<SlimPod>::all(client.clone()))
        .owns(Api::<ConfigMap>::all(client.clone()))
        .run(
            |pod: Arc<SlimPod>, seen: Seen| async move {
                seen.lock()
                    .unwrap()
                    .push((pod.name_any(), pod.phase().map(str::to_owned)));
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, _, _| Action::backoff(),
            seen.clone(),
        );
    let mut outcomes = Box::pin(outcomes);
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(60), outcomes.next())
            .await
            .expect("a reconcile within a minute")
            .expect("the controller goes on")
            .expect("the reconcile succeeds")
    };
    next().await;

    // A ConfigMap controlled by the Pod brings the Pod back.
    let child = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web-1-config".into()),
            namespace: Some("shop".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "web-1".into(),
                uid,
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(client, "shop")
        .create(&PostParams::default(), &child)
        .await
        .unwrap();
    next().await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("web-1".to_owned(), Some("Running".to_owned())),
            ("web-1".to_owned(), Some("Running".to_owned()))
        ]
    );
}
