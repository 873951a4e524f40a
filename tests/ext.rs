//! NotificationStreamExt combinators on streams of notifications.

use crate::store_common;

use std::sync::Arc;

use futures::{Stream, StreamExt, stream, stream::FusedStream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Notification, NotificationStreamExt, store::Error};
use store_common::*;

fn input() -> Vec<Notification<ConfigMap>> {
    vec![
        added(cm("ns", "a", "1"), true),
        updated(cm("ns", "a", "1"), cm("ns", "a", "1")), // resync
        updated(cm("ns", "a", "1"), cm("ns", "a", "2")),
        // Same resourceVersion but not flagged: still unchanged.
        Notification::Updated {
            old: cm("ns", "a", "2"),
            new: cm("ns", "a", "2"),
            resync: false,
        },
        deleted(cm("ns", "a", "2")),
    ]
}

#[tokio::test]
async fn changed_only_drops_updates_with_an_unchanged_resource_version() {
    let got: Vec<_> = stream::iter(input())
        .changed_only()
        .map(|n| show(&n))
        .collect()
        .await;
    assert_eq!(got, ["A ns/a@1*", "U ns/a@1->2", "D ns/a@2"]);
}

#[tokio::test]
async fn objects_yields_the_newest_object_of_each() {
    let got: Vec<_> = stream::iter(input())
        .objects()
        .map(|o| o.metadata.resource_version.clone().unwrap())
        .collect()
        .await;
    assert_eq!(got, ["1", "1", "2", "2", "2"]);
}

#[tokio::test]
async fn keys_yields_keys_and_errors_for_nameless_objects() {
    let nameless = Notification::Added {
        object: Arc::new(ConfigMap::default()),
        in_initial_list: false,
    };
    let got: Vec<_> = stream::iter(vec![added(cm("ns", "a", "1"), false), nameless])
        .keys()
        .collect()
        .await;
    assert_eq!(got, [Ok(key("ns/a")), Err(Error::MissingName)]);
}

#[tokio::test]
async fn combinators_are_fused_and_pass_size_hints() {
    let mut s = stream::iter(input()).fuse().objects();
    assert_eq!(s.size_hint(), (5, Some(5)));
    while s.next().await.is_some() {}
    assert!(s.is_terminated());

    let c = stream::iter(input()).changed_only();
    assert_eq!(c.size_hint(), (0, Some(5)));
    let k = stream::iter(input()).fuse().keys();
    assert!(!k.is_terminated());
}
