//! R8: streaming lists (`sendInitialEvents=true`).

use crate::source_helpers;

use kube_informer::source::{Config, Error, ListStrategy};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use source_helpers::*;

fn streaming() -> Config<k8s_openapi::api::core::v1::ConfigMap> {
    Config::default().list_strategy(ListStrategy::Streaming)
}

// R8
#[tokio::test(start_paused = true)]
async fn r8_streaming_list_then_the_same_watch_goes_on() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b"] {
        server.create(&cm(name, "web")).unwrap();
    }
    let mut events = cm_source(&server, streaming());
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        rv, "2",
        "the resourceVersion of the initial-events-end bookmark"
    );
    server.create(&cm("c", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "c".into()));

    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "one request: the list and the watch are one stream"
    );
    let watch = &requests[0];
    assert!(watch.is_watch());
    assert_eq!(watch.param("sendInitialEvents"), Some("true"));
    assert_eq!(watch.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(watch.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(
        watch.param("resourceVersion"),
        Some(""),
        "first streaming list reads consistently"
    );
    let timeout: u64 = watch.param("timeoutSeconds").unwrap().parse().unwrap();
    assert!((300..600).contains(&timeout));
}

// R8: a later streaming relist starts from the last resourceVersion seen.
#[tokio::test(start_paused = true)]
async fn r8_streaming_relist_uses_last_resource_version() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(&server, streaming());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("b", "web")).unwrap();
    next_event(&mut events).await;
    error_on_rewatch(&server, ApiStatus::internal_error()).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(rv, "2");
    let requests = server.requests();
    let relist = requests
        .iter()
        .rfind(|r| r.param("sendInitialEvents") == Some("true"))
        .unwrap();
    assert_eq!(relist.param("resourceVersion"), Some("2"));
    assert!(
        requests.iter().all(|r| r.is_watch()),
        "never a paginated list"
    );
}

// R8: a server without streaming lists refuses; that relist falls back to pages.
#[tokio::test(start_paused = true)]
async fn r8_refused_streaming_list_falls_back_to_paginated_list() {
    let server = FakeApiServer::start().await;
    server.set_streaming_list_supported(false);
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(&server, streaming());
    let error = next_error(&mut events).await;
    assert!(matches!(error, Error::WatchStart { .. }), "{error}");
    assert_eq!(error.status_code(), Some(422));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    let requests = server.requests();
    assert!(!requests[1].is_watch());
    assert_eq!(requests[1].param("resourceVersion"), Some("0"));
    assert_eq!(requests[1].received_at, requests[0].received_at, "at once");
    wait_watches(&server, 1).await;
    assert_eq!(server.requests()[2].param("sendInitialEvents"), None);
}

// R8: a stream that breaks before the initial-events-end bookmark falls back
// to a paginated list; the relist begins again with a fresh ListStart.
#[tokio::test(start_paused = true)]
async fn r8_broken_streaming_list_falls_back_to_paginated_list() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b", "c"] {
        server.create(&cm(name, "web")).unwrap();
    }
    server.inject_watch_fault(RequestMatch::StreamingList, 1, WatchFault::End);
    let mut events = cm_source(&server, streaming());
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Listed", "a".into())
    );
    assert!(matches!(
        next_error(&mut events).await,
        Error::StreamingListIncomplete
    ));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(rv, "3");
    assert!(!server.requests()[1].is_watch());
}

// R8: an ERROR 410 during the streaming list retries it at once with a consistent read.
#[tokio::test(start_paused = true)]
async fn r8_expired_streaming_list_retries_consistently() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.inject_watch_fault(
        RequestMatch::StreamingList,
        0,
        WatchFault::ErrorEvent(ApiStatus::expired()),
    );
    let mut events = cm_source(&server, streaming());
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].param("sendInitialEvents"), Some("true"));
    assert_eq!(requests[1].param("resourceVersion"), Some(""));
}
