//! The `/status` subresource through a real `kube::Client` (ST rules in
//! `src/write/target.rs`), checked against kube-apiserver 1.34's answers.

use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use kube_informer_testing::{FakeApiServer, ResourceType};
use serde_json::json;

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
        "status": {"replicas": 7}
    }))
    .unwrap()
}

#[tokio::test]
async fn ss1_ss2_status_writes_change_only_status_and_object_writes_keep_it() {
    let server = FakeApiServer::start().await;
    let api: Api<Deployment> = Api::namespaced(server.client(), "default");
    // SS1: a created object starts without the status its body carried.
    let created = api
        .create(&PostParams::default(), &deployment())
        .await
        .unwrap();
    assert_eq!(created.status, None);
    assert_eq!(created.metadata.generation, Some(1));

    // SS2: a status patch that also touches spec and labels changes status only.
    let patch = Patch::Merge(json!({
        "metadata": {"labels": {"sneaky": "1"}},
        "spec": {"replicas": 5},
        "status": {"replicas": 3, "observedGeneration": 1}
    }));
    let patched = api
        .patch_status("web", &PatchParams::default(), &patch)
        .await
        .unwrap();
    assert_eq!(patched.status.as_ref().unwrap().replicas, Some(3));
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(patched.metadata.labels, None);
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "a status write is no spec change"
    );
    let entry = patched
        .metadata
        .managed_fields
        .as_ref()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(entry.subresource.as_deref(), Some("status"));

    // SS1: a replace of the object with another status keeps the stored one.
    let mut replacement = patched.clone();
    replacement.status.as_mut().unwrap().replicas = Some(100);
    replacement.spec.as_mut().unwrap().replicas = Some(2);
    let replaced = api
        .replace("web", &PostParams::default(), &replacement)
        .await
        .unwrap();
    assert_eq!(replaced.status.as_ref().unwrap().replicas, Some(3));
    assert_eq!(replaced.metadata.generation, Some(2));

    // replace_status with a stale resourceVersion is a 409, the fresh one works.
    let mut status_body = replaced.clone();
    status_body.status.as_mut().unwrap().replicas = Some(2);
    let done = api
        .replace_status("web", &PostParams::default(), &status_body)
        .await
        .unwrap();
    assert_eq!(done.status.unwrap().replicas, Some(2));
    let err = api
        .replace_status("web", &PostParams::default(), &patched)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err}"
    );

    // Applying status through the subresource records subresource "status".
    let apply = Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "status": {"availableReplicas": 2}}));
    let applied = api
        .patch_status("web", &PatchParams::apply("ctrl"), &apply)
        .await
        .unwrap();
    assert_eq!(applied.status.unwrap().available_replicas, Some(2));
    let entry = applied
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .find(|e| e.manager.as_deref() == Some("ctrl"))
        .unwrap();
    assert_eq!(
        (entry.operation.as_deref(), entry.subresource.as_deref()),
        (Some("Apply"), Some("status"))
    );
}

#[tokio::test]
async fn ss3_status_of_kinds_without_it_and_of_missing_objects_is_404() {
    let server = FakeApiServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("cm".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let err = cms.get_status("cm").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err}"
    );
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let err = deployments.get_status("nope").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404 && s.message.contains("nope")),
        "{err}"
    );
}

#[tokio::test]
async fn ss1_custom_resources_have_status_when_registered_with_it() {
    let server = FakeApiServer::start().await;
    let widgets = ResourceType::new("example.com", "v1", "widgets", "Widget", true)
        .with_status_subresource(true);
    server.register(&widgets);
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        server.client(),
        "default",
        &kube::api::ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
    );
    let apply = Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ready": true}}));
    let created = api
        .patch("w", &PatchParams::apply("m"), &apply)
        .await
        .unwrap();
    assert_eq!(
        created.metadata.generation,
        Some(1),
        "custom resources count generations"
    );
    assert_eq!(created.data.get("status"), None);
    let status = Patch::Merge(json!({"status": {"ready": true}}));
    let patched = api
        .patch_status("w", &PatchParams::default(), &status)
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["ready"], true);
    assert_eq!(patched.metadata.generation, Some(1));
}
