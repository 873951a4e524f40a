//! R7, R9: bad events are reported and skipped; every failure is an `Err`
//! item and the source keeps going.

use crate::source_helpers;

use std::time::Duration;

use kube_informer::source::{Config, DecodeTarget, Error, ListStrategy};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use source_helpers::*;

fn watch_count(server: &FakeApiServer) -> usize {
    server.requests().iter().filter(|r| r.is_watch()).count()
}

fn list_count(server: &FakeApiServer) -> usize {
    server.requests().iter().filter(|r| !r.is_watch()).count()
}

/// Starts a source whose first watch sends `fault` after the first event,
/// and returns it with the first watch's first event (an Added "a") read.
async fn watch_with_fault(
    fault: WatchFault,
) -> (
    FakeApiServer,
    impl futures::Stream<
        Item = Result<kube_informer::source::Event<k8s_openapi::api::core::v1::ConfigMap>, Error>,
    > + Unpin,
) {
    let server = FakeApiServer::start().await;
    server.inject_watch_fault(RequestMatch::Watch, 1, fault);
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("a", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "a".into()));
    (server, events)
}

/// After a skipped line, the same watch still delivers.
async fn still_watching(
    server: &FakeApiServer,
    events: &mut (
             impl futures::Stream<
        Item = Result<kube_informer::source::Event<k8s_openapi::api::core::v1::ConfigMap>, Error>,
    > + Unpin
         ),
) {
    server.create(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(events).await), ("Added", "b".into()));
    assert_eq!(watch_count(server), 1, "the same watch went on");
    assert_eq!(list_count(server), 1, "no relist");
}

// R7
#[tokio::test(start_paused = true)]
async fn r7_unknown_event_type_is_reported_and_skipped() {
    let (server, mut events) = watch_with_fault(WatchFault::UnknownEventType).await;
    assert!(matches!(next_error(&mut events).await, Error::UnknownEventType(t) if t == "SURPRISE"));
    still_watching(&server, &mut events).await;
}

// R7
#[tokio::test(start_paused = true)]
async fn r7_object_without_metadata_is_reported_and_skipped() {
    let (server, mut events) = watch_with_fault(WatchFault::ObjectWithoutMetadata).await;
    assert!(matches!(
        next_error(&mut events).await,
        Error::MissingMetadata
    ));
    still_watching(&server, &mut events).await;
}

// R7
#[tokio::test(start_paused = true)]
async fn r7_object_without_name_is_reported_and_skipped() {
    let (server, mut events) = watch_with_fault(WatchFault::ObjectWithoutName).await;
    assert!(matches!(next_error(&mut events).await, Error::MissingName));
    still_watching(&server, &mut events).await;
}

// R7: the kind is checked against the kind the list announced.
#[tokio::test(start_paused = true)]
async fn r7_object_of_another_kind_is_reported_and_skipped() {
    let (server, mut events) = watch_with_fault(WatchFault::WrongKind).await;
    match next_error(&mut events).await {
        Error::WrongKind { expected, found } => {
            assert_eq!(expected, "ConfigMap");
            assert_eq!(found, "Unexpected");
        }
        other => panic!("expected WrongKind, got {other}"),
    }
    still_watching(&server, &mut events).await;
}

// R7/R9: a line that is not JSON may have carried a lost event, so the
// watch ends and the source relists after a backoff.
#[tokio::test(start_paused = true)]
async fn r7_malformed_line_is_reported_and_relists() {
    let (server, mut events) = watch_with_fault(WatchFault::MalformedLine).await;
    assert!(matches!(
        next_error(&mut events).await,
        Error::Decode {
            what: DecodeTarget::WatchLine,
            ..
        }
    ));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    assert_eq!(list_count(&server), 2);
}

// R9: a dropped connection is reported, then the source re-watches at once
// from the last resourceVersion without relisting. (The event sent just
// before the drop may or may not make it; if not, the re-watch replays it.)
#[tokio::test(start_paused = true)]
async fn r9_dropped_connection_is_reported_and_rewatched() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.inject_watch_fault(RequestMatch::Watch, 1, WatchFault::DropConnection);
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.create(&cm("b", "web")).unwrap();
    let mut seen_error = false;
    let mut seen_b = false;
    while !(seen_error && seen_b) {
        match next(&mut events).await {
            Err(Error::WatchStream(_)) => seen_error = true,
            Ok(event) if label(&event) == ("Added", "b".into()) => seen_b = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    wait_watch_requests(&server, 2).await;
    let requests = server.requests();
    let watches: Vec<_> = requests.iter().filter(|r| r.is_watch()).collect();
    assert!(matches!(
        watches[1].param("resourceVersion"),
        Some("1" | "2")
    ));
    assert_eq!(
        watches[1].received_at - watches[0].received_at,
        Duration::from_secs(2),
        "at once"
    );
    assert_eq!(list_count(&server), 1);
    server.create(&cm("c", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "c".into()));
}

// R9: 403 on lists keeps being reported and retried with growing delays;
// the stream never ends, and recovers when the server does.
#[tokio::test(start_paused = true)]
async fn r9_forbidden_lists_are_reported_and_retried() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.fail_requests(RequestMatch::Any, ApiStatus::forbidden(), 8);
    let mut events = cm_source(&server, Config::default());
    for _ in 0..8 {
        let error = next_error(&mut events).await;
        assert!(matches!(error, Error::List { .. }), "{error}");
        assert_eq!(error.status_code(), Some(403));
        assert_eq!(
            error.to_string(),
            "list of configmaps in namespace default failed"
        );
    }
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
}

// R9: 500 on the watch start is reported and relisted after backoff.
#[tokio::test(start_paused = true)]
async fn r9_watch_start_failure_is_reported() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::Watch, ApiStatus::internal_error(), 1);
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    let error = next_error(&mut events).await;
    assert!(matches!(error, Error::WatchStart { .. }));
    assert_eq!(
        error.to_string(),
        "watch of configmaps in namespace default could not start"
    );
    read_relist(&mut events).await;
}

// R9: slow answers are waited for, on tokio's clock.
#[tokio::test(start_paused = true)]
async fn r9_delayed_answers_are_waited_for() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.delay_requests(RequestMatch::List, Duration::from_secs(30), 1);
    let started = tokio::time::Instant::now();
    let mut events = cm_source(&server, Config::default());
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    assert!(started.elapsed() >= Duration::from_secs(30));
}

// R9: a list page the server never answers is abandoned at the list
// deadline, reported, and listed again after a backoff.
#[tokio::test(start_paused = true)]
async fn r9_an_unanswered_list_is_abandoned_at_its_deadline_and_retried() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.delay_requests(RequestMatch::List, Duration::from_secs(3600), 1);
    let started = tokio::time::Instant::now();
    let mut events = cm_source(&server, Config::default().backoff(exact_backoff()));
    let error = next_error(&mut events).await;
    assert!(matches!(error, Error::ListTimeout { .. }), "{error}");
    assert_eq!(started.elapsed(), kube_informer::source::LIST_DEADLINE);
    assert_eq!(
        error.to_string(),
        "list of configmaps in namespace default got no answer within 120s"
    );
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
}

// R9: a server that is not there: connection errors are reported and retried.
#[tokio::test(start_paused = true)]
async fn r9_unreachable_server_is_reported_and_retried() {
    let server = FakeApiServer::start().await;
    let client = server.client();
    drop(server);
    tokio::task::yield_now().await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::default_namespaced(client);
    let mut events = spawned(kube_informer::source::watch_source(
        api,
        Config::default().backoff(exact_backoff()),
    ));
    for _ in 0..3 {
        let error = next_error(&mut events).await;
        assert!(matches!(error, Error::List { .. }), "{error}");
        assert_eq!(error.status_code(), None);
    }
}

// R10: a watch that goes quiet without closing (a half-open connection)
// is dropped once it has been silent for its timeout plus a margin, and
// the source re-watches from the last resourceVersion without relisting.
#[tokio::test(start_paused = true)]
async fn r10_silent_watch_is_dropped_and_rewatched_from_the_last_resource_version() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.inject_watch_fault(RequestMatch::Watch, 1, WatchFault::Stall);
    let mut events = cm_source(
        &server,
        Config::default().watch_timeout(Duration::from_secs(60), Duration::from_secs(60)),
    );
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    let b = server.create(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "b".into()));
    let quiet_since = tokio::time::Instant::now();
    // The watch is silent from here on: this change does not reach it.
    server.create(&cm("c", "web")).unwrap();
    match next_error(&mut events).await {
        Error::WatchIdle { resource, idle } => {
            assert_eq!(resource, "configmaps in namespace default");
            assert_eq!(idle, Duration::from_secs(90), "timeout 60 s + 30 s margin");
        }
        other => panic!("expected WatchIdle, got {other:?}"),
    }
    assert_eq!(quiet_since.elapsed(), Duration::from_secs(90));
    assert_eq!(label(&next_event(&mut events).await), ("Added", "c".into()));
    let requests = server.requests();
    let watches: Vec<_> = requests.iter().filter(|r| r.is_watch()).collect();
    assert_eq!(watches.len(), 2);
    assert_eq!(
        watches[1].param("resourceVersion"),
        b.metadata.resource_version.as_deref()
    );
    assert_eq!(
        watches[1].received_at - watches[0].received_at,
        Duration::from_secs(90)
    );
    assert_eq!(list_count(&server), 1, "no relist");
    wait_watches(&server, 1).await;
}

// R10/R8: a streaming list that goes quiet falls back to a paginated list.
#[tokio::test(start_paused = true)]
async fn r10_silent_streaming_list_falls_back_to_a_paginated_list() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "web")).unwrap();
    server.inject_watch_fault(RequestMatch::StreamingList, 1, WatchFault::Stall);
    let mut events = cm_source(
        &server,
        Config::default()
            .watch_timeout(Duration::from_secs(60), Duration::from_secs(60))
            .list_strategy(ListStrategy::Streaming),
    );
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    assert_eq!(
        label(&next_event(&mut events).await),
        ("Listed", "a".into())
    );
    assert!(matches!(
        next_error(&mut events).await,
        Error::WatchIdle { .. }
    ));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(list_count(&server), 1, "the fallback is a paginated list");
}

// R9 with R5: a 403 (no rights) is yielded once per backoff step, each
// error naming the resource, and its chain prints the server's message
// once.
#[tokio::test(start_paused = true)]
async fn r9_forbidden_list_is_reported_once_per_backoff_step_naming_the_resource() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), 1000);
    let mut events = cm_source(&server, Config::default());
    let started = tokio::time::Instant::now();
    let steps = [0, 800, 2400, 5600, 12000, 24800];
    for (n, at) in steps.into_iter().enumerate() {
        let error = next_error(&mut events).await;
        assert_eq!(started.elapsed(), Duration::from_millis(at), "error {n}");
        assert_eq!(error.status_code(), Some(403));
        assert!(
            error
                .to_string()
                .contains("configmaps in namespace default"),
            "{error}"
        );
        let chain = format!("{:#}", anyhow::Error::from(error));
        assert_eq!(
            chain.matches("forbidden by the fake server").count(),
            1,
            "{chain}"
        );
        assert!(
            chain.starts_with("list of configmaps in namespace default failed: "),
            "{chain}"
        );
    }
    assert_eq!(list_count(&server), steps.len());
    // Nothing else comes before the next step (25.6 s later).
    let early = tokio::time::timeout(
        Duration::from_millis(25_599),
        futures::StreamExt::next(&mut events),
    )
    .await;
    assert!(early.is_err(), "{early:?}");
}
