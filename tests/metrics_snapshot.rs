//! The plain snapshot API (`Informer::metrics`, `Subscription::stats`,
//! `WorkQueue::metrics`): each metric moves when what it counts happens.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube_informer::{
    Informer, Lag, SubscribeOptions, WorkQueue,
    metrics::{ErrorClass, RelistCause},
    source::{self, BackoffConfig, Event, ListStrategy},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};

fn quick_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        ..BackoffConfig::default()
    }
}

async fn eventually(what: &str, condition: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[tokio::test(start_paused = true)]
async fn a_failed_list_relists_with_cause_error() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "")).unwrap();
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 1);
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api)
        .cache_from_env()
        .source_config(source::Config::default().backoff(quick_backoff()))
        .build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let source = informer.metrics().source;
    assert_eq!(source.relists[RelistCause::Initial], 1);
    assert_eq!(source.relists[RelistCause::Error], 1);
    assert_eq!(source.errors[ErrorClass::ServerStatus], 1);
    assert_eq!(source.list_requests, 2);
    assert_eq!(
        source.list_duration.count, 1,
        "only a finished list is timed"
    );
    assert_eq!(source.listed_objects, 1);
    assert_eq!(informer.metrics().errors, 1);
    informer.stop();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_refused_streaming_list_counts_as_a_fallback() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "")).unwrap();
    server.set_streaming_list_supported(false);
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api)
        .cache_from_env()
        .source_config(source::Config::default().list_strategy(ListStrategy::Streaming))
        .build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let source = informer.metrics().source;
    assert_eq!(source.relists[RelistCause::Initial], 1);
    assert_eq!(source.relists[RelistCause::StreamingFallback], 1);
    assert_eq!(source.errors[ErrorClass::ClientStatus], 1, "422 refusal");
    assert_eq!(source.list_requests, 1, "the paginated fallback");
    informer.stop();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn resource_version_age_grows_between_bookmarks_and_needs_them_on() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api.clone()).cache_from_env().build();
    let quiet = Informer::builder(api)
        .cache_from_env()
        .source_config(source::Config::default().disable_bookmarks())
        .build();
    let runs = [tokio::spawn(informer.run()), tokio::spawn(quiet.run())];
    informer.wait_until_synced().await.unwrap();
    quiet.wait_until_synced().await.unwrap();
    eventually("two watches", || server.open_watches() == 2).await;
    tokio::time::sleep(Duration::from_secs(40)).await;
    let stale = informer.metrics().source.resource_version_age.unwrap();
    assert!(stale >= Duration::from_secs(40), "{stale:?}");
    server.send_bookmark();
    eventually("the bookmark", || {
        informer.metrics().source.resource_version_age.unwrap() < Duration::from_secs(1)
    })
    .await;
    assert_eq!(quiet.metrics().source.resource_version_age, None);
    informer.stop();
    quiet.stop();
    for run in runs {
        run.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn fifo_gauges_show_what_waits_behind_a_blocked_writer() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    // Bounded(1) and never read: the writer waits on it, the FIFO fills.
    let _blocking = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)))
        .unwrap();
    let run = tokio::spawn(informer.run());
    for i in 0..50 {
        send(&source, Event::Added(cm(&format!("cm-{i}"), "1")));
    }
    for i in 0..10 {
        send(&source, Event::Modified(cm(&format!("cm-{i}"), "2")));
    }
    eventually("a full FIFO", || informer.metrics().fifo.deltas >= 57).await;
    let fifo = informer.metrics().fifo;
    assert!(fifo.keys >= 47 && fifo.keys < fifo.deltas, "{fifo:?}");
    informer.stop();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn stats_count_by_kind_with_resyncs_apart() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::from_secs(1))
        .build();
    let mut sub = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))
        .unwrap();
    let _unread = informer
        .subscribe(SubscribeOptions::default().name("unread"))
        .unwrap();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
    send(&source, Event::Modified(cm("a", "2")));
    send(&source, Event::Deleted(cm("b", "2")));
    for _ in 0..4 {
        sub.next().await.unwrap();
    }
    let stats = sub.stats();
    assert_eq!(stats.name, "0", "named by its index");
    assert_eq!(
        (
            stats.delivered.added,
            stats.delivered.updated,
            stats.delivered.deleted
        ),
        (2, 1, 1)
    );
    assert_eq!(stats.pending, 0);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sub.next().await.unwrap();
    assert_eq!(sub.stats().delivered.resync, 1, "one object left to resync");
    let stats = informer.metrics().subscriptions;
    let unread = stats.iter().find(|s| s.name == "unread").unwrap();
    assert_eq!((unread.pending, unread.pending_high_water), (4, 4));
    assert_eq!(unread.delivered.total(), 0);
    informer.stop();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn handler_time_is_recorded_under_handle() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let sub = informer.subscribe(SubscribeOptions::default()).unwrap();
    let probe = informer.clone();
    let run = tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1"), cm("b", "1")], "1");
    struct Slow;
    impl kube_informer::ResourceEventHandler<ConfigMap> for Slow {
        fn on_add(&mut self, _: &std::sync::Arc<ConfigMap>, _: bool) {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let handler = Slow;
    let handled = tokio::spawn(sub.handle(handler));
    eventually("two handler calls", || {
        probe.metrics().subscriptions[0].handler_duration.count == 2
    })
    .await;
    let histogram = probe.metrics().subscriptions[0].handler_duration;
    assert!(histogram.sum >= Duration::from_millis(4), "{histogram:?}");
    probe.stop();
    run.await.unwrap().unwrap();
    handled.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn work_queue_metrics_follow_client_go() {
    let queue = WorkQueue::<&str>::new();
    queue.add("a");
    queue.add("a");
    queue.add("b");
    assert_eq!((queue.metrics().depth, queue.metrics().adds), (2, 2));
    tokio::time::advance(Duration::from_secs(1)).await;
    let a = queue.next().await.unwrap();
    let metrics = queue.metrics();
    assert_eq!(metrics.queue_duration.count, 1);
    assert_eq!(metrics.queue_duration.sum, Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(2)).await;
    let b = queue.next().await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    let metrics = queue.metrics();
    assert_eq!(metrics.unfinished_work, Duration::from_secs(4), "3 s + 1 s");
    assert_eq!(metrics.longest_running_processor, Duration::from_secs(3));
    // Added again while processing: an add, queued when it is done.
    queue.add("a");
    drop(a);
    drop(b);
    let metrics = queue.metrics();
    assert_eq!((metrics.adds, metrics.depth), (3, 1));
    assert_eq!(metrics.work_duration.count, 2);
    assert_eq!(
        metrics.work_duration.sum,
        Duration::from_secs(4),
        "3 s + 1 s"
    );
    assert_eq!(metrics.unfinished_work, Duration::ZERO);
    queue.add_rate_limited("c");
    queue.add_rate_limited("c");
    assert_eq!(queue.metrics().retries, 2);
}
