//! What the compact pass of `scripts/test-all.sh` rests on: it runs the
//! test targets that build informers with the test module
//! `cache_mode_common`'s `CacheModeExt::cache_from_env` again with `KUBE_INFORMER_CACHE=compact`,
//! and that tests the compact cache only if the variable reaches the
//! builder. In that pass an informer built with `cache_from_env` keeps its
//! objects encoded; in the other one it keeps them decoded. The same pass
//! sets `KUBE_INFORMER_ENCODING=protobuf`, and its informers then list and
//! watch in protobuf.

use crate::cache_mode_common::{CACHE_ENV, CacheModeExt, ENCODING_ENV};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube_informer::{Informer, source::Event};
use kube_informer_testing::FakeApiServer;

// CM10
#[test]
fn cm10_cache_from_env_keeps_objects_encoded_exactly_when_the_variable_says_compact() {
    let compact = std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact");
    let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    assert_eq!(informer.store().compact_stats().is_some(), compact);
}

// CM11
#[tokio::test]
async fn cm11_cache_from_env_asks_for_protobuf_exactly_when_the_variable_says_protobuf() {
    let protobuf = std::env::var(ENCODING_ENV).is_ok_and(|mode| mode == "protobuf");
    let server = FakeApiServer::start().await;
    let mut config = ConfigMap::default();
    config.metadata.name = Some("settings".into());
    config.metadata.namespace = Some("default".into());
    config.data = Some([("color".to_owned(), "blue".to_owned())].into());
    server.create(&config).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api).cache_from_env().build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let listed = informer
        .store()
        .get(&"default/settings".parse().unwrap())
        .unwrap();
    assert_eq!(listed.data, config.data);
    informer.stop();
    run.await.unwrap().unwrap();
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect();
    assert!(!lists.is_empty());
    for list in lists {
        let accept = list.accept.unwrap_or_default();
        assert_eq!(
            accept.starts_with("application/vnd.kubernetes.protobuf"),
            protobuf,
            "{accept}"
        );
    }
}
