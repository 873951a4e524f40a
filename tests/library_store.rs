//! What a user of the library relies on around the store: an informer's
//! store follows its writer and survives a panicking indexer, the builder's
//! transforms compose, and `objects()` mapped by a custom key function
//! agrees with it.

use crate::cache_mode_common::CacheModeExt;

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
};
use kube::api::ObjectMeta;
use kube_informer::{
    Informer, Notification, NotificationStreamExt, ObjectKey, informer, source::Event, store,
};

fn cm(name: &str, app: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some(rv.into()),
            labels: Some([("app".to_string(), app.to_string())].into()),
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

fn app(cm: &ConfigMap) -> &str {
    &cm.metadata.labels.as_ref().unwrap()["app"]
}

fn events(
    items: Vec<Event<ConfigMap>>,
) -> impl futures::Stream<Item = Result<Event<ConfigMap>, std::io::Error>> {
    futures::stream::iter(items.into_iter().map(Ok))
}

/// An index function that panics on one version: that version is skipped
/// (no notification, store unchanged), the panic reaches `errors()` named
/// by its index, and the next version is an update from the last stored
/// one.
#[tokio::test]
async fn an_indexer_panic_skips_that_version_and_is_reported() {
    let informer = Informer::builder_from_stream(events(vec![
        Event::ListStart,
        Event::Listed(cm("a", "web", "1")),
        Event::ListDone {
            resource_version: "1".into(),
        },
        Event::Modified(cm("a", "boom", "2")),
        Event::Modified(cm("a", "db", "3")),
    ]))
    .cache_from_env()
    .indexer("by-app", |cm: &ConfigMap| {
        let app = app(cm).to_owned();
        assert_ne!(app, "boom", "unindexable app");
        vec![app]
    })
    .build();
    let subscription = informer.subscribe(Default::default()).unwrap();
    let errors = informer.errors();
    informer.run().await.unwrap();

    let seen: Vec<_> = subscription
        .map(|n| match n {
            Notification::Added { object, .. } => format!("added {}", app(&object)),
            Notification::Updated { old, new, .. } => {
                format!("updated {} -> {}", app(&old), app(&new))
            }
            Notification::Deleted { object, .. } => format!("deleted {}", app(&object)),
        })
        .collect()
        .await;
    assert_eq!(seen, ["added web", "updated web -> db"]);

    let errors: Vec<_> = errors.collect().await;
    assert_eq!(errors.len(), 1);
    let informer::Error::Store(error) = &errors[0] else {
        panic!("unexpected error {:?}", errors[0]);
    };
    assert!(
        matches!(&**error, store::Error::IndexerPanicked { index, message }
            if index == "by-app" && message.contains("unindexable app")),
        "{error:?}"
    );
    assert_eq!(informer.metrics().errors, 1);

    let store = informer.store();
    assert_eq!(store.index_values("by-app").unwrap(), ["db"]);
    assert_eq!(app(&store.get_by(Some("default"), "a").unwrap()), "db");
}

#[tokio::test]
async fn strip_managed_fields_composes_with_the_transform() {
    let informer = Informer::builder_from_stream(events(vec![Event::Added(cm("a", "web", "1"))]))
        .cache_from_env()
        .transform(|mut cm: ConfigMap| {
            // The transform sees the object already stripped.
            assert_eq!(cm.metadata.managed_fields, None);
            cm.data = None;
            Ok(cm)
        })
        .strip_managed_fields()
        .build();
    informer.run().await.unwrap();
    assert_eq!(informer.metrics().errors, 0);
    let cached = informer.store().get_by(Some("default"), "a").unwrap();
    assert_eq!(cached.metadata.managed_fields, None);
    assert_eq!(cached.data, None);
}

/// With a custom key function, `objects()` mapped by the same function
/// gives the store's keys; `keys()` keys by `namespace/name`, as it documents.
#[tokio::test]
async fn objects_mapped_by_a_custom_key_function_agree_with_it() {
    fn by_uid(cm: &ConfigMap) -> Result<ObjectKey, store::Error> {
        ObjectKey::new(
            None,
            cm.metadata
                .uid
                .as_deref()
                .ok_or(store::Error::MissingName)?,
        )
    }
    let informer = Informer::builder_from_stream(events(vec![
        Event::Added(cm("a", "web", "1")),
        Event::Added(cm("b", "db", "1")),
    ]))
    .cache_from_env()
    .key_fn(by_uid)
    .build();
    let with_fn = informer.subscribe(Default::default()).unwrap();
    let default_keys = informer.subscribe(Default::default()).unwrap();
    informer.run().await.unwrap();

    let mut keys: Vec<ObjectKey> = with_fn
        .objects()
        .map(|cm| by_uid(&cm).unwrap())
        .collect()
        .await;
    keys.sort();
    let mut stored = informer.store().list_keys();
    stored.sort();
    assert_eq!(keys, stored);
    assert_eq!(stored[0].as_str(), "uid-a");

    let names: Vec<String> = default_keys
        .keys()
        .map(|k| k.unwrap().to_string())
        .collect()
        .await;
    assert_eq!(names, ["default/a", "default/b"]);
}
