//! Custom resources (rules CR1–CR7 in `src/crd/mod.rs`) and discovery
//! (D1–D3 in `src/discovery.rs`), through a real `kube::Client` and a
//! `#[derive(CustomResource)]` type.

use crate::common;

use common::api_error;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, CustomResource, CustomResourceExt, Resource, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
        WatchEvent, WatchParams,
    },
    discovery::{Discovery, Scope, pinned_kind},
};
use kube_informer_testing::FakeApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The custom resource under test: `foos.example.com`, namespaced, v1,
/// with a status subresource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    shortname = "fo",
    category = "all"
)]
pub struct FooSpec {
    replicas: i32,
}

/// `Foo`'s status.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct FooStatus {
    ready: bool,
}

fn new_foo(name: &str, replicas: i32) -> Foo {
    let mut object = Foo::new(name, FooSpec { replicas });
    object.metadata.namespace = Some("default".into());
    object
}

/// `Foo::crd()` with a second served version, `v1beta1`, that is not stored.
fn two_version_crd() -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(Foo::crd()).unwrap();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    beta.as_object_mut().unwrap().remove("subresources");
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
    serde_json::from_value(crd).unwrap()
}

fn beta_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1beta1", "Foo"),
        "foos",
    )
}

async fn post_raw(server: &FakeApiServer, path: &str, body: Value) -> (u16, Value) {
    let request = axum::http::Request::post(path)
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    match server.client().request::<Value>(request).await {
        Ok(value) => (200, value),
        Err(kube::Error::Api(status)) => (
            status.code,
            json!({"reason": status.reason, "message": status.message}),
        ),
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test]
async fn cr1_a_registered_crd_serves_create_list_and_watch() {
    let server = FakeApiServer::start().await;
    let types = server.register_crd(&Foo::crd()).unwrap();
    assert_eq!(types.len(), 1);
    assert_eq!(
        (
            types[0].api_version().as_str(),
            types[0].kind.as_str(),
            types[0].namespaced
        ),
        ("example.com/v1", "Foo", true)
    );

    let api: Api<Foo> = Api::namespaced(server.client(), "default");
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = api
        .create(&PostParams::default(), &new_foo("a", 2))
        .await
        .unwrap();
    assert_eq!(created.spec.replicas, 2);
    let stored = server.objects_value(&types[0]);
    assert_eq!(stored[0]["apiVersion"], "example.com/v1");
    assert_eq!(stored[0]["kind"], "Foo");

    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        listed
            .items
            .iter()
            .map(|f| f.name_any())
            .collect::<Vec<_>>(),
        ["a"]
    );
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(added)) => assert_eq!(added.name_any(), "a"),
        other => panic!("expected ADDED, got {other:?}"),
    }
    // The typed test-side methods work on the derived type too.
    server.create(&new_foo("b", 1)).unwrap();
    assert_eq!(server.objects::<Foo>().len(), 2);
}

#[tokio::test]
async fn cr1_a_cluster_scoped_crd_serves_objects_without_namespace() {
    let server = FakeApiServer::start().await;
    let mut crd = serde_json::to_value(Foo::crd()).unwrap();
    crd["spec"]["scope"] = json!("Cluster");
    let types = server.register_crd_value(crd).unwrap();
    assert!(!types[0].namespaced);
    let api: Api<DynamicObject> = Api::all_with(server.client(), &ApiResource::erase::<Foo>(&()));
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "global"}, "spec": {"replicas": 1},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn cr2_a_crd_the_api_server_refuses_is_422() {
    let server = FakeApiServer::start().await;
    let mut misnamed = serde_json::to_value(Foo::crd()).unwrap();
    misnamed["metadata"]["name"] = json!("bad.example.com");
    let refused = server.register_crd_value(misnamed.clone()).unwrap_err();
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"bad.example.com\" is invalid: metadata.name: \
         Invalid value: \"bad.example.com\": must be spec.names.plural+\".\"+spec.group"
    );

    let mut two_storage = serde_json::to_value(two_version_crd()).unwrap();
    two_storage["spec"]["versions"][1]["storage"] = json!(true);
    let refused = server.register_crd_value(two_storage.clone()).unwrap_err();
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains("spec.versions: Invalid value"),
        "{}",
        refused.message
    );
    assert!(
        refused
            .message
            .ends_with("must have exactly one version marked as storage version"),
        "{}",
        refused.message
    );

    // Over HTTP the same, and nothing is stored.
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    for body in [misnamed, two_storage] {
        let body: CustomResourceDefinition = serde_json::from_value(body).unwrap();
        let (code, reason, _) = api_error(crds.create(&PostParams::default(), &body).await);
        assert_eq!((code, reason.as_str()), (422, "Invalid"));
    }
    assert!(
        crds.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn cr3_a_crd_created_over_http_is_defaulted_then_established() {
    let server = FakeApiServer::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let mut events = crds
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = crds
        .create(&PostParams::default(), &Foo::crd())
        .await
        .unwrap();
    assert_eq!(created.spec.conversion.as_ref().unwrap().strategy, "None");
    let status = created.status.clone().unwrap();
    assert_eq!(status.conditions, None);
    assert_eq!(status.accepted_names.as_ref().unwrap().plural, "");
    assert_eq!(status.stored_versions, Some(vec!["v1".to_owned()]));

    let mut seen = Vec::new();
    for _ in 0..3 {
        match events.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(crd) => seen.push(("ADDED", crd)),
            WatchEvent::Modified(crd) => seen.push(("MODIFIED", crd)),
            other => panic!("unexpected {other:?}"),
        }
    }
    let conditions = |crd: &CustomResourceDefinition| {
        crd.status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason.unwrap_or_default()))
            .collect::<Vec<_>>()
    };
    let cond = |t: &str, s: &str, r: &str| (t.to_owned(), s.to_owned(), r.to_owned());
    assert_eq!(
        seen.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        ["ADDED", "MODIFIED", "MODIFIED"]
    );
    assert_eq!(
        conditions(&seen[1].1),
        [
            cond("NamesAccepted", "True", "NoConflicts"),
            cond("Established", "False", "Installing")
        ]
    );
    assert_eq!(
        conditions(&seen[2].1),
        [
            cond("NamesAccepted", "True", "NoConflicts"),
            cond("Established", "True", "InitialNamesAccepted")
        ]
    );
    let accepted = seen[2]
        .1
        .status
        .as_ref()
        .unwrap()
        .accepted_names
        .clone()
        .unwrap();
    assert_eq!(
        (
            accepted.plural.as_str(),
            accepted.kind.as_str(),
            accepted.singular.as_deref()
        ),
        ("foos", "Foo", Some("foo"))
    );

    // The type is served at once.
    let api: Api<Foo> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &new_foo("a", 1))
        .await
        .unwrap();
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn cr4_reads_through_another_served_version_carry_its_api_version() {
    let server = FakeApiServer::start().await;
    let types = server.register_crd(&two_version_crd()).unwrap();
    assert_eq!(
        types.iter().map(|t| t.version.as_str()).collect::<Vec<_>>(),
        ["v1", "v1beta1"]
    );
    let v1: Api<Foo> = Api::namespaced(server.client(), "default");
    let beta: Api<DynamicObject> =
        Api::namespaced_with(server.client(), "default", &beta_resource());
    let mut beta_events = beta
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();

    v1.create(&PostParams::default(), &new_foo("a", 3))
        .await
        .unwrap();
    let read = beta.get("a").await.unwrap();
    assert_eq!(
        read.types.as_ref().unwrap().api_version,
        "example.com/v1beta1"
    );
    assert_eq!(
        read.data["spec"]["replicas"], 3,
        "fields pass through unchanged"
    );
    let listed = beta.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        listed.items[0].types.as_ref().unwrap().api_version,
        "example.com/v1beta1"
    );
    match beta_events.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => {
            assert_eq!(o.types.unwrap().api_version, "example.com/v1beta1")
        }
        other => panic!("expected ADDED, got {other:?}"),
    }

    // A write through v1beta1 is stored at v1 and read back at v1.
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1beta1", "kind": "Foo",
        "metadata": {"name": "b"}, "spec": {"replicas": 5},
    }))
    .unwrap();
    let created = beta.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(v1.get("b").await.unwrap().spec.replicas, 5);
    assert!(
        server
            .objects_value(&types[0])
            .iter()
            .all(|o| o["apiVersion"] == "example.com/v1")
    );
}

#[tokio::test]
async fn cr5_a_body_must_name_the_urls_kind_and_api_version() {
    let server = FakeApiServer::start().await;
    server.register_crd(&two_version_crd()).unwrap();
    let path = "/apis/example.com/v1/namespaces/default/foos";
    let (code, status) = post_raw(
        &server,
        path,
        json!({"apiVersion": "example.com/v1beta1", "kind": "Foo", "metadata": {"name": "b"}}),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "the API version in the data (example.com/v1beta1) does not match the expected API version (example.com/v1)"
    );
    let (code, status) = post_raw(
        &server,
        path,
        json!({"kind": "Foo", "metadata": {"name": "b"}}),
    )
    .await;
    assert_eq!(
        (code, status["message"].as_str().unwrap()),
        (
            400,
            "the API version in the data () does not match the expected API version (example.com/v1)"
        )
    );
    let (code, status) = post_raw(&server, path, json!({"metadata": {"name": "c"}})).await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "the object provided is unrecognized (must be of type Foo): Object 'Kind' is missing in \
         '{\"metadata\":{\"name\":\"c\"}}' ({\"metadata\":{\"name\":\"c\"}})"
    );
    let (code, status) = post_raw(
        &server,
        path,
        json!({"apiVersion": "example.com/v1", "kind": "Bar", "metadata": {"name": "b"}}),
    )
    .await;
    assert_eq!((code, status["reason"].as_str().unwrap()), (422, "Invalid"));
    assert_eq!(
        status["message"],
        "Bar.example.com \"b\" is invalid: kind: Invalid value: \"Bar\": must be Foo"
    );
    // A version the CRD does not serve.
    let (code, _) = post_raw(
        &server,
        "/apis/example.com/v2/namespaces/default/foos",
        json!({"apiVersion": "example.com/v2", "kind": "Foo", "metadata": {"name": "b"}}),
    )
    .await;
    assert_eq!(code, 404);
    assert!(server.objects::<Foo>().is_empty());
}

#[tokio::test]
async fn cr6_deleting_the_crd_deletes_its_objects_and_ends_their_watches() {
    let server = FakeApiServer::start().await;
    let types = server.register_crd(&two_version_crd()).unwrap();
    server.create(&new_foo("a", 1)).unwrap();
    server.create(&new_foo("b", 1)).unwrap();
    let v1: Api<Foo> = Api::all(server.client());
    let beta: Api<DynamicObject> = Api::all_with(server.client(), &beta_resource());
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let from = server.resource_version().to_string();
    let v1_events = v1.watch(&WatchParams::default(), &from).await.unwrap();
    let beta_events = beta.watch(&WatchParams::default(), &from).await.unwrap();
    let crd_events = crds.watch(&WatchParams::default(), &from).await.unwrap();
    server.wait_until(|_, open| open == 3).await;

    let answered = crds
        .delete("foos.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let marked = answered
        .left()
        .expect("the CRD is answered marked for deletion");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.finalizers(),
        ["customresourcecleanup.apiextensions.k8s.io"]
    );

    // Each watch of the type sees both deletions, then ends.
    let names = |events: Vec<(String, String)>| events;
    let ended = |what| move |_| panic!("the {what} watch did not end");
    let v1_seen: Vec<_> = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        v1_events
            .map(|e| match e.unwrap() {
                WatchEvent::Deleted(f) => ("DELETED".to_owned(), f.name_any()),
                other => (format!("{other:?}"), String::new()),
            })
            .collect(),
    )
    .await
    .unwrap_or_else(ended("v1"));
    assert_eq!(
        names(v1_seen),
        [
            ("DELETED".to_owned(), "a".to_owned()),
            ("DELETED".to_owned(), "b".to_owned())
        ]
    );
    let beta_seen: Vec<_> = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        beta_events
            .map(|e| match e.unwrap() {
                WatchEvent::Deleted(o) => (o.types.clone().unwrap().api_version, o.name_any()),
                other => (format!("{other:?}"), String::new()),
            })
            .collect(),
    )
    .await
    .unwrap_or_else(ended("v1beta1"));
    assert_eq!(
        beta_seen,
        [
            ("example.com/v1beta1".to_owned(), "a".to_owned()),
            ("example.com/v1beta1".to_owned(), "b".to_owned())
        ]
    );

    // The CRD: marked, cleanup in progress, gone.
    let crd_seen: Vec<_> = crd_events
        .take(3)
        .map(|e| match e.unwrap() {
            WatchEvent::Modified(c) => format!(
                "MODIFIED {}",
                c.status
                    .unwrap()
                    .conditions
                    .unwrap()
                    .last()
                    .unwrap()
                    .reason
                    .clone()
                    .unwrap()
            ),
            WatchEvent::Deleted(_) => "DELETED".to_owned(),
            other => format!("{other:?}"),
        })
        .collect()
        .await;
    assert_eq!(
        crd_seen,
        [
            "MODIFIED InstanceDeletionPending",
            "MODIFIED InstanceDeletionInProgress",
            "DELETED"
        ]
    );

    assert_eq!(api_error(v1.list(&ListParams::default()).await).0, 404);
    assert_eq!(api_error(beta.list(&ListParams::default()).await).0, 404);
    assert!(server.objects_value(&types[0]).is_empty());
    assert_eq!(api_error(crds.get("foos.example.com").await).0, 404);
}

#[tokio::test]
async fn cr7_the_status_subresource_comes_from_the_crd_version() {
    let server = FakeApiServer::start().await;
    let types = server.register_crd(&two_version_crd()).unwrap();
    assert!(
        types[0].status_subresource,
        "v1 declares subresources.status"
    );
    assert!(!types[1].status_subresource, "v1beta1 does not");
}

#[tokio::test]
async fn d1_d2_d3_kube_discovery_finds_the_custom_resource() {
    let server = FakeApiServer::start().await;
    server.register_crd(&two_version_crd()).unwrap();
    server.create(&new_foo("a", 1)).unwrap();

    let discovery = Discovery::new(server.client()).run().await.unwrap();
    let group = discovery
        .get("example.com")
        .expect("the CRD's group is discovered");
    assert_eq!(group.preferred_version_or_latest(), "v1");
    assert_eq!(group.versions().collect::<Vec<_>>(), ["v1", "v1beta1"]);
    let (resource, caps) = group.recommended_kind("Foo").unwrap();
    assert_eq!(
        (resource.plural.as_str(), resource.api_version.as_str()),
        ("foos", "example.com/v1")
    );
    assert_eq!(caps.scope, Scope::Namespaced);
    assert_eq!(
        caps.subresources
            .iter()
            .map(|(r, _)| r.plural.as_str())
            .collect::<Vec<_>>(),
        ["status"]
    );
    assert!(
        discovery
            .get("")
            .is_some_and(|core| core.recommended_kind("ConfigMap").is_some())
    );

    // The discovered resource drives kube's dynamic API.
    let gvk = GroupVersionKind::gvk("example.com", "v1beta1", "Foo");
    let (beta, _) = pinned_kind(&server.client(), &gvk).await.unwrap();
    let objects = Api::<DynamicObject>::all_with(server.client(), &beta)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(
        objects.items[0].types.as_ref().unwrap().api_version,
        "example.com/v1beta1"
    );
    assert_eq!(Foo::api_version(&()), "example.com/v1");
}

#[tokio::test]
async fn d3_a_group_or_version_nobody_serves_is_404() {
    let server = FakeApiServer::start().await;
    server.register_crd(&Foo::crd()).unwrap();
    let client = server.client();
    let get = |path: &str| axum::http::Request::get(path).body(Vec::new()).unwrap();
    let list: Value = client.request(get("/apis/example.com/v1")).await.unwrap();
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["foos", "foos/status"]);
    assert_eq!(list["resources"][0]["shortNames"], json!(["fo"]));
    assert_eq!(list["resources"][0]["categories"], json!(["all"]));
    assert_eq!(
        api_error(client.request::<Value>(get("/apis/nope.example.com")).await).0,
        404
    );
    assert_eq!(
        api_error(client.request::<Value>(get("/apis/example.com/v9")).await).0,
        404
    );
    let core: Value = client.request(get("/api")).await.unwrap();
    assert_eq!(core["versions"], json!(["v1"]));
}

#[tokio::test]
async fn wr1_a_custom_resource_is_replaced_only_with_a_resource_version() {
    let server = FakeApiServer::start().await;
    server.register_crd(&Foo::crd()).unwrap();
    let api: Api<Foo> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &new_foo("a", 1))
        .await
        .unwrap();

    let mut unconditional = new_foo("a", 2);
    unconditional.metadata.resource_version = None;
    let (code, reason, message) = api_error(
        api.replace("a", &PostParams::default(), &unconditional)
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "foos.example.com \"a\" is invalid: metadata.resourceVersion: Invalid value: 0: \
         must be specified for an update"
    );
    assert_eq!(
        api.get("a").await.unwrap().spec.replicas,
        1,
        "nothing written"
    );

    let mut conditional = new_foo("a", 2);
    conditional.metadata.resource_version = created.resource_version();
    let replaced = api
        .replace("a", &PostParams::default(), &conditional)
        .await
        .unwrap();
    assert_eq!(replaced.spec.replicas, 2);
}
