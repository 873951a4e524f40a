//! Garbage collection through `ownerReferences` with a real `kube::Client`
//! (rules GC1–GC9 in the crate's `gc` module): background, foreground and
//! orphan propagation, run inside the write that starts them, one event per
//! step in a fixed order.

use crate::common;

use common::{next_event, watch_configmaps};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Node},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent},
};
use kube_informer_testing::FakeApiServer;
use serde_json::json;

/// A reference to `owner`; `blocks` sets `blockOwnerDeletion`.
fn owned_by<K: Resource<DynamicType = ()>>(owner: &K, blocks: bool) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap(),
        uid: owner.meta().uid.clone().unwrap(),
        block_owner_deletion: Some(blocks),
        controller: None,
    }
}

fn cm(name: &str, owners: Vec<OwnerReference>, finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !owners.is_empty() {
        cm.metadata.owner_references = Some(owners);
    }
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    }
    cm
}

/// Type and name of the next `n` watch events (their resourceVersions are
/// checked to rise by one each).
async fn next_events(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
    n: usize,
) -> Vec<(&'static str, String)> {
    let mut seen = Vec::new();
    let mut last_rv = None;
    while seen.len() < n {
        let (kind, object) = next_event(stream).await;
        let rv: u64 = object.resource_version().unwrap().parse().unwrap();
        if let Some(last) = last_rv {
            assert_eq!(rv, last + 1, "one resourceVersion per step");
        }
        last_rv = Some(rv);
        seen.push((kind, object.name_any()));
    }
    seen
}

fn names(list: &[ConfigMap]) -> Vec<String> {
    list.iter().map(|o| o.name_any()).collect()
}

async fn create(api: &Api<ConfigMap>, object: ConfigMap) -> ConfigMap {
    api.create(&PostParams::default(), &object).await.unwrap()
}

#[tokio::test]
async fn gc2_background_deletes_dependents_after_their_owner() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, cm("owner", vec![], &[])).await;
    let other = create(&api, cm("other-owner", vec![], &[])).await;
    create(&api, cm("dep-b", vec![owned_by(&owner, false)], &[])).await;
    create(&api, cm("dep-a", vec![owned_by(&owner, true)], &[])).await;
    create(
        &api,
        cm(
            "dep-held",
            vec![owned_by(&owner, false)],
            &["example.com/f"],
        ),
    )
    .await;
    create(
        &api,
        cm(
            "dep-shared",
            vec![owned_by(&owner, false), owned_by(&other, false)],
            &[],
        ),
    )
    .await;
    let mut watch = watch_configmaps(&server).await;

    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    // The owner first, then its dependents in name order (GC5); the one with
    // another owner loses the reference, the held one is marked.
    assert_eq!(
        next_events(&mut watch, 5).await,
        [
            ("DELETED", "owner".into()),
            ("DELETED", "dep-a".into()),
            ("DELETED", "dep-b".into()),
            ("MODIFIED", "dep-held".into()),
            ("MODIFIED", "dep-shared".into()),
        ]
    );
    let left = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(names(&left), ["dep-held", "dep-shared", "other-owner"]);
    assert!(left[0].metadata.deletion_timestamp.is_some());
    let shared_owners: Vec<String> = left[1]
        .owner_references()
        .iter()
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(shared_owners, ["other-owner"]);
}

#[tokio::test]
async fn gc3_foreground_waits_for_blocking_dependents() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, cm("owner", vec![], &[])).await;
    create(
        &api,
        cm("blocker", vec![owned_by(&owner, true)], &["example.com/f"]),
    )
    .await;
    create(
        &api,
        cm("loose", vec![owned_by(&owner, false)], &["example.com/f"]),
    )
    .await;
    let mut watch = watch_configmaps(&server).await;

    let marked = api
        .delete("owner", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(marked.finalizers(), ["foregroundDeletion"]);
    assert_eq!(
        next_events(&mut watch, 3).await,
        [
            ("MODIFIED", "owner".into()),
            ("MODIFIED", "blocker".into()),
            ("MODIFIED", "loose".into()),
        ]
    );
    // The blocking dependent holds the owner; the loose one does not.
    api.patch(
        "loose",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get("owner").await.is_ok());
    api.patch(
        "blocker",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(
        next_events(&mut watch, 3).await,
        [
            ("DELETED", "loose".into()),
            ("DELETED", "blocker".into()),
            ("DELETED", "owner".into()),
        ]
    );
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn gc3_foreground_goes_down_the_tree_first() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let root = create(&api, cm("root", vec![], &[])).await;
    let child = create(&api, cm("child", vec![owned_by(&root, true)], &[])).await;
    create(&api, cm("grandchild", vec![owned_by(&child, true)], &[])).await;
    let mut watch = watch_configmaps(&server).await;

    api.delete("root", &DeleteParams::foreground())
        .await
        .unwrap();
    assert_eq!(
        next_events(&mut watch, 5).await,
        [
            ("MODIFIED", "root".into()),
            ("MODIFIED", "child".into()),
            ("DELETED", "grandchild".into()),
            ("DELETED", "child".into()),
            ("DELETED", "root".into()),
        ]
    );
}

#[tokio::test]
async fn gc4_orphan_strips_the_references_then_lets_the_owner_go() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, cm("owner", vec![], &[])).await;
    let other = create(&api, cm("other", vec![], &[])).await;
    create(&api, cm("dep-a", vec![owned_by(&owner, true)], &[])).await;
    create(
        &api,
        cm(
            "dep-b",
            vec![owned_by(&owner, false), owned_by(&other, false)],
            &[],
        ),
    )
    .await;
    let mut watch = watch_configmaps(&server).await;

    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    assert_eq!(
        next_events(&mut watch, 4).await,
        [
            ("MODIFIED", "owner".into()),
            ("MODIFIED", "dep-a".into()),
            ("MODIFIED", "dep-b".into()),
            ("DELETED", "owner".into()),
        ]
    );
    let left = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(names(&left), ["dep-a", "dep-b", "other"]);
    assert!(left[0].metadata.owner_references.is_none());
    assert_eq!(left[1].owner_references().len(), 1);
}

#[tokio::test]
async fn gc1_a_namespaced_owner_owns_only_its_namespace_a_cluster_owner_any() {
    let server = FakeApiServer::start().await;
    let here: Api<ConfigMap> = Api::namespaced(server.client(), "here");
    let there: Api<ConfigMap> = Api::namespaced(server.client(), "there");
    let owner = create(&here, cm("owner", vec![], &[])).await;
    create(&here, cm("dep", vec![owned_by(&owner, false)], &[])).await;
    create(&there, cm("dep", vec![owned_by(&owner, false)], &[])).await;
    here.delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        here.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        there
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let nodes: Api<Node> = Api::all(server.client());
    let mut node = Node::default();
    node.metadata.name = Some("node-1".into());
    let node = nodes.create(&PostParams::default(), &node).await.unwrap();
    create(&here, cm("on-node", vec![owned_by(&node, false)], &[])).await;
    create(&there, cm("on-node", vec![owned_by(&node, false)], &[])).await;
    nodes
        .delete("node-1", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        here.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        names(&there.list(&ListParams::default()).await.unwrap().items),
        ["dep"]
    );
}

#[tokio::test]
async fn gc6_a_dependent_of_an_owner_that_never_existed_is_left_alone() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let phantom = OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "phantom".into(),
        uid: "never-existed".into(),
        ..OwnerReference::default()
    };
    create(&api, cm("orphaned", vec![phantom], &[])).await;
    create(&api, cm("unrelated", vec![], &[])).await;
    api.delete("unrelated", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        names(&api.list(&ListParams::default()).await.unwrap().items),
        ["orphaned"]
    );
}

#[tokio::test]
async fn gc8_the_test_side_delete_runs_the_collector_before_it_returns() {
    let server = FakeApiServer::start().await;
    let mut owner = cm("owner", vec![], &[]);
    owner.metadata.namespace = Some("default".into());
    let owner = server.create(&owner).unwrap();
    let mut dep = cm("dep", vec![owned_by(&owner, true)], &[]);
    dep.metadata.namespace = Some("default".into());
    server.create(&dep).unwrap();
    let before = server.resource_version();
    server
        .delete::<ConfigMap>(Some("default"), "owner")
        .unwrap();
    assert!(server.objects::<ConfigMap>().is_empty());
    assert_eq!(server.resource_version(), before + 2);
}

/// Runs one cascade on a fresh server and returns every event it made.
async fn cascade_events() -> Vec<(&'static str, String)> {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let root = create(&api, cm("root", vec![], &[])).await;
    for name in ["m", "c", "x", "a"] {
        let dep = create(&api, cm(name, vec![owned_by(&root, true)], &[])).await;
        create(
            &api,
            cm(&format!("{name}-leaf"), vec![owned_by(&dep, true)], &[]),
        )
        .await;
    }
    let mut watch = watch_configmaps(&server).await;
    let before = server.resource_version();
    api.delete("root", &DeleteParams::foreground())
        .await
        .unwrap();
    let steps = (server.resource_version() - before) as usize;
    next_events(&mut watch, steps).await
}

#[tokio::test]
async fn gc5_a_cascade_repeats_exactly() {
    let first = cascade_events().await;
    assert_eq!(first.len(), 1 + 4 * 3 + 1, "{first:?}");
    assert_eq!(first, cascade_events().await);
    assert_eq!(
        first[1],
        ("MODIFIED", "a".into()),
        "dependents in name order"
    );
}

#[tokio::test]
async fn gc3_a_cycle_of_blocking_owners_stays_marked_and_the_write_returns() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let a = create(&api, cm("a", vec![], &[])).await;
    let b = create(&api, cm("b", vec![owned_by(&a, true)], &[])).await;
    let mut a_owned = api.get("a").await.unwrap();
    a_owned.metadata.owner_references = Some(vec![owned_by(&b, true)]);
    api.replace("a", &PostParams::default(), &a_owned)
        .await
        .unwrap();

    api.delete("a", &DeleteParams::foreground()).await.unwrap();
    // Each waits for the other, as with the real collector: both stay
    // marked, and nothing loops.
    let left = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(names(&left), ["a", "b"]);
    assert!(
        left.iter()
            .all(|o| o.finalizers() == ["foregroundDeletion"])
    );
    // A background delete drops the finalizer of one (DL3) and breaks the
    // cycle.
    api.delete("b", &DeleteParams::background()).await.unwrap();
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn gc9_a_dependent_written_after_its_owner_went_is_collected() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, cm("owner", vec![], &[])).await;
    let other = create(&api, cm("other-owner", vec![], &[])).await;
    create(&api, cm("dep-updated", vec![], &[])).await;
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    // A controller whose cache still holds the owner writes dependents.
    let mut watch = watch_configmaps(&server).await;
    create(&api, cm("dep-created", vec![owned_by(&owner, false)], &[])).await;
    let patch = json!({"metadata": {"ownerReferences": [owned_by(&owner, false)]}});
    api.patch(
        "dep-updated",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
    // One with another owner still there only loses the gone reference.
    create(
        &api,
        cm(
            "dep-shared",
            vec![owned_by(&owner, false), owned_by(&other, false)],
            &[],
        ),
    )
    .await;
    assert_eq!(
        next_events(&mut watch, 6).await,
        [
            ("ADDED", "dep-created".into()),
            ("DELETED", "dep-created".into()),
            ("MODIFIED", "dep-updated".into()),
            ("DELETED", "dep-updated".into()),
            ("ADDED", "dep-shared".into()),
            ("MODIFIED", "dep-shared".into()),
        ]
    );
    let left = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(names(&left), ["dep-shared", "other-owner"]);
    assert_eq!(left[0].owner_references(), [owned_by(&other, false)]);

    // An owner of the same name but another uid is not the one referred to.
    let again = create(&api, cm("owner", vec![], &[])).await;
    assert_ne!(again.uid(), owner.uid());
    create(&api, cm("dep-late", vec![owned_by(&owner, false)], &[])).await;
    assert!(api.get_opt("dep-late").await.unwrap().is_none());
}
