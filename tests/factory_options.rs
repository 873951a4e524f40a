//! The factory builds what the builder builds (indexers, transforms,
//! metadata-only informers), shares by the documented key, and refuses a
//! request whose options differ from the existing informer's.

use k8s_openapi::{
    api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
};
use kube::{Api, api::ObjectMeta};
use kube_informer::{InformerFactory, factory::Error, source};
use kube_informer_testing::FakeApiServer;

fn cm(name: &str, app: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some([("app".to_string(), app.to_string())].into()),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

fn by_app(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| *k == "app")
        .map(|(_, v)| v.clone())
        .collect()
}

#[tokio::test]
async fn factory_builds_indexers_transforms_and_strips_managed_fields() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "db")).unwrap();
    assert!(
        server.objects::<ConfigMap>()[0]
            .metadata
            .managed_fields
            .is_some(),
        "the server serves managed fields"
    );
    let factory = InformerFactory::new(server.client());
    let informer = factory
        .build(Api::<ConfigMap>::default_namespaced(server.client()), |b| {
            b.strip_managed_fields()
                .indexer("by-app", by_app)
                .transform(|mut cm: ConfigMap| {
                    cm.data = None;
                    Ok(cm)
                })
        })
        .unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync().await);

    let store = informer.store();
    let web = store.by_index("by-app", "web").unwrap();
    assert_eq!(web.len(), 1);
    assert_eq!(web[0].metadata.name.as_deref(), Some("a"));
    for object in store.list() {
        assert_eq!(object.metadata.managed_fields, None, "managed fields kept");
        assert_eq!(object.data, None, "the user transform did not run");
    }
    factory.shutdown().await;
}

#[tokio::test]
async fn factory_shares_an_informer_only_when_the_options_agree() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::default_namespaced(server.client());

    let first = factory
        .build(api(), |b| {
            b.indexer("by-app", by_app).strip_managed_fields()
        })
        .unwrap();
    // Same key, same options (functions agree by presence): the same informer.
    let same = factory
        .build(api(), |b| {
            b.indexer("by-app", by_app).strip_managed_fields()
        })
        .unwrap();
    assert_eq!(factory.len(), 1);

    // Same key, other options: refused, with both option sets named.
    let error = factory
        .build(api(), |b| b.strip_managed_fields())
        .unwrap_err();
    let Error::OptionsDiffer {
        resource,
        existing,
        requested,
    } = &error
    else {
        panic!("unexpected error {error:?}");
    };
    assert_eq!(resource, "/api/v1/namespaces/default/configmaps");
    assert!(existing.contains("\"by-app\""), "{existing}");
    assert!(!requested.contains("\"by-app\""), "{requested}");
    assert!(
        factory.build(api(), |b| b).is_err(),
        "a plain request is not the indexed informer"
    );
    assert!(
        factory
            .build(api(), |b| b
                .indexer("by-app", by_app)
                .strip_managed_fields()
                .source_config(source::Config::default().page_size(10)))
            .is_err(),
        "list/watch settings are options too"
    );

    // The decode options are options too: refused when they differ.
    let error = factory
        .build(api(), |b| {
            b.indexer("by-app", by_app)
                .strip_managed_fields()
                .decode_threads(1)
        })
        .unwrap_err();
    assert!(
        format!("{error}").contains("decode_threads: Some(1)"),
        "{error}"
    );
    let error = factory
        .build(api(), |b| {
            b.indexer("by-app", by_app)
                .strip_managed_fields()
                .plain_decode()
        })
        .unwrap_err();
    assert!(format!("{error}").contains("plain_decode: true"), "{error}");

    // Another selector is another key: a new informer, whatever its options.
    factory
        .build(api(), |b| {
            b.source_config(source::Config::default().label_selector("app=web"))
        })
        .unwrap();
    assert_eq!(factory.len(), 2);

    // Shared means one cache: what one handle stores, the other reads.
    server.create(&cm("a", "web")).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync().await);
    assert_eq!(same.store().by_index("by-app", "web").unwrap().len(), 1);
    assert_eq!(first.store().len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn factory_builds_metadata_only_informers_apart_from_full_ones() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::default_namespaced(server.client());

    let full = factory.build(api(), |b| b).unwrap();
    let metadata = factory
        .build_metadata(api(), |b| {
            b.indexer("by-app", |m| {
                m.metadata
                    .labels
                    .iter()
                    .flatten()
                    .filter(|(k, _)| *k == "app")
                    .map(|(_, v)| v.clone())
                    .collect()
            })
        })
        .unwrap();
    let metadata_again = factory
        .build_metadata(api(), |b| b.indexer("by-app", |_| Vec::new()))
        .unwrap();
    assert_eq!(factory.len(), 2, "metadata-only and full informers are two");

    factory.start();
    assert!(factory.wait_for_cache_sync().await);
    assert!(
        full.store()
            .get_by(Some("default"), "a")
            .unwrap()
            .data
            .is_some()
    );
    let cached = metadata_again.store().by_index("by-app", "web").unwrap();
    assert_eq!(cached.len(), 1);
    assert_eq!(cached[0].metadata.name.as_deref(), Some("a"));
    assert_eq!(metadata.store().len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn fa1_a_stopped_informer_is_replaced_by_the_next_request() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let factory = InformerFactory::new(server.client());
    let api = || Api::<ConfigMap>::namespaced(factory.client(), "default");
    let first = factory.build(api(), |b| b).unwrap();
    factory.start();
    assert!(first.wait_until_synced().await);
    first.stop();
    assert!(first.is_stopped());

    let second = factory.build(api(), |b| b).unwrap();
    assert!(!second.is_stopped(), "not the stopped one");
    assert_eq!(factory.len(), 1, "in its place, not beside it");
    assert!(!second.has_synced(), "not started until start()");
    factory.start();
    assert!(second.wait_until_synced().await);
    assert_eq!(second.store().len(), 1);
    // The same running informer to the next request.
    let third = factory.build(api(), |b| b).unwrap();
    assert!(third.has_synced());
    factory.shutdown().await;
    assert!(
        factory.build(api(), |b| b).unwrap().is_stopped(),
        "after shutdown"
    );
}
