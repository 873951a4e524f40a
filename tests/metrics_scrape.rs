//! The operator's `/metrics` endpoint, scraped over HTTP while an informer
//! runs against the fake API server, read with a real exposition-format
//! parser: counters move as events flow, a stalled subscriber's pending
//! count and lag grow while a busy one's stay at zero, and a forced 410
//! shows as an `expired` relist.

use crate::operator::metrics_http;
use crate::scrape_common;

use crate::cache_mode_common::CacheModeExt;
use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{
    Informer, SubscribeOptions, WorkQueue, metrics,
    source::{self, BackoffConfig},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use scrape_common::scrape;

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Polls `condition` on the informer's own snapshot until it holds.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

// On one thread, so that tokio's clock can be paused for the lag below.
#[tokio::test(flavor = "current_thread")]
async fn scrape_shows_flow_lag_and_a_forced_relist() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b", "c"] {
        server.create(&cm(name)).unwrap();
    }
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let backoff = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        ..BackoffConfig::default()
    };
    let informer = Informer::builder(api)
        .cache_from_env()
        .source_config(source::Config::default().backoff(backoff))
        .build();
    let busy = informer
        .subscribe(SubscribeOptions::default().name("busy"))
        .unwrap();
    // Held and never read: its queue only grows.
    let stalled = informer
        .subscribe(SubscribeOptions::default().name("stalled"))
        .unwrap();
    let handler = tokio::spawn(busy.handle(Ignore));

    let queue = WorkQueue::<String>::new();
    let mut registry = Registry::default();
    metrics::register(&mut registry, "configmaps", &informer);
    metrics::register(&mut registry, "reconcile", &queue);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let http = tokio::spawn(metrics_http::serve(
        listener,
        Arc::new(registry),
        shutdown.clone(),
    ));
    let run = tokio::spawn(informer.run());

    informer.wait_until_synced().await.unwrap();
    let delivered_to_busy = |n: u64| {
        let informer = informer.clone();
        move || {
            informer
                .metrics()
                .subscriptions
                .iter()
                .any(|s| s.name == "busy" && s.delivered.total() == n && s.pending == 0)
        }
    };
    eventually("the initial list at busy", delivered_to_busy(3)).await;
    eventually("a watch", || server.open_watches() == 1).await;

    let first = scrape(addr).await;
    let resource = [
        ("informer", "configmaps"),
        ("group", ""),
        ("version", "v1"),
        ("resource", "configmaps"),
        ("namespace", "default"),
    ];
    assert_eq!(first.value("kube_informer_store_objects", &resource), 3.0);
    assert_eq!(first.value("kube_informer_synced", &[]), 1.0);
    assert!(first.value("kube_informer_time_to_first_sync_seconds", &[]) > 0.0);
    assert_eq!(
        first.value("kube_informer_relists_total", &[("cause", "initial")]),
        1.0
    );
    assert_eq!(
        first.value("kube_informer_relists_total", &[("cause", "expired")]),
        0.0
    );
    assert_eq!(first.value("kube_informer_listed_objects_total", &[]), 3.0);
    assert_eq!(first.value("kube_informer_list_requests_total", &[]), 1.0);
    assert_eq!(
        first.value("kube_informer_list_duration_seconds_count", &[]),
        1.0
    );
    assert_eq!(first.value("kube_informer_watch_starts_total", &[]), 1.0);
    assert_eq!(
        first.sub("kube_informer_subscription_pending", "stalled"),
        3.0
    );
    assert_eq!(first.sub("kube_informer_subscription_pending", "busy"), 0.0);
    assert_eq!(
        first.value(
            "kube_informer_subscription_delivered_total",
            &[("subscriber", "busy"), ("kind", "added")]
        ),
        3.0
    );
    assert_eq!(
        first.value("workqueue_depth", &[("name", "reconcile")]),
        0.0
    );

    // Events flow: five adds, an update, a delete, a bookmark. Each waits
    // until busy has handled the one before, so busy's queue never holds
    // more than the initial list did, however slowly its task is scheduled.
    for i in 0..5 {
        server.create(&cm(&format!("new-{i}"))).unwrap();
        eventually("an add at busy", delivered_to_busy(4 + i)).await;
    }
    let mut a = server
        .objects::<ConfigMap>()
        .into_iter()
        .find(|o| o.metadata.name.as_deref() == Some("a"))
        .unwrap();
    a.data = Some([("k".to_string(), "v".to_string())].into());
    server.update(&a).unwrap();
    eventually("the update at busy", delivered_to_busy(9)).await;
    server.delete::<ConfigMap>(Some("default"), "b").unwrap();
    server.send_bookmark();
    queue.add("default/a".into());
    eventually("every event at busy", delivered_to_busy(10)).await;
    eventually("the bookmark", || {
        informer.metrics().source.resource_version_age.is_some()
            && informer.metrics().source.watch_events[metrics::WatchEventType::Bookmark] == 1
    })
    .await;
    // The stalled subscriber's oldest pending notification was already
    // queued at the first scrape; let a second pass. The lag is measured on
    // tokio's clock, so the clock is moved rather than waited for; it runs
    // on afterwards, for the server's and the source's timers.
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(1100)).await;
    tokio::time::resume();

    let second = scrape(addr).await;
    for (kind, n) in [
        ("ADDED", 5.0),
        ("MODIFIED", 1.0),
        ("DELETED", 1.0),
        ("BOOKMARK", 1.0),
    ] {
        assert_eq!(
            second.value("kube_informer_watch_events_total", &[("type", kind)]),
            n,
            "{kind}"
        );
    }
    assert!(second.value("kube_informer_resource_version_age_seconds", &[]) >= 0.0);
    assert_eq!(second.value("kube_informer_store_objects", &[]), 7.0);
    assert_eq!(
        second.sub("kube_informer_subscription_pending", "stalled"),
        10.0
    );
    assert_eq!(
        second.sub("kube_informer_subscription_pending_high_water", "stalled"),
        10.0
    );
    assert!(second.sub("kube_informer_subscription_lag_seconds", "stalled") >= 1.0);
    assert_eq!(
        second.sub("kube_informer_subscription_pending", "busy"),
        0.0
    );
    assert_eq!(
        second.sub("kube_informer_subscription_lag_seconds", "busy"),
        0.0
    );
    assert!(second.sub("kube_informer_subscription_pending_high_water", "busy") <= 3.0);
    for (kind, n) in [
        ("added", 8.0),
        ("updated", 1.0),
        ("deleted", 1.0),
        ("resync", 0.0),
    ] {
        assert_eq!(
            second.value(
                "kube_informer_subscription_delivered_total",
                &[("subscriber", "busy"), ("kind", kind)]
            ),
            n,
            "{kind}"
        );
    }
    assert_eq!(
        second.sub(
            "kube_informer_subscription_handler_duration_seconds_count",
            "busy"
        ),
        10.0
    );
    for kind in ["added", "updated", "deleted", "resync"] {
        assert_eq!(
            second.value(
                "kube_informer_subscription_delivered_total",
                &[("subscriber", "stalled"), ("kind", kind)]
            ),
            0.0,
        );
    }
    assert_eq!(
        second.value("workqueue_depth", &[("name", "reconcile")]),
        1.0
    );
    assert_eq!(
        second.value("workqueue_adds_total", &[("name", "reconcile")]),
        1.0
    );

    // A forced 410: the next watch ends with an Expired ERROR event, so
    // the watch cannot resume and the source relists.
    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::expired()),
    );
    server.close_watches();
    eventually("the expired relist", || {
        informer.metrics().source.relists[metrics::RelistCause::Expired] == 1
            && informer.metrics().source.listed_objects == 10
    })
    .await;
    let third = scrape(addr).await;
    assert_eq!(
        third.value("kube_informer_relists_total", &[("cause", "expired")]),
        1.0
    );
    assert_eq!(
        third.value("kube_informer_relists_total", &[("cause", "error")]),
        0.0
    );
    assert_eq!(
        third.value(
            "kube_informer_source_errors_total",
            &[("class", "http_410")]
        ),
        1.0
    );
    assert_eq!(third.value("kube_informer_errors_total", &[]), 1.0);
    assert_eq!(
        third.value("kube_informer_list_duration_seconds_count", &[]),
        2.0
    );
    assert!(third.value("kube_informer_watch_starts_total", &[]) >= 3.0);

    informer.stop();
    run.await.unwrap().unwrap();
    handler.await.unwrap();
    drop(stalled);
    shutdown.cancel();
    http.await.unwrap().unwrap();
}

/// A handler that ignores every notification.
struct Ignore;
impl kube_informer::ResourceEventHandler<ConfigMap> for Ignore {}
