//! R3, R4, R5, R6: how the source watches, backs off and follows bookmarks.

use crate::source_helpers;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_informer::source::{Config, Error, Event};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use source_helpers::*;

fn watches(server: &FakeApiServer) -> Vec<kube_informer_testing::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect()
}

fn lists(server: &FakeApiServer) -> Vec<kube_informer_testing::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| !r.is_watch())
        .collect()
}

fn secret(name: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some("default".into());
    s
}

// R3
#[tokio::test(start_paused = true)]
async fn r3_watches_from_the_list_with_bookmarks_and_a_random_timeout() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(&server, Config::default());
    let (_, rv) = read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "b".into()));
    server.update(&cm("b", "db")).unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Modified", "b".into())
    );
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Deleted", "a".into())
    );

    let watch = &watches(&server)[0];
    assert_eq!(watch.param("resourceVersion"), Some(rv.as_str()));
    assert_eq!(watch.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(watch.param("sendInitialEvents"), None);
    let timeout: u64 = watch.param("timeoutSeconds").unwrap().parse().unwrap();
    assert!((300..600).contains(&timeout), "{timeout}");
}

// R3: the timeout ends the watch on the server; the source re-watches at
// once from the last resourceVersion, without relisting. Timeouts are
// spread over [300, 600).
#[tokio::test(start_paused = true)]
async fn r3_watch_timeout_rewatches_at_once_without_relist() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("b", "web")).unwrap();
    next_event(&mut events).await;

    // Idle: tokio's paused clock jumps to each watch's timeout.
    tokio::time::timeout(
        Duration::from_secs(100_000),
        server.wait_until(|requests, _| requests.iter().filter(|r| r.is_watch()).count() >= 6),
    )
    .await
    .unwrap();
    let watches = watches(&server);
    for pair in watches.windows(2) {
        let asked: u64 = pair[0].param("timeoutSeconds").unwrap().parse().unwrap();
        assert_eq!(
            pair[1].received_at - pair[0].received_at,
            Duration::from_secs(asked)
        );
        assert_eq!(pair[1].param("resourceVersion"), Some("2"));
    }
    let timeouts: std::collections::BTreeSet<_> = watches
        .iter()
        .map(|w| w.param("timeoutSeconds").unwrap().to_owned())
        .collect();
    assert!(timeouts.len() > 1, "timeouts are random: {timeouts:?}");
    assert_eq!(lists(&server).len(), 1, "no relist");
}

// R3: a watch the server ends normally is reopened from the newest resourceVersion.
#[tokio::test(start_paused = true)]
async fn r3_normal_end_rewatches_from_last_event() {
    let server = FakeApiServer::start().await;
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("a", "web")).unwrap();
    next_event(&mut events).await;
    server.close_watches();
    wait_watch_requests(&server, 2).await;
    server.create(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "b".into()));
    let watches = watches(&server);
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[1].param("resourceVersion"), Some("1"));
    assert_eq!(watches[1].received_at, watches[0].received_at, "at once");
    assert_eq!(lists(&server).len(), 1);
}

// R3: a watch that ends within a second without any event is a failure:
// relist after backoff.
#[tokio::test(start_paused = true)]
async fn r3_very_short_empty_watch_relists_after_backoff() {
    let server = FakeApiServer::start().await;
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.close_watches();
    assert!(matches!(
        next_error(&mut events).await,
        Error::VeryShortWatch(_)
    ));
    read_relist(&mut events).await;
    let lists = lists(&server);
    assert_eq!(lists.len(), 2);
    assert_eq!(
        lists[1].received_at - watches(&server)[0].received_at,
        Duration::from_millis(800)
    );
}

// R4: ERROR 410 relists (from the last resourceVersion) after backoff.
#[tokio::test(start_paused = true)]
async fn r4_gone_error_event_relists_after_backoff() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::expired()),
    );
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    let error = next_error(&mut events).await;
    assert!(
        matches!(&error, Error::WatchEvent { code: 410, .. }),
        "{error}"
    );
    read_relist(&mut events).await;
    let lists = lists(&server);
    assert_eq!(lists[1].param("resourceVersion"), Some("1"));
    assert_eq!(
        lists[1].received_at - watches(&server)[0].received_at,
        Duration::from_millis(800)
    );
}

// R4: a compacted resourceVersion on watch start comes back as ERROR 410.
#[tokio::test(start_paused = true)]
async fn r4_watch_from_compacted_resource_version_relists() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.delay_requests(RequestMatch::Watch, Duration::from_secs(5), 1);
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    // While the watch request is delayed, history moves on and is compacted.
    server.create(&cm("b", "web")).unwrap();
    server.compact();
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(rv, "2");
}

// R4: other ERROR events relist after backoff too.
#[tokio::test(start_paused = true)]
async fn r4_other_error_event_relists_after_backoff() {
    let server = FakeApiServer::start().await;
    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::internal_error()),
    );
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    read_relist(&mut events).await;
    assert_eq!(
        lists(&server)[1].received_at - watches(&server)[0].received_at,
        Duration::from_millis(800)
    );
}

// R4: 429 as an ERROR event waits one backoff and re-watches (no relist).
#[tokio::test(start_paused = true)]
async fn r4_too_many_requests_event_rewatches_after_backoff() {
    let server = FakeApiServer::start().await;
    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::too_many_requests()),
    );
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(429));
    tokio::time::timeout(
        Duration::from_secs(60),
        server.wait_until(|r, _| r.iter().filter(|r| r.is_watch()).count() == 2),
    )
    .await
    .unwrap();
    let watches = watches(&server);
    assert_eq!(
        watches[1].received_at - watches[0].received_at,
        Duration::from_millis(800)
    );
    assert_eq!(lists(&server).len(), 1);
}

// R4: 429 when starting a watch also re-watches after backoff; a 403 relists.
#[tokio::test(start_paused = true)]
async fn r4_watch_start_429_rewatches_and_403_relists() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::Watch, ApiStatus::too_many_requests(), 1);
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    let error = next_error(&mut events).await;
    assert!(matches!(error, Error::WatchStart { .. }));
    assert_eq!(error.status_code(), Some(429));
    wait_watches(&server, 1).await;
    assert_eq!(lists(&server).len(), 1);

    tokio::time::sleep(Duration::from_secs(2)).await;
    server.fail_requests(RequestMatch::Watch, ApiStatus::forbidden(), 1);
    server.close_watches();
    let error = next_error(&mut events).await;
    assert_eq!(error.status_code(), Some(403));
    read_relist(&mut events).await;
    assert_eq!(lists(&server).len(), 2);
}

// R5: consecutive failures wait 0.8 s, 1.6 s, 3.2 s … (no jitter here).
#[tokio::test(start_paused = true)]
async fn r5_backoff_doubles_between_failed_lists() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 5);
    let mut events = cm_source(&server, Config::default());
    for _ in 0..5 {
        assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    }
    read_relist(&mut events).await;
    let lists = lists(&server);
    let gaps: Vec<u128> = lists
        .windows(2)
        .map(|p| (p[1].received_at - p[0].received_at).as_millis())
        .collect();
    assert_eq!(gaps, [800, 1600, 3200, 6400, 12800]);
}

// R5: with jitter 1.0 (the default) each delay lies in [d, 2d).
#[tokio::test(start_paused = true)]
async fn r5_default_jitter_stays_within_double() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 3);
    let api: kube::Api<ConfigMap> = kube::Api::default_namespaced(server.client());
    let mut events = spawned(kube_informer::source::watch_source(api, Config::default()));
    for _ in 0..3 {
        next_error(&mut events).await;
    }
    read_relist(&mut events).await;
    let lists = lists(&server);
    for (i, pair) in lists.windows(2).enumerate() {
        let base = Duration::from_millis(800) * 2u32.pow(i as u32);
        let gap = pair[1].received_at - pair[0].received_at;
        assert!(
            gap >= base && gap < base * 2,
            "gap {gap:?} for base {base:?}"
        );
    }
}

// R5: two quiet minutes reset the backoff.
#[tokio::test(start_paused = true)]
async fn r5_backoff_resets_after_two_quiet_minutes() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 3);
    let mut events = cm_source(&server, Config::default());
    for _ in 0..3 {
        next_error(&mut events).await;
    }
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    tokio::time::sleep(Duration::from_secs(148)).await;
    error_on_rewatch(&server, ApiStatus::internal_error()).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    read_relist(&mut events).await;
    let watches = watches(&server);
    let lists = lists(&server);
    let last_watch = watches
        .iter()
        .rev()
        .find(|w| w.received_at < lists.last().unwrap().received_at)
        .unwrap();
    assert_eq!(
        lists.last().unwrap().received_at - last_watch.received_at,
        Duration::from_millis(800)
    );
}

// R6: bookmarks pass through as Bookmark events and move the resourceVersion
// the next watch starts from.
#[tokio::test(start_paused = true)]
async fn r6_bookmarks_move_the_resource_version() {
    let server = FakeApiServer::start().await;
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    // Other resources move the global resourceVersion without events here.
    for i in 0..3 {
        server.create(&secret(&format!("s{i}"))).unwrap();
    }
    server.send_bookmark();
    match next_event(&mut events).await {
        Event::Bookmark { resource_version } => assert_eq!(resource_version, "3"),
        other => panic!("expected a bookmark, got {:?}", label(&other)),
    }
    server.close_watches();
    wait_watch_requests(&server, 2).await;
    let watches = watches(&server);
    assert_eq!(watches[1].param("resourceVersion"), Some("3"));
    assert_eq!(lists(&server).len(), 1);
}
