//! The factory builds what the builder builds (indexers, transforms,
//! metadata-only informers), shares by the documented key, and refuses a
//! request whose options differ from the existing informer's.

use k8s_openapi::{
    api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
};
use kube::{Api, api::ObjectMeta};
use kube_informer::{InformerFactory, informer::Error, source};
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
    factory.wait_until_synced().await.unwrap();

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
    factory.wait_until_synced().await.unwrap();
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
    factory.wait_until_synced().await.unwrap();
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
    first.wait_until_synced().await.unwrap();
    first.stop();
    assert!(first.is_stopped());

    let second = factory.build(api(), |b| b).unwrap();
    assert!(!second.is_stopped(), "not the stopped one");
    assert_eq!(factory.len(), 1, "in its place, not beside it");
    assert!(!second.has_synced(), "not started until start()");
    factory.start();
    second.wait_until_synced().await.unwrap();
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

#[tokio::test]
async fn fa5_defaults_apply_to_every_informer_and_the_closure_has_the_last_word() {
    use kube_informer::informer::Defaults;

    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "db")).unwrap();
    let defaults = Defaults {
        source_config: Some(source::Config::default().page_size(1)),
        strip_managed_fields: true,
        ..Defaults::default()
    };
    let factory = InformerFactory::with_defaults(server.client(), defaults);
    let api = || Api::<ConfigMap>::default_namespaced(server.client());
    // Defaults alone; a label selector added to them; defaults replaced.
    let all = factory.build(api(), |b| b).unwrap();
    let web = factory
        .build(api(), |b| b.label_selector("app=web"))
        .unwrap();
    let replaced = factory
        .build(api(), |b| {
            b.source_config(source::Config::default().label_selector("app=db"))
        })
        .unwrap();
    assert_eq!(factory.len(), 3);
    // The options compared are those the builder ends with: a request that
    // sets what the defaults set gets the same informer, one that takes the
    // strip back is refused.
    let same = factory
        .build(api(), |b| {
            b.source_config(source::Config::default().page_size(1))
                .strip_managed_fields()
        })
        .unwrap();
    assert_eq!(factory.len(), 3);
    drop(same);
    assert!(matches!(
        factory.build(api(), |b| b.source_config(source::Config::default())),
        Err(Error::OptionsDiffer { .. })
    ));
    factory.start();
    factory.wait_until_synced().await.unwrap();

    let names = |informer: &kube_informer::Informer<ConfigMap>| {
        let mut names: Vec<_> = informer
            .store()
            .list()
            .iter()
            .map(|cm| cm.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&all), ["a", "b"]);
    assert_eq!(names(&web), ["a"]);
    assert_eq!(names(&replaced), ["b"]);
    for object in all.store().list().iter().chain(web.store().list().iter()) {
        assert_eq!(object.metadata.managed_fields, None, "the default strip");
    }
    assert!(
        replaced.store().list()[0].metadata.managed_fields.is_none(),
        "source_config replaces the list/watch settings only"
    );
    // Page size 1 from the defaults: the two objects of `all` took two
    // pages; the replaced settings have no page size.
    let requests = server.requests();
    let with = |selector: Option<&str>, limit: bool| {
        requests
            .iter()
            .filter(|r| r.method == "GET" && !r.query.iter().any(|(k, _)| k == "watch"))
            .filter(|r| {
                let label = r.query.iter().find(|(k, _)| k == "labelSelector");
                label.map(|(_, v)| v.as_str()) == selector
            })
            .filter(|r| r.query.iter().any(|(k, v)| k == "limit" && v == "1") == limit)
            .count()
    };
    assert_eq!(with(None, true), 2, "two pages of one object for `all`");
    assert_eq!(with(Some("app=web"), true), 1, "`web` keeps the page size");
    assert_eq!(with(Some("app=db"), true), 0, "`replaced` has no page size");
    assert_eq!(with(Some("app=db"), false), 1);
    factory.shutdown().await;
}
