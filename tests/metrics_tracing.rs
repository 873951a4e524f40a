//! The story `RUST_LOG=kube_informer=debug` tells: the informer's run span
//! carries the resource's labels as fields, a forced 410 is one WARN line
//! and a debug `relist` event with its cause, inside that span.

mod cache_mode_common;
mod log_common;

use crate::cache_mode_common::CacheModeExt;
use log_common::Buffer;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{
    Informer,
    metrics::RelistCause,
    source::{self, BackoffConfig},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use tracing_subscriber::util::SubscriberInitExt;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_forced_410_is_one_warning_and_a_debug_relist_in_the_informer_span() {
    let logs = Buffer::default();
    let _guard = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_env_filter("kube_informer=debug")
        .set_default();

    let server = FakeApiServer::start().await;
    server
        .create(&ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some("a".into()),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::expired()),
    );
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let backoff = BackoffConfig {
        initial: Duration::from_millis(10),
        ..BackoffConfig::default()
    };
    let informer = Informer::builder(api)
        .cache_from_env()
        .source_config(source::Config::default().backoff(backoff))
        .build();
    let run = tokio::spawn(informer.run());
    tokio::time::timeout(Duration::from_secs(60), async {
        while informer.metrics().source.relists[RelistCause::Expired] == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("an expired relist");
    informer.stop();
    run.await.unwrap().unwrap();

    let text = logs.text();
    let lines: Vec<&str> = text.lines().collect();
    let span = r#"informer{resource=configmaps in namespace default group="" version="v1" plural="configmaps" namespace="default"}"#;
    let warnings: Vec<&&str> = lines.iter().filter(|l| l.contains(" WARN ")).collect();
    assert_eq!(warnings.len(), 1, "one line per error:\n{text}");
    assert!(warnings[0].contains(span), "{}", warnings[0]);
    assert!(warnings[0].contains("410"), "{}", warnings[0]);
    for cause in ["initial", "expired"] {
        let relist = format!(r#"relist cause="{cause}""#);
        assert!(
            lines
                .iter()
                .any(|l| l.contains(" DEBUG ") && l.contains(span) && l.contains(&relist)),
            "no debug {relist} in the informer span:\n{text}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" INFO ") && l.contains(span) && l.contains("informer synced")),
        "{text}"
    );
}
