//! Writes over HTTP through a real `kube::Client`: each one takes the next
//! resourceVersion, reaches open watches as one event, and fails the way the
//! API server fails.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, ResourceExt,
    api::{
        DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent,
        WatchParams,
    },
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use serde_json::json;

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some([("value".to_owned(), value.to_owned())].into());
    cm
}

fn namespace(name: &str) -> Namespace {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    ns
}

fn code<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The type and resourceVersion of the next `n` watch events.
async fn next_events<K>(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
    n: usize,
) -> Vec<(&'static str, String)>
where
    K: kube::Resource,
{
    let mut seen = Vec::new();
    while seen.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.try_next())
            .await
            .expect("the watch delivers the event")
            .expect("the watch has no error")
            .expect("the watch is open");
        match event {
            WatchEvent::Added(o) => seen.push(("ADDED", o.resource_version().unwrap())),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o.resource_version().unwrap())),
            WatchEvent::Deleted(o) => seen.push(("DELETED", o.resource_version().unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    seen
}

#[tokio::test]
async fn each_write_takes_the_next_resource_version_and_reaches_watches_once() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "team-a");
    let start = server.resource_version().to_string();
    let mut watch = api
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();

    let created = api
        .create(&PostParams::default(), &cm("app", "1"))
        .await
        .unwrap();
    assert_eq!(created.namespace().as_deref(), Some("team-a"));
    assert!(created.uid().is_some());
    let mut changed = created.clone();
    changed.data = Some([("value".to_owned(), "2".to_owned())].into());
    let replaced = api
        .replace("app", &PostParams::default(), &changed)
        .await
        .unwrap();
    let patched = api
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"mirror": "true"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.labels()["mirror"], "true");
    assert_eq!(patched.data.as_ref().unwrap()["value"], "2");
    assert_eq!(patched.uid(), created.uid());
    // A ConfigMap without finalizers goes at once; the API server answers
    // with a `Status` naming it (DL1).
    let deleted = api.delete("app", &DeleteParams::default()).await.unwrap();
    let status = deleted.right().expect("a Status for a ConfigMap");
    assert_eq!(status.details.unwrap().uid, created.uid().unwrap());
    let deleted_rv = server.resource_version().to_string();

    let rvs: Vec<String> = [&created, &replaced, &patched]
        .iter()
        .map(|o| o.resource_version().unwrap())
        .chain([deleted_rv])
        .collect();
    let numbers: Vec<u64> = rvs.iter().map(|rv| rv.parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    assert_eq!(server.resource_version(), numbers[3]);
    let events = next_events(&mut watch, 4).await;
    let expected: Vec<(&str, String)> = ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
        .into_iter()
        .zip(rvs)
        .collect();
    assert_eq!(events, expected);
    assert!(server.objects::<ConfigMap>().is_empty());
}

#[tokio::test]
async fn a_write_that_changes_nothing_takes_no_resource_version() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("app", "1"))
        .await
        .unwrap();
    let rv = server.resource_version();
    let same = api
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": "1"}})),
        )
        .await
        .unwrap();
    let replaced = api
        .replace("app", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(server.resource_version(), rv);
    assert_eq!(same.resource_version(), created.resource_version());
    assert_eq!(replaced.resource_version(), created.resource_version());
}

#[tokio::test]
async fn merge_patch_null_removes_a_label_and_a_resource_version_is_a_precondition() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut labelled = cm("app", "1");
    labelled.metadata.labels = Some(
        [
            ("mirror".to_owned(), "true".to_owned()),
            ("keep".to_owned(), "x".to_owned()),
        ]
        .into(),
    );
    let created = api.create(&PostParams::default(), &labelled).await.unwrap();
    let patched = api
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"mirror": null}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.labels().keys().collect::<Vec<_>>(), ["keep"]);

    // The patch names the resourceVersion it was computed from: stale now.
    let stale = json!({"metadata": {"resourceVersion": created.resource_version(), "labels": {"late": "1"}}});
    let (status, reason) = code(
        api.patch("app", &PatchParams::default(), &Patch::Merge(stale))
            .await,
    );
    assert_eq!((status, reason.as_str()), (409, "Conflict"));
    assert!(!api.get("app").await.unwrap().labels().contains_key("late"));
}

#[tokio::test]
async fn refusals_match_the_api_server() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("app", "1"))
        .await
        .unwrap();

    let again = api.create(&PostParams::default(), &cm("app", "1")).await;
    assert_eq!(code(again), (409, "AlreadyExists".into()));
    assert_eq!(code(api.get("missing").await), (404, "NotFound".into()));
    assert_eq!(
        code(
            api.replace("missing", &PostParams::default(), &cm("missing", "1"))
                .await
        ),
        (404, "NotFound".into())
    );
    assert_eq!(
        code(api.delete("missing", &DeleteParams::default()).await),
        (404, "NotFound".into())
    );

    // Replacing from an old copy loses to the newer write.
    let mut newer = created.clone();
    newer.data = Some([("value".to_owned(), "2".to_owned())].into());
    api.replace("app", &PostParams::default(), &newer)
        .await
        .unwrap();
    assert_eq!(
        code(api.replace("app", &PostParams::default(), &created).await),
        (409, "Conflict".into())
    );

    // A body naming another object or namespace than the URL.
    assert_eq!(
        code(
            api.replace("app", &PostParams::default(), &cm("other", "1"))
                .await
        )
        .0,
        400
    );
    let mut elsewhere = cm("x", "1");
    elsewhere.metadata.namespace = Some("elsewhere".into());
    assert_eq!(
        code(api.create(&PostParams::default(), &elsewhere).await).0,
        400
    );

    // A delete whose precondition no longer holds.
    let precondition = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: created.resource_version(),
            uid: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        code(api.delete("app", &precondition).await),
        (409, "Conflict".into())
    );
    assert_eq!(api.get("app").await.unwrap().data.unwrap()["value"], "2");
}

#[tokio::test]
async fn generate_name_gives_a_fresh_name() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut object = ConfigMap::default();
    object.metadata.generate_name = Some("copy-".into());
    let a = api.create(&PostParams::default(), &object).await.unwrap();
    let b = api.create(&PostParams::default(), &object).await.unwrap();
    assert!(a.name_any().starts_with("copy-"));
    assert_ne!(a.name_any(), b.name_any());
}

#[tokio::test]
async fn namespaces_are_written_like_any_resource_and_their_deletion_empties_them() {
    let server = FakeApiServer::start().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    let in_ns: Api<ConfigMap> = Api::namespaced(server.client(), "team-a");
    let all: Api<ConfigMap> = Api::all(server.client());
    namespaces
        .create(&PostParams::default(), &namespace("team-a"))
        .await
        .unwrap();
    in_ns
        .create(&PostParams::default(), &cm("one", "1"))
        .await
        .unwrap();
    in_ns
        .create(&PostParams::default(), &cm("two", "2"))
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(server.client(), "team-b")
        .create(&PostParams::default(), &cm("three", "3"))
        .await
        .unwrap();

    let labelled = namespaces
        .patch(
            "team-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"mirror-target": "true"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.labels()["mirror-target"], "true");
    let selected = namespaces
        .list(&ListParams::default().labels("mirror-target=true"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);

    let start = server.resource_version().to_string();
    let mut cm_watch = all
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    let mut ns_watch = namespaces
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    namespaces
        .delete("team-a", &DeleteParams::default())
        .await
        .unwrap();

    let cm_events = next_events(&mut cm_watch, 2).await;
    let ns_events = next_events(&mut ns_watch, 2).await;
    assert!(cm_events.iter().all(|(kind, _)| *kind == "DELETED"));
    // The namespace is marked Terminating first (DL11), its contents go,
    // each with its own resourceVersion, then the namespace (GC7).
    assert_eq!(ns_events[0].0, "MODIFIED");
    assert_eq!(ns_events[1].0, "DELETED");
    let rv = |s: &str| s.parse::<u64>().unwrap();
    assert!(rv(&ns_events[0].1) < rv(&cm_events[0].1));
    assert!(rv(&cm_events[0].1) < rv(&cm_events[1].1));
    assert!(rv(&cm_events[1].1) < rv(&ns_events[1].1));
    let left: Vec<String> = server
        .objects::<ConfigMap>()
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(left, ["three"]);
    assert!(server.objects::<Namespace>().is_empty());
}

#[tokio::test]
async fn write_faults_fail_writes_and_leave_lists_alone() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server.fail_requests(RequestMatch::Write, ApiStatus::internal_error(), 1);
    assert!(api.list(&ListParams::default()).await.is_ok());
    let refused = api.create(&PostParams::default(), &cm("app", "1")).await;
    assert_eq!(code(refused), (500, "InternalError".into()));
    assert!(server.objects::<ConfigMap>().is_empty());
    api.create(&PostParams::default(), &cm("app", "1"))
        .await
        .unwrap();
    assert_eq!(server.objects::<ConfigMap>().len(), 1);
}

#[tokio::test]
async fn delete_collection_deletes_what_the_selector_selects() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for (name, label) in [("a", Some("x")), ("b", None), ("c", Some("x"))] {
        let mut object = cm(name, "1");
        object.metadata.labels = label.map(|v| [("group".to_owned(), v.to_owned())].into());
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    Api::<ConfigMap>::namespaced(server.client(), "other")
        .create(&PostParams::default(), &{
            let mut object = cm("d", "1");
            object.metadata.labels = Some([("group".to_owned(), "x".to_owned())].into());
            object
        })
        .await
        .unwrap();
    let rv = server.resource_version();
    let deleted = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("group=x"),
        )
        .await
        .unwrap()
        .left()
        .unwrap();
    let mut names: Vec<String> = deleted.items.iter().map(|o| o.name_any()).collect();
    names.sort();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(
        server.resource_version(),
        rv + 2,
        "one resourceVersion per deletion"
    );
    let mut left: Vec<String> = server
        .objects::<ConfigMap>()
        .iter()
        .map(|o| o.name_any())
        .collect();
    left.sort();
    assert_eq!(left, ["b", "d"]);
}

#[tokio::test]
async fn sm2_sm3_strategic_merge_patch_merges_containers_by_name() {
    use k8s_openapi::api::apps::v1::Deployment;
    let server = FakeApiServer::start().await;
    let api: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "busybox"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let patch = Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "httpd"},
        {"name": "side", "$patch": "delete"}
    ]}}}}));
    let patched = api
        .patch("web", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let containers = patched.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("httpd"));
    assert_eq!(patched.metadata.generation, Some(2));
}

#[tokio::test]
async fn dr2_dry_run_with_an_unknown_value_is_422() {
    let server = FakeApiServer::start().await;
    let request = axum::http::Request::post("/api/v1/namespaces/default/configmaps?dryRun=Bogus")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&json!({"metadata": {"name": "x"}})).unwrap())
        .unwrap();
    let err = server
        .client()
        .request::<ConfigMap>(request)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err}"
    );
}
