//! R1, R2: how the source lists.

use crate::source_helpers;

use std::time::Duration;

use kube_informer::source::{Config, Error};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use source_helpers::*;

fn param<'a>(
    call: &'a (&'static str, std::collections::BTreeMap<String, String>),
    name: &str,
) -> Option<&'a str> {
    call.1.get(name).map(String::as_str)
}

// R1
#[tokio::test(start_paused = true)]
async fn r1_first_list_asks_for_rv0_and_lists_everything() {
    let server = FakeApiServer::start().await;
    for name in ["a", "b", "c"] {
        server.create(&cm(name, "web")).unwrap();
    }
    let mut events = cm_source(&server, Config::default());
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(rv, "3");

    let calls = calls(&server);
    assert_eq!(calls[0].0, "list");
    assert_eq!(param(&calls[0], "resourceVersion"), Some("0"));
    assert_eq!(param(&calls[0], "limit"), Some("500"));
    assert_eq!(param(&calls[0], "resourceVersionMatch"), None);
}

// R1: a later relist asks for the last resourceVersion seen, not "0".
#[tokio::test(start_paused = true)]
async fn r1_relist_uses_last_seen_resource_version() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    server.create(&cm("b", "web")).unwrap();
    assert_eq!(label(&next_event(&mut events).await), ("Added", "b".into()));

    server.inject_watch_fault(
        RequestMatch::Watch,
        0,
        WatchFault::ErrorEvent(ApiStatus::expired()),
    );
    server.close_watches();
    // The re-watch after the normal end hits the ERROR event, then relists.
    let error = next_error(&mut events).await;
    assert_eq!(error.status_code(), Some(410));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["a", "b"]);
    assert_eq!(rv, "2");

    let calls = calls(&server);
    let lists: Vec<_> = calls.iter().filter(|c| c.0 == "list").collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(param(lists[1], "resourceVersion"), Some("2"));
    // client-go drops the limit when relisting from a known resourceVersion,
    // so the API server's watch cache can answer.
    assert_eq!(param(lists[1], "limit"), None);
}

// R1: 410 on a list retries at once with resourceVersion "" (a consistent read).
#[tokio::test(start_paused = true)]
async fn r1_gone_list_retries_at_once_with_empty_resource_version() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.fail_requests(RequestMatch::List, ApiStatus::expired(), 1);
    let mut events = cm_source(&server, Config::default());
    let error = next_error(&mut events).await;
    assert!(matches!(error, Error::List { .. }), "{error}");
    assert_eq!(error.status_code(), Some(410));
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);

    let requests = server.requests();
    assert_eq!(requests[0].param("resourceVersion"), Some("0"));
    assert!(!requests[1].is_watch());
    assert_eq!(
        requests[1].param("resourceVersion"),
        None,
        "consistent read"
    );
    assert_eq!(
        requests[1].received_at, requests[0].received_at,
        "no backoff"
    );
}

// R1: "too large resource version" is treated like 410.
#[tokio::test(start_paused = true)]
async fn r1_too_large_resource_version_retries_with_empty_resource_version() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.fail_requests(
        RequestMatch::List,
        ApiStatus::too_large_resource_version(),
        1,
    );
    let mut events = cm_source(&server, Config::default());
    let error = next_error(&mut events).await;
    assert_eq!(error.status_code(), Some(504));
    read_relist(&mut events).await;
    let requests = server.requests();
    assert_eq!(requests[1].param("resourceVersion"), None);
    assert_eq!(requests[1].received_at, requests[0].received_at);
}

// R1: if the consistent retry fails too, the source backs off and keeps
// reading consistently until a list succeeds.
#[tokio::test(start_paused = true)]
async fn r1_consistent_retry_failure_backs_off_and_stays_consistent() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::expired(), 2);
    let mut events = cm_source(&server, Config::default());
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    read_relist(&mut events).await;
    let requests = server.requests();
    assert_eq!(requests[2].param("resourceVersion"), None);
    assert_eq!(
        requests[2].received_at - requests[1].received_at,
        Duration::from_millis(800)
    );
}

// R2
#[tokio::test(start_paused = true)]
async fn r2_lists_in_pages_with_continue_tokens() {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..5).map(|i| cm(&format!("cm-{i}"), "web")))
        .unwrap();
    let mut events = cm_source(&server, Config::default().page_size(2));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);
    assert_eq!(rv, "5");

    let calls = calls(&server);
    let lists: Vec<_> = calls.iter().filter(|c| c.0 == "list").collect();
    assert_eq!(lists.len(), 3);
    assert_eq!(param(lists[0], "limit"), Some("2"));
    assert_eq!(param(lists[0], "continue"), None);
    for page in &lists[1..] {
        assert_eq!(param(page, "limit"), Some("2"));
        assert!(param(page, "continue").is_some());
        assert_eq!(
            param(page, "resourceVersion"),
            None,
            "the token pins the snapshot"
        );
    }
}

// R2: the default page size is 500.
#[tokio::test(start_paused = true)]
async fn r2_default_page_size_is_500() {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..1001).map(|i| cm(&format!("cm-{i:04}"), "web")))
        .unwrap();
    let mut events = cm_source(&server, Config::default());
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names.len(), 1001);
    let calls = calls(&server);
    let limits: Vec<_> = calls
        .iter()
        .filter(|c| c.0 == "list")
        .map(|c| param(c, "limit"))
        .collect();
    assert_eq!(limits, [Some("500"); 3]);
}

// R2: an expired continue token falls back to one full list.
#[tokio::test(start_paused = true)]
async fn r2_expired_continue_token_falls_back_to_full_list() {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..5).map(|i| cm(&format!("cm-{i}"), "web")))
        .unwrap();
    server.fail_requests(RequestMatch::ListContinue, ApiStatus::expired(), 1);
    let mut events = cm_source(&server, Config::default().page_size(2));
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    assert_eq!(label(&next_event(&mut events).await).0, "Listed");
    assert_eq!(label(&next_event(&mut events).await).0, "Listed");
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    // The full list starts a fresh relist.
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names.len(), 5);

    let requests = server.requests();
    let full = &requests[2];
    assert!(!full.is_watch());
    assert_eq!(full.param("limit"), None);
    assert_eq!(full.param("continue"), None);
    assert_eq!(full.param("resourceVersion"), Some("0"));
    assert_eq!(full.received_at, requests[1].received_at, "no backoff");
}

// R2: a compacted snapshot expires the continue token in the server itself.
// The next page is requested as soon as the first arrives, so the server
// holds that request back until the snapshot is compacted.
#[tokio::test(start_paused = true)]
async fn r2_compaction_between_pages_expires_the_token() {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..4).map(|i| cm(&format!("cm-{i}"), "web")))
        .unwrap();
    server.delay_requests(RequestMatch::ListContinue, Duration::from_secs(1), 1);
    let mut events = cm_source(&server, Config::default().page_size(2));
    assert_eq!(label(&next_event(&mut events).await).0, "ListStart");
    next_event(&mut events).await;
    next_event(&mut events).await;
    server.create(&cm("late", "web")).unwrap();
    server.compact();
    assert_eq!(next_error(&mut events).await.status_code(), Some(410));
    let (names, rv) = read_relist(&mut events).await;
    assert_eq!(names.len(), 5);
    assert_eq!(rv, "5");
}

// R2: a server whose first list came back in pages (no watch cache) gets
// paged relists too.
#[tokio::test(start_paused = true)]
async fn r2_relists_keep_paging_when_the_first_list_paged() {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..501).map(|i| cm(&format!("cm-{i:03}"), "web")))
        .unwrap();
    let mut events = cm_source(&server, Config::default());
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    error_on_rewatch(&server, ApiStatus::internal_error()).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    read_relist(&mut events).await;
    let calls = calls(&server);
    let relist = calls.iter().filter(|c| c.0 == "list").nth(2).unwrap();
    assert_eq!(param(relist, "resourceVersion"), Some("501"));
    assert_eq!(param(relist, "limit"), Some("500"));
}

// R2: a watch cache that ignores limit at "0" answers in one page, and
// relists from a known resourceVersion then go without limit.
#[tokio::test(start_paused = true)]
async fn r2_cache_answer_in_one_page_keeps_relists_unpaged() {
    let server = FakeApiServer::start().await;
    server.set_ignore_limit_at_rv0(true);
    server
        .bulk_create((0..501).map(|i| cm(&format!("cm-{i:03}"), "web")))
        .unwrap();
    let mut events = cm_source(&server, Config::default());
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names.len(), 501);
    wait_watches(&server, 1).await;
    error_on_rewatch(&server, ApiStatus::internal_error()).await;
    assert_eq!(next_error(&mut events).await.status_code(), Some(500));
    read_relist(&mut events).await;
    let calls = calls(&server);
    let lists: Vec<_> = calls.iter().filter(|c| c.0 == "list").collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(param(lists[1], "limit"), None);
}

// Pages are fetched and decoded ahead of the relist that queues them: once
// the first page is out, the second is read (and decoded) and the third
// requested, before any object is taken from the stream; and no further
// page is asked for until the stream moves on. The pages still come out
// whole and in order, each fetched once.
#[tokio::test(start_paused = true)]
async fn r2_pages_are_fetched_ahead_two_at_most() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::{Api, ResourceExt};
    use kube_informer::source::{self, Event};

    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..9).map(|i| cm(&format!("cm-{i}"), "web")))
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    // Polled only here, so nothing but the work ahead moves while the test
    // waits.
    let mut events = Box::pin(source::watch_source(api, Config::default().page_size(2)));
    assert!(matches!(events.next().await, Some(Ok(Event::ListStart))));
    let continued = |requests: &[kube_informer_testing::RecordedRequest]| {
        requests
            .iter()
            .filter(|r| r.param("continue").is_some())
            .count()
    };
    tokio::time::timeout(
        Duration::from_secs(60),
        server.wait_until(|requests, _| continued(requests) == 2),
    )
    .await
    .expect("the second and third pages were not requested ahead");
    // The paused clock moves only once nothing else can: all work ahead
    // has settled, and it stopped at the third page.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(continued(&server.requests()), 2);

    let mut names = Vec::new();
    let resource_version = loop {
        match events.next().await {
            Some(Ok(Event::Listed(object))) => names.push(object.name_any()),
            Some(Ok(Event::ListDone { resource_version })) => break resource_version,
            other => panic!("unexpected {other:?}"),
        }
    };
    let expected: Vec<String> = (0..9).map(|i| format!("cm-{i}")).collect();
    assert_eq!(names, expected);
    assert_eq!(resource_version, "9");
    let lists = server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .count();
    assert_eq!(lists, 5, "each page once");
}
