//! PB13: the fake API server answers the lists and watches of built-in
//! kinds in protobuf when asked, and an informer that asks for protobuf
//! holds and hands out the very values a JSON informer does: the objects
//! of `tests/protobuf-vectors/` (sub-second and zero times, quantities,
//! int-or-strings, raw JSON, binary data, unicode), then watched updates
//! and deletions of them. Custom resources stay JSON, as kube-apiserver
//! serves them.

use std::{fmt::Debug, fs, path::PathBuf, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, Deployment},
    coordination::v1::Lease,
    core::v1::{ConfigMap, Node, PersistentVolume, Pod, Secret, Service},
    events::v1::Event,
};
use kube::{
    Api,
    api::{DynamicObject, GroupVersionKind},
    core::ApiResource,
};
use kube_informer::unstable::protobuf::decode_status;
use kube_informer::{Informer, Notification, dispatch::SubscribeOptions, source::Encoding};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, ResourceType, StaticResource};
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A vector's object, as a client would create it (no server-set fields).
fn vector(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/protobuf-vectors")
        .join(format!("{name}.json"));
    let mut object: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let metadata = object["metadata"].as_object_mut().unwrap();
    for field in ["resourceVersion", "uid", "creationTimestamp", "generation"] {
        metadata.remove(field);
    }
    object
}

/// A notification as parts that compare: its kind, the old object (for an
/// update), the object, and its flag.
fn parts<K: Clone>(n: &Notification<K>) -> (&'static str, Option<K>, K, bool) {
    match n {
        Notification::Added {
            object,
            in_initial_list,
        } => ("added", None, K::clone(object), *in_initial_list),
        Notification::Updated { old, new, resync } => {
            ("updated", Some(K::clone(old)), K::clone(new), *resync)
        }
        Notification::Deleted {
            object,
            final_state_unknown,
        } => ("deleted", None, K::clone(object), *final_state_unknown),
    }
}

/// The `Content-Type` of the server's answer to a list with this `Accept`.
async fn list_content_type(server: &FakeApiServer, path: &str, accept: &str) -> String {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let response = server.client().send(request.map(Into::into)).await.unwrap();
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.headers()[http::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Creates the vectors' objects, runs a JSON and a protobuf informer over
/// them, changes and deletes them, and checks that both informers hand out
/// the same notifications and end with the same store.
async fn json_and_protobuf_agree<K>(vectors: &[&str], path: &str)
where
    K: StaticResource + Clone + Debug + PartialEq + Send + Sync + 'static,
{
    let server = FakeApiServer::start().await;
    let resource = ResourceType::of::<K>();
    for name in vectors {
        let mut object = vector(name);
        if resource.namespaced && object["metadata"].get("namespace").is_none() {
            object["metadata"]["namespace"] = json!("default");
        }
        let created = server.create_value(&resource, object.clone()).unwrap();
        // What the informers compare below is the whole object, status too.
        assert_eq!(created.get("status"), object.get("status"), "{name}");
    }
    assert_eq!(
        list_content_type(&server, path, &format!("{PROTOBUF}, application/json")).await,
        PROTOBUF
    );
    assert_eq!(
        list_content_type(&server, path, "application/json").await,
        "application/json"
    );

    let informers = [Encoding::Json, Encoding::Protobuf].map(|encoding| {
        Informer::builder(Api::<K>::all(server.client()))
            .encoding(encoding)
            .build()
    });
    let mut subscriptions = informers
        .each_ref()
        .map(|informer| informer.subscribe(SubscribeOptions::default()).unwrap());
    let runs = informers
        .each_ref()
        .map(|informer| tokio::spawn(informer.run()));
    for informer in &informers {
        informer.wait_until_synced().await.unwrap();
    }

    // Watched changes: every object gains a label, then the first goes.
    let objects = server.objects_value(&resource);
    for mut object in objects.clone() {
        object["metadata"]["labels"]["changed"] = json!("yes");
        server.update_value(&resource, object).unwrap();
    }
    let first = &objects[0]["metadata"];
    server
        .delete_value(
            &resource,
            first["namespace"].as_str(),
            first["name"].as_str().unwrap(),
        )
        .unwrap();

    let expected = 2 * objects.len() + 1;
    let mut seen = Vec::new();
    for subscription in &mut subscriptions {
        let mut notifications = Vec::new();
        while notifications.len() < expected {
            let n = tokio::time::timeout(Duration::from_secs(60), subscription.next())
                .await
                .expect("a notification within 60 s")
                .expect("the subscription goes on");
            notifications.push(parts(&n));
        }
        seen.push(notifications);
    }
    assert_eq!(seen[0].len(), expected);
    assert_eq!(
        seen[0], seen[1],
        "JSON and protobuf notifications of {path}"
    );
    let stores = informers
        .each_ref()
        .map(|informer| informer.store().snapshot());
    assert_eq!(stores[0], stores[1]);
    assert_eq!(stores[0].len(), objects.len() - 1);
    for (informer, run) in informers.iter().zip(runs) {
        informer.stop();
        run.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn pb13_pods_decode_alike_in_both_encodings() {
    json_and_protobuf_agree::<Pod>(&["pod", "pod-minimal", "pod-sub-second"], "/api/v1/pods").await;
}

#[tokio::test]
async fn pb13_configmaps_secrets_and_services_decode_alike() {
    json_and_protobuf_agree::<ConfigMap>(&["configmap"], "/api/v1/configmaps").await;
    json_and_protobuf_agree::<Secret>(&["secret"], "/api/v1/secrets").await;
    json_and_protobuf_agree::<Service>(&["service"], "/api/v1/services").await;
}

#[tokio::test]
async fn pb13_other_groups_decode_alike() {
    json_and_protobuf_agree::<Deployment>(&["deployment"], "/apis/apps/v1/deployments").await;
    json_and_protobuf_agree::<ControllerRevision>(
        &["controllerrevision"],
        "/apis/apps/v1/controllerrevisions",
    )
    .await;
    json_and_protobuf_agree::<Lease>(&["lease"], "/apis/coordination.k8s.io/v1/leases").await;
    json_and_protobuf_agree::<Event>(&["event"], "/apis/events.k8s.io/v1/events").await;
    json_and_protobuf_agree::<Node>(&["node"], "/api/v1/nodes").await;
    json_and_protobuf_agree::<PersistentVolume>(&["persistentvolume"], "/api/v1/persistentvolumes")
        .await;
}

/// A custom resource is JSON whatever the client asks first; the metadata
/// view of it is protobuf (kube-apiserver encodes that view for every
/// resource); a client that takes protobuf only gets 406 for it.
#[tokio::test]
async fn pb13_custom_resources_stay_json_and_their_metadata_is_protobuf() {
    let server = FakeApiServer::start().await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets = ResourceType::new("example.com", "v1", "widgets", "Widget", true);
    server.register(&widgets);
    server
        .create_value(&widgets, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 3}}))
        .unwrap();
    let path = "/apis/example.com/v1/widgets";
    assert_eq!(
        list_content_type(&server, path, &format!("{PROTOBUF}, application/json")).await,
        "application/json"
    );
    let metadata_accept =
        format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json");
    assert!(
        list_content_type(&server, path, &metadata_accept)
            .await
            .starts_with(PROTOBUF)
    );
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, PROTOBUF)
        .body(Vec::new())
        .unwrap();
    let response = server.client().send(request.map(Into::into)).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::NOT_ACCEPTABLE);

    let api = || Api::<DynamicObject>::all_with(server.client(), &resource);
    let informer = Informer::builder(api())
        .encoding(Encoding::Protobuf)
        .build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let widget: Arc<DynamicObject> = informer.store().get(&"default/w".parse().unwrap()).unwrap();
    assert_eq!(widget.data["spec"]["size"], 3);
    informer.stop();
    run.await.unwrap().unwrap();

    // The metadata view of the same resource, in protobuf.
    let informer = Informer::metadata_builder(api())
        .encoding(Encoding::Protobuf)
        .build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let cached = informer.store().list();
    assert_eq!(cached.len(), 1);
    assert_eq!(cached[0].metadata.name.as_deref(), Some("w"));
    informer.stop();
    run.await.unwrap().unwrap();
}

/// A failed list answers its `Status` in protobuf to a client that puts
/// protobuf first, as kube-apiserver does, and in JSON otherwise.
#[tokio::test]
async fn pb13_a_failed_list_answers_its_status_in_the_negotiated_encoding() {
    let server = FakeApiServer::start().await;
    for (accept, protobuf) in [
        (format!("{PROTOBUF}, application/json"), true),
        ("application/json".to_owned(), false),
    ] {
        server.fail_requests(
            RequestMatch::List,
            ApiStatus::new(403, "Forbidden", "no pods for you"),
            1,
        );
        let request = http::Request::get("/api/v1/pods")
            .header(http::header::ACCEPT, accept.as_str())
            .body(Vec::new())
            .unwrap();
        let response = server.client().send(request.map(Into::into)).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::FORBIDDEN);
        let content_type = response.headers()[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            content_type.starts_with(PROTOBUF),
            protobuf,
            "{content_type}"
        );
        let body = response.into_body().collect_bytes().await.unwrap();
        let status = if protobuf {
            decode_status(&body).unwrap()
        } else {
            serde_json::from_slice(&body).unwrap()
        };
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (403, "Forbidden", "no pods for you")
        );
    }
}
