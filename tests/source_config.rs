//! `source::Config` settings as the requests show them.

use crate::source_helpers;

use std::time::Duration;

use kube::core::{Expression, Selector};
use kube_informer::source::{Config, ListSemantic, ListStrategy};
use kube_informer_testing::FakeApiServer;
use source_helpers::*;

#[tokio::test(start_paused = true)]
async fn selectors_from_strings_and_typed_selectors_reach_every_request() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.create(&cm("b", "db")).unwrap();
    let selector = Selector::from_iter([
        Expression::Equal("app".into(), "web".into()),
        Expression::NotEqual("tier".into(), "cache".into()),
    ]);
    let mut events = cm_source(
        &server,
        Config::default()
            .labels_from(&selector)
            .field_selector("metadata.name=a"),
    );
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    wait_watches(&server, 1).await;
    for request in server.requests() {
        assert_eq!(request.param("labelSelector"), Some("app=web,tier!=cache"));
        assert_eq!(request.param("fieldSelector"), Some("metadata.name=a"));
    }
}

#[tokio::test(start_paused = true)]
async fn fixed_timeout_and_bookmarks_off_shape_the_watch() {
    let server = FakeApiServer::start().await;
    let mut events = cm_source(
        &server,
        Config::default()
            .watch_timeout(Duration::from_secs(42), Duration::from_secs(42))
            .disable_bookmarks(),
    );
    read_relist(&mut events).await;
    wait_watches(&server, 1).await;
    let watch = server
        .requests()
        .into_iter()
        .find(|r| r.is_watch())
        .unwrap();
    assert_eq!(watch.param("timeoutSeconds"), Some("42"));
    assert_eq!(watch.param("allowWatchBookmarks"), None);
}

// R1: the most-recent semantic makes the first list a consistent read.
#[tokio::test(start_paused = true)]
async fn r1_most_recent_semantic_lists_consistently_first() {
    let server = FakeApiServer::start().await;
    let mut events = cm_source(
        &server,
        Config::default().list_semantic(ListSemantic::MostRecent),
    );
    read_relist(&mut events).await;
    let list = server
        .requests()
        .into_iter()
        .find(|r| !r.is_watch())
        .unwrap();
    assert_eq!(list.param("resourceVersion"), None);
    assert_eq!(list.param("limit"), Some("500"));

    let server = FakeApiServer::start().await;
    let mut events = cm_source(&server, Config::default().list_semantic(ListSemantic::Any));
    read_relist(&mut events).await;
    let list = server
        .requests()
        .into_iter()
        .find(|r| !r.is_watch())
        .unwrap();
    assert_eq!(list.param("resourceVersion"), Some("0"));
}

// R8: a streaming list asks for bookmarks even when they are off, since it
// ends at one.
#[tokio::test(start_paused = true)]
async fn r8_streaming_lists_keep_bookmarks_on() {
    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    let mut events = cm_source(
        &server,
        Config::default()
            .list_strategy(ListStrategy::Streaming)
            .disable_bookmarks(),
    );
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    let first = &server.requests()[0];
    assert!(first.is_watch());
    assert_eq!(first.param("sendInitialEvents"), Some("true"));
    assert_eq!(first.param("allowWatchBookmarks"), Some("true"));
}
