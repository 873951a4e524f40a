//! JSON patches (RFC 6902) over HTTP through a real `kube::Client`, with
//! kube-apiserver's answers: a patch applies whole or not at all, a failed
//! `test` is 422 `Invalid` and writes nothing, a member the object lacks
//! tests equal to `null`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use kube_informer_testing::FakeApiServer;
use serde_json::{Value, json};

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

async fn json_patch(api: &Api<ConfigMap>, name: &str, patch: Value) -> kube::Result<ConfigMap> {
    let patch = serde_json::from_value(patch).expect("a JSON patch");
    api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
}

fn status<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn jp1_jp3_test_then_add_appends_to_the_list_it_tested_and_takes_one_resource_version() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("app"))
        .await
        .unwrap();

    // No finalizers yet: the missing member tests equal to null.
    let before = server.resource_version();
    let first = json_patch(
        &api,
        "app",
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/a"]},
        ]),
    )
    .await
    .unwrap();
    assert_eq!(first.finalizers(), ["example.com/a"]);
    assert_eq!(server.resource_version(), before + 1);

    let second = json_patch(
        &api,
        "app",
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": ["example.com/a"]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/b"},
        ]),
    )
    .await
    .unwrap();
    assert_eq!(second.finalizers(), ["example.com/a", "example.com/b"]);

    let third = json_patch(
        &api,
        "app",
        json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/a"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]),
    )
    .await
    .unwrap();
    assert_eq!(third.finalizers(), ["example.com/b"]);
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["example.com/b"]
    );
}

#[tokio::test]
async fn jp4_a_failed_test_is_422_invalid_and_writes_nothing() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut with = cm("app");
    with.metadata.finalizers = Some(vec!["example.com/a".into()]);
    let created = api.create(&PostParams::default(), &with).await.unwrap();
    let before = server.resource_version();

    for patch in [
        // The list is there: a test for null fails.
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/b"]},
        ]),
        // Another entry at the index.
        json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/b"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]),
        // An index past the end.
        json!([
            {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/a"},
            {"op": "remove", "path": "/metadata/finalizers/1"},
        ]),
        // The earlier operation applied to a copy only.
        json!([
            {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
            {"op": "test", "path": "/metadata/uid", "value": "another"},
        ]),
        // Removing what is not there.
        json!([{"op": "remove", "path": "/metadata/annotations"}]),
    ] {
        let (code, reason, message) = status(json_patch(&api, "app", patch.clone()).await);
        assert_eq!(
            (code, reason.as_str(), message.as_str()),
            (
                422,
                "Invalid",
                "the server rejected our request due to an error in our request"
            ),
            "{patch}"
        );
    }
    assert_eq!(server.resource_version(), before);
    assert_eq!(api.get("app").await.unwrap(), created);
}

#[tokio::test]
async fn jp6_a_body_that_is_no_list_of_operations_is_400_and_a_stale_resource_version_409() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("app"))
        .await
        .unwrap();
    // kube's client sends what it is given; a raw request shows the body.
    let request = |body: &'static str| {
        axum::http::Request::patch("/api/v1/namespaces/default/configmaps/app")
            .header("Content-Type", "application/json-patch+json")
            .body(body.as_bytes().to_vec())
            .unwrap()
    };
    for (body, message) in [
        (
            r#"{"op": "test"}"#,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            "[1]",
            "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
        ),
    ] {
        let answer = server.client().request::<ConfigMap>(request(body)).await;
        let (code, reason, got) = status(answer);
        assert_eq!(
            (code, reason.as_str(), got.as_str()),
            (400, "BadRequest", message)
        );
    }

    json_patch(
        &api,
        "app",
        json!([{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}]),
    )
    .await
    .unwrap();
    // A resourceVersion the patch sets is a precondition, as in a replace.
    let stale = json!([
        {"op": "replace", "path": "/metadata/resourceVersion", "value": created.resource_version()},
        {"op": "add", "path": "/metadata/annotations", "value": {"late": "1"}},
    ]);
    let (code, reason, _) = status(json_patch(&api, "app", stale).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(api.get("app").await.unwrap().annotations().is_empty());
}
