//! Deletion through a real `kube::Client` as kube-apiserver does it:
//! finalizers hold an object marked with a `deletionTimestamp` until they
//! are cleared, DeleteOptions are honoured, and namespaces terminate (rules
//! DL1–DL14 in the crate's `deletion` module). The answers were checked
//! against kube-apiserver v1.34 (`e2e/cluster.sh`).

use crate::common;

use common::{api_error, next_event, watch_configmaps};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, PodSpec};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent},
};
use kube_informer_testing::FakeApiServer;
use serde_json::json;

fn cm(name: &str, finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    }
    cm
}

fn namespace(name: &str) -> Namespace {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    ns
}

/// Type, name, resourceVersion and finalizers of the next `n` watch events.
async fn next_events<K: kube::Resource>(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
    n: usize,
) -> Vec<(&'static str, String, u64, Vec<String>)> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let (kind, object) = next_event(stream).await;
        let rv = object.resource_version().unwrap().parse().unwrap();
        seen.push((kind, object.name_any(), rv, object.finalizers().to_vec()));
    }
    seen
}

#[tokio::test]
async fn dl2_dl3_dl4_finalizers_hold_a_deleted_object_until_cleared() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &cm("held", &["example.com/cleanup"]),
        )
        .await
        .unwrap();
    let mut watch = watch_configmaps(&server).await;

    // DL2: marked, not gone; the answer is the object.
    let marked = api
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("an object held by a finalizer is answered with itself");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(marked.finalizers(), ["example.com/cleanup"]);
    let marked_rv: u64 = marked.resource_version().unwrap().parse().unwrap();
    assert_eq!(
        api.get("held").await.unwrap().metadata.deletion_timestamp,
        marked.metadata.deletion_timestamp
    );

    // DL3: a second delete writes nothing.
    let again = api
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(again.resource_version(), marked.resource_version());
    assert_eq!(server.resource_version(), marked_rv);

    // DL4: clearing the finalizers deletes it in the same write.
    let released = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(released.finalizers().is_empty());
    assert_eq!(released.resource_version(), marked.resource_version());
    assert_eq!(server.resource_version(), marked_rv + 1);
    assert_eq!(api_error(api.get("held").await).0, 404);

    let events = next_events(&mut watch, 2).await;
    let cleanup = vec!["example.com/cleanup".to_owned()];
    assert_eq!(
        events,
        [
            ("MODIFIED", "held".into(), marked_rv, cleanup.clone()),
            // The last stored state, at the deletion's resourceVersion.
            ("DELETED", "held".into(), marked_rv + 1, cleanup),
        ]
    );
    assert_ne!(created.resource_version(), marked.resource_version());
}

#[tokio::test]
async fn dl5_a_finalizer_cannot_be_added_to_an_object_being_deleted() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("held", &["a.example.com/f"]))
        .await
        .unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let rv = server.resource_version();
    let refused = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["a.example.com/f", "b.example.com/g"]}}),
            ),
        )
        .await;
    assert_eq!(
        api_error(refused),
        (
            422,
            "Invalid".into(),
            "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be \
             added if the object is being deleted, found new finalizers []string{\"b.example.com/g\"}"
                .into()
        )
    );
    assert_eq!(server.resource_version(), rv);
    // Removing one and keeping another is allowed.
    let mut object = api.get("held").await.unwrap();
    object.data = Some([("k".to_owned(), "v".to_owned())].into());
    let replaced = api
        .replace("held", &PostParams::default(), &object)
        .await
        .unwrap();
    assert_eq!(replaced.finalizers(), ["a.example.com/f"]);
}

#[tokio::test]
async fn dl6_updates_cannot_clear_or_move_the_deletion_timestamp() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("held", &["example.com/f"]))
        .await
        .unwrap();
    let marked = api
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    let rv = server.resource_version();
    let patched = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"deletionTimestamp": null, "deletionGracePeriodSeconds": null}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.deletion_timestamp,
        marked.metadata.deletion_timestamp
    );
    assert_eq!(server.resource_version(), rv, "a no-op: nothing written");
    let moved = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        moved.metadata.deletion_timestamp,
        marked.metadata.deletion_timestamp
    );
    // Nor can an update mark an object that is not being deleted.
    api.create(&PostParams::default(), &cm("free", &[]))
        .await
        .unwrap();
    let unmarked = api
        .patch(
            "free",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}})),
        )
        .await
        .unwrap();
    assert!(unmarked.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn dl1_an_object_without_finalizers_goes_at_once_answered_as_the_api_server_does() {
    let server = FakeApiServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    let status = cms
        .delete("plain", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .expect("ConfigMaps are answered with a Status");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    let details = status.details.unwrap();
    assert_eq!(
        (
            details.name.as_str(),
            details.kind.as_str(),
            details.uid.as_str()
        ),
        ("plain", "configmaps", created.uid().unwrap().as_str())
    );

    // Pods are answered with their last state.
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.spec = Some(PodSpec::default());
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let last = pods
        .delete("p", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("Pods are answered with the object");
    assert_eq!(
        last.resource_version(),
        Some(server.resource_version().to_string())
    );
    assert!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn dl7_propagation_policies_add_the_collector_finalizers() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("fg", &["example.com/f"]))
        .await
        .unwrap();
    let marked = api
        .delete("fg", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(marked.finalizers(), ["example.com/f", "foregroundDeletion"]);
    // Without dependents the collector releases it at once; its own
    // finalizer still holds it.
    let now = api.get("fg").await.unwrap();
    assert_eq!(now.finalizers(), ["example.com/f"]);

    api.create(&PostParams::default(), &cm("or", &["example.com/f"]))
        .await
        .unwrap();
    let marked = api
        .delete("or", &DeleteParams::orphan())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(marked.finalizers(), ["example.com/f", "orphan"]);
    assert_eq!(api.get("or").await.unwrap().finalizers(), ["example.com/f"]);

    // orphanDependents: false asks for cascading deletion: 202 while held.
    api.create(&PostParams::default(), &cm("old", &["example.com/f"]))
        .await
        .unwrap();
    let request = kube::core::Request::new("/api/v1/namespaces/default/configmaps")
        .delete("old", &DeleteParams::default())
        .unwrap();
    let mut request = request;
    *request.body_mut() = br#"{"orphanDependents": false}"#.to_vec();
    let response = server
        .client()
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
}

/// Sends a DELETE of `name` (with `query` appended) with `body` as it is,
/// and returns the status code and the answer.
async fn raw_delete(
    server: &FakeApiServer,
    name: &str,
    query: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let mut request = kube::core::Request::new("/api/v1/namespaces/default/configmaps")
        .delete(name, &DeleteParams::default())
        .unwrap();
    *request.body_mut() = body.as_bytes().to_vec();
    let uri = format!("/api/v1/namespaces/default/configmaps/{name}{query}");
    *request.uri_mut() = uri.parse().unwrap();
    match server.client().request_text(request).await {
        Ok(text) => (200, serde_json::from_str(&text).unwrap()),
        Err(kube::Error::Api(status)) => (
            status.code,
            json!({"reason": status.reason, "message": status.message}),
        ),
        Err(other) => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn dl8_delete_options_are_checked_as_the_api_server_does() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("x", &[]))
        .await
        .unwrap();

    let wrong_uid = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let (code, reason, message) = api_error(api.delete("x", &wrong_uid).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        format!(
            "Operation cannot be fulfilled on ConfigMap \"x\": the UID in the precondition (nope) \
             does not match the UID in record ({}). The object might have been deleted and then recreated",
            created.uid().unwrap()
        )
    );
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some("999".into()),
        }),
        ..DeleteParams::default()
    };
    let (code, _, message) = api_error(api.delete("x", &stale).await);
    assert_eq!(code, 409);
    assert!(
        message.contains("the ResourceVersion in the precondition (999) does not match"),
        "{message}"
    );

    let (code, body) = raw_delete(&server, "x", "", r#"{"propagationPolicy": "Bogus"}"#).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        body["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": \
         supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    let (code, body) = raw_delete(
        &server,
        "x",
        "",
        r#"{"propagationPolicy": "Orphan", "orphanDependents": true}"#,
    )
    .await;
    assert_eq!(code, 422);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("orphanDependents and deletionPropagation cannot be both set")
    );
    let (code, _) = raw_delete(&server, "x", "", r#"{"dryRun": ["Bogus"]}"#).await;
    assert_eq!(code, 422);
    // Bodies that are not DeleteOptions are a 500, as the API server's
    // decoder answers them.
    let (code, body) = raw_delete(&server, "x", "", "not json").await;
    assert_eq!(code, 500);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("couldn't get version/kind; json parse error")
    );
    let (code, body) = raw_delete(&server, "x", "", r#"{"gracePeriodSeconds": "x"}"#).await;
    assert_eq!(code, 500);
    assert_eq!(
        body["message"],
        "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
    );
    let (code, _) = raw_delete(&server, "x", "?gracePeriodSeconds=abc", "").await;
    assert_eq!(code, 400);
    // Query parameters are DeleteOptions too.
    assert_eq!(api.get("x").await.unwrap().uid(), created.uid());
    let (code, body) = raw_delete(&server, "x", "?propagationPolicy=Orphan", "").await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
}

#[tokio::test]
async fn dl9_dry_run_answers_and_writes_nothing() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("held", &["example.com/f"]))
        .await
        .unwrap();
    let rv = server.resource_version();
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    assert!(api.delete("plain", &dry).await.unwrap().is_right());
    let would = api.delete("held", &dry).await.unwrap().left().unwrap();
    assert!(would.metadata.deletion_timestamp.is_some());
    assert_eq!(server.resource_version(), rv);
    assert!(
        api.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        2
    );
    let listed = api
        .delete_collection(&dry, &ListParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    assert_eq!(server.resource_version(), rv);
}

#[tokio::test]
async fn dl10_delete_collection_follows_the_same_rules() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let held = api
        .create(&PostParams::default(), &cm("a-held", &["example.com/f"]))
        .await
        .unwrap();
    let plain = api
        .create(&PostParams::default(), &cm("b-plain", &[]))
        .await
        .unwrap();
    let listed_at = server.resource_version();
    let answer = api
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    // The answer lists the objects as they were before.
    assert_eq!(
        answer.metadata.resource_version,
        Some(listed_at.to_string())
    );
    let before: Vec<_> = answer.items.iter().map(|o| o.resource_version()).collect();
    assert_eq!(before, [held.resource_version(), plain.resource_version()]);
    let left = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].name_any(), "a-held");
    assert!(left[0].metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn dl11_dl12_gc7_a_namespace_terminates_and_goes_when_empty() {
    let server = FakeApiServer::start().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    let in_ns: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    namespaces
        .create(&PostParams::default(), &namespace("team"))
        .await
        .unwrap();
    in_ns
        .create(&PostParams::default(), &cm("held", &["example.com/f"]))
        .await
        .unwrap();
    in_ns
        .create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();

    let terminating = namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("a namespace is answered with itself");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert_eq!(
        terminating.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_owned()])
    );
    assert!(terminating.metadata.deletion_grace_period_seconds.is_none());

    // The contents went (the held one is marked), the namespace waits.
    let left = in_ns.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(left.len(), 1);
    assert!(left[0].metadata.deletion_timestamp.is_some());
    assert!(namespaces.get("team").await.is_ok());

    // DL12: nothing new in a terminating namespace.
    let (code, reason, message) =
        api_error(in_ns.create(&PostParams::default(), &cm("new", &[])).await);
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps \"new\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );

    in_ns
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert_eq!(api_error(namespaces.get("team").await).0, 404);

    // DL11: some namespaces never go.
    let (code, _, message) =
        api_error(namespaces.delete("default", &DeleteParams::default()).await);
    assert_eq!(
        (code, message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
}

#[tokio::test]
async fn dl13_a_namespace_is_created_with_the_api_server_defaults() {
    let server = FakeApiServer::start().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    let created = namespaces
        .create(&PostParams::default(), &namespace("team"))
        .await
        .unwrap();
    assert_eq!(created.labels()["kubernetes.io/metadata.name"], "team");
    assert_eq!(
        created.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_owned()])
    );
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
}

#[tokio::test]
async fn dl14_the_test_side_deletes_by_the_same_rules() {
    let server = FakeApiServer::start().await;
    let mut object = cm("held", &["example.com/f"]);
    object.metadata.namespace = Some("default".into());
    server.create(&object).unwrap();
    let marked: ConfigMap = server.delete(Some("default"), "held").unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(server.objects::<ConfigMap>().len(), 1);

    let mut cleared = marked.clone();
    cleared.metadata.finalizers = None;
    cleared.metadata.deletion_timestamp = None; // kept by the server (DL6)
    server.update(&cleared).unwrap();
    assert!(server.objects::<ConfigMap>().is_empty());

    // Any namespace may go from the test side; its contents go first.
    server.create(&namespace("default")).unwrap();
    let mut inside = cm("inside", &[]);
    inside.metadata.namespace = Some("default".into());
    server.create(&inside).unwrap();
    server.delete::<Namespace>(None, "default").unwrap();
    assert!(server.objects::<Namespace>().is_empty());
    assert!(server.objects::<ConfigMap>().is_empty());
}

#[tokio::test]
async fn dl8_a_body_makes_the_query_options_of_a_delete_count_for_nothing() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("x", &[]))
        .await
        .unwrap();
    // `?dryRun=All` with no body: a dry run, the object stays.
    let (code, _) = raw_delete(&server, "x", "?dryRun=All", "").await;
    assert_eq!(code, 200);
    assert!(api.get_opt("x").await.unwrap().is_some());
    // The same query with a DeleteOptions body: the body's options only,
    // so the delete is done (as kube-apiserver 1.34 does it).
    let (code, _) = raw_delete(&server, "x", "?dryRun=All", r#"{"preconditions": {}}"#).await;
    assert_eq!(code, 200);
    assert!(api.get_opt("x").await.unwrap().is_none());
}
