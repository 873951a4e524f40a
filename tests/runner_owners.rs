//! The owner mapper (rule E5 in `kube_informer::runner`): a child's
//! controller owner of the asked type, matched by API group and kind across
//! served versions, for typed owners and for dynamic ones.

use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::{
    api::{
        apps::v1::ReplicaSet,
        core::v1::{ConfigMap, Pod},
    },
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube_informer::{
    Notification, ObjectKey,
    queue::WorkQueue,
    runner::{OwnerStreamExt, controller_owner_key, controller_owner_key_with},
};

fn owner(api_version: &str, kind: &str, name: &str, controller: Option<bool>) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        controller,
        ..Default::default()
    }
}

/// A controller owner reference.
fn controller(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    owner(api_version, kind, name, Some(true))
}

fn pod(name: &str, owners: Vec<OwnerReference>) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("apps".into());
    pod.metadata.name = Some(name.into());
    pod.metadata.owner_references = Some(owners);
    Arc::new(pod)
}

fn config_map(name: &str, owners: Vec<OwnerReference>) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("shop".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.owner_references = Some(owners);
    Arc::new(cm)
}

fn added<K>(object: Arc<K>) -> Notification<K> {
    Notification::Added {
        object,
        in_initial_list: false,
    }
}

/// What a stream of owner keys puts in a queue, in order.
async fn queued<S>(keys: S) -> Vec<String>
where
    S: Stream<Item = ObjectKey> + Send + 'static,
{
    let queue = WorkQueue::new();
    queue.feed(keys).await;
    std::iter::from_fn(|| queue.try_next().map(|k| k.to_string())).collect()
}

/// A custom resource kind served as example.com/v1 and example.com/v1beta1.
fn database() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Database"))
}

/// E5: only a controller owner of the asked group and kind counts, and the
/// controller is found among several owners; deletions map too.
#[tokio::test]
async fn e5_owner_keys_maps_children_to_their_controller_owner() {
    let notifications = stream::iter([
        added(pod("a", vec![controller("apps/v1", "ReplicaSet", "web")])),
        // Not the controller, wrong kind, wrong group: skipped.
        added(pod(
            "b",
            vec![owner("apps/v1", "ReplicaSet", "other", None)],
        )),
        added(pod("c", vec![controller("apps/v1", "StatefulSet", "db")])),
        added(pod(
            "d",
            vec![controller("extensions/v1beta1", "ReplicaSet", "old")],
        )),
        // The controller among several owners.
        added(pod(
            "e",
            vec![
                owner("v1", "ConfigMap", "cfg", Some(false)),
                controller("apps/v1", "ReplicaSet", "api"),
            ],
        )),
        Notification::Deleted {
            object: pod("f", vec![controller("apps/v1", "ReplicaSet", "web")]),
            final_state_unknown: true,
        },
    ]);
    assert_eq!(
        queued(notifications.owner_keys::<ReplicaSet>()).await,
        ["apps/web", "apps/api"]
    );
}

/// E5: a reference written under another served version of the owner's
/// group and kind names the same owner.
#[tokio::test]
async fn e5_another_version_of_the_same_group_and_kind_matches() {
    for api_version in ["apps/v1", "apps/v1beta2", "apps/v1beta1", "apps/v2alpha1"] {
        let child = pod("p", vec![controller(api_version, "ReplicaSet", "web")]);
        assert_eq!(
            controller_owner_key::<ReplicaSet, _>(&*child).map(|k| k.to_string()),
            Some("apps/web".to_string()),
            "{api_version}"
        );
    }
    let notifications = stream::iter([
        added(pod(
            "a",
            vec![controller("apps/v1beta2", "ReplicaSet", "old")],
        )),
        added(pod("b", vec![controller("apps/v1", "ReplicaSet", "new")])),
    ]);
    assert_eq!(
        queued(notifications.owner_keys::<ReplicaSet>()).await,
        ["apps/old", "apps/new"]
    );
}

/// E5: the same kind in another group is another kind: no match, whatever
/// the version, the core group included.
#[test]
fn e5_the_same_kind_in_another_group_does_not_match() {
    for api_version in [
        "extensions/v1beta1",
        "example.com/v1",
        "apps.example.com/v1",
        "v1",
    ] {
        let child = pod("p", vec![controller(api_version, "ReplicaSet", "web")]);
        assert_eq!(
            controller_owner_key::<ReplicaSet, _>(&*child),
            None,
            "{api_version}"
        );
    }
    // Kinds are compared exactly.
    let child = pod("p", vec![controller("apps/v1", "replicaset", "web")]);
    assert_eq!(controller_owner_key::<ReplicaSet, _>(&*child), None);
}

/// E5: the core group is `""`, written as a bare version.
#[test]
fn e5_a_core_group_owner_is_matched_by_its_bare_version() {
    let child = pod("p", vec![controller("v1", "ConfigMap", "settings")]);
    assert_eq!(
        controller_owner_key::<ConfigMap, _>(&*child).map(|k| k.to_string()),
        Some("apps/settings".to_string())
    );
    let child = pod("p", vec![controller("example.com/v1", "ConfigMap", "x")]);
    assert_eq!(controller_owner_key::<ConfigMap, _>(&*child), None);
}

/// E5: a reference that is not the controller does not count, though its
/// group and kind match.
#[tokio::test]
async fn e5_a_reference_that_is_not_the_controller_does_not_match() {
    for flag in [None, Some(false)] {
        let child = pod("p", vec![owner("apps/v1", "ReplicaSet", "web", flag)]);
        assert_eq!(controller_owner_key::<ReplicaSet, _>(&*child), None);
    }
    let notifications = stream::iter([added(pod(
        "p",
        vec![owner("apps/v1beta2", "ReplicaSet", "web", Some(false))],
    ))]);
    assert!(
        queued(notifications.owner_keys::<ReplicaSet>())
            .await
            .is_empty()
    );
}

/// E5 on bad input: an apiVersion that is neither `version` nor
/// `group/version` matches no owner, and nothing panics.
#[test]
fn e5_a_malformed_api_version_matches_no_owner() {
    for api_version in ["", "/", "apps/", "/v1", "apps/v1/extra"] {
        let child = pod("p", vec![controller(api_version, "ReplicaSet", "web")]);
        assert_eq!(
            controller_owner_key::<ReplicaSet, _>(&*child),
            None,
            "{api_version:?}"
        );
    }
}

/// E5 for dynamic types: a DynamicObject owner, described by an
/// ApiResource, matches by its group and kind across served versions, and
/// not in another group or as a non-controller.
#[tokio::test]
async fn e5_a_dynamic_object_owner_matches_through_its_api_resource() {
    let db = database();
    let key = |child: &ConfigMap| {
        controller_owner_key_with::<DynamicObject, _>(child, &db).map(|k| k.to_string())
    };
    assert_eq!(
        key(&config_map(
            "a",
            vec![controller("example.com/v1", "Database", "orders")]
        )),
        Some("shop/orders".to_string())
    );
    assert_eq!(
        key(&config_map(
            "b",
            vec![controller("example.com/v1beta1", "Database", "orders")]
        )),
        Some("shop/orders".to_string())
    );
    assert_eq!(
        key(&config_map(
            "c",
            vec![controller("other.io/v1", "Database", "orders")]
        )),
        None
    );

    let notifications = stream::iter([
        added(config_map(
            "a",
            vec![controller("example.com/v1beta1", "Database", "legacy")],
        )),
        added(config_map(
            "b",
            vec![owner("example.com/v1", "Database", "borrowed", None)],
        )),
        added(config_map(
            "c",
            vec![controller("other.io/v1", "Database", "elsewhere")],
        )),
        added(config_map(
            "d",
            vec![
                owner("example.com/v1", "Database", "borrowed", Some(false)),
                controller("example.com/v1", "Database", "current"),
            ],
        )),
    ]);
    assert_eq!(
        queued(notifications.owner_keys_with::<DynamicObject>(database())).await,
        ["shop/legacy", "shop/current"]
    );
}

/// E5: `owner_keys_with::<O>(())` is `owner_keys::<O>()`, and the stream
/// passes the upper size hint and fuses like the other notification
/// combinators.
#[tokio::test]
async fn e5_the_short_form_is_the_dynamic_form_with_unit() {
    use futures::stream::FusedStream;
    let children = || {
        stream::iter([
            added(pod("a", vec![controller("apps/v1", "ReplicaSet", "web")])),
            added(pod(
                "b",
                vec![controller("apps/v1beta2", "ReplicaSet", "x")],
            )),
            added(pod("c", vec![])),
        ])
    };
    assert_eq!(
        queued(children().owner_keys::<ReplicaSet>()).await,
        queued(children().owner_keys_with::<ReplicaSet>(())).await
    );
    let mut keys = children().fuse().owner_keys::<ReplicaSet>();
    assert_eq!(keys.size_hint(), (0, Some(3)));
    while keys.next().await.is_some() {}
    assert!(keys.is_terminated());
}
