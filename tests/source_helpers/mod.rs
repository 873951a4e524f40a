//! Helpers shared by the source_* integration tests.
#![allow(dead_code)]

use std::{collections::BTreeMap, time::Duration};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Resource, ResourceExt};
use kube_informer::source::{self, BackoffConfig, Config, Error, Event};
use kube_informer_testing::{FakeApiServer, RecordedRequest};

/// A ConfigMap in `default` with one label.
pub fn cm(name: &str, app: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("default".to_owned());
    cm.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
    cm
}

/// Backoff without jitter, so delays are exact.
pub fn exact_backoff() -> BackoffConfig {
    BackoffConfig {
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

/// A ConfigMap source on `default` with exact backoff, driven by its own task.
pub fn cm_source(
    server: &FakeApiServer,
    config: Config<ConfigMap>,
) -> impl Stream<Item = Result<Event<ConfigMap>, Error>> + Send + Unpin + use<> {
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    spawned(source::watch_source(api, config.backoff(exact_backoff())))
}

/// Polls `stream` on its own task (as an informer would), so the source
/// makes progress while the test waits on the server; items are queued.
pub fn spawned<T: Send + 'static, S>(stream: S) -> impl Stream<Item = T> + Send + Unpin + use<T, S>
where
    S: Stream<Item = T> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            if tx.send(item).is_err() {
                return;
            }
        }
    });
    let guard = AbortOnDrop(task);
    Box::pin(futures::stream::unfold(
        (rx, guard),
        |(mut rx, guard)| async move { rx.recv().await.map(|item| (item, (rx, guard))) },
    ))
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The next item, failing the test if none comes within an hour of tokio time.
pub async fn next<S, T>(stream: &mut S) -> Result<Event<T>, Error>
where
    S: Stream<Item = Result<Event<T>, Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(3600), stream.next())
        .await
        .expect("the source went quiet for an hour")
        .expect("the source never ends")
}

/// The next item, which must be an event.
pub async fn next_event<S, T: std::fmt::Debug>(stream: &mut S) -> Event<T>
where
    S: Stream<Item = Result<Event<T>, Error>> + Unpin,
{
    match next(stream).await {
        Ok(event) => event,
        Err(error) => panic!("expected an event, got error {error}"),
    }
}

/// The next item, which must be an error.
pub async fn next_error<S, T: std::fmt::Debug>(stream: &mut S) -> Error
where
    S: Stream<Item = Result<Event<T>, Error>> + Unpin,
{
    match next(stream).await {
        Ok(event) => panic!("expected an error, got {event:?}"),
        Err(error) => error,
    }
}

/// A compact picture of an event: `("Listed", "a")`, `("ListDone", "7")`…
pub fn label<T: Resource>(event: &Event<T>) -> (&'static str, String) {
    match event {
        Event::Added(o) => ("Added", o.name_any()),
        Event::Modified(o) => ("Modified", o.name_any()),
        Event::Deleted(o) => ("Deleted", o.name_any()),
        Event::Listed(o) => ("Listed", o.name_any()),
        Event::ListStart => ("ListStart", String::new()),
        Event::ListDone { resource_version } => ("ListDone", resource_version.clone()),
        Event::Bookmark { resource_version } => ("Bookmark", resource_version.clone()),
    }
}

/// Reads a whole relist: ListStart, Listed…, ListDone; returns the listed
/// names and the list's resourceVersion.
pub async fn read_relist<S, T: Resource + std::fmt::Debug>(stream: &mut S) -> (Vec<String>, String)
where
    S: Stream<Item = Result<Event<T>, Error>> + Unpin,
{
    assert_eq!(label(&next_event(stream).await).0, "ListStart");
    let mut names = Vec::new();
    loop {
        match next_event(stream).await {
            Event::Listed(o) => names.push(o.name_any()),
            Event::ListDone { resource_version } => return (names, resource_version),
            other => panic!("unexpected {:?} inside a relist", label(&other)),
        }
    }
}

/// Only the list and watch requests, as `("list" | "watch", params)`.
pub fn calls(server: &FakeApiServer) -> Vec<(&'static str, BTreeMap<String, String>)> {
    server
        .requests()
        .iter()
        .map(|r: &RecordedRequest| {
            (
                if r.is_watch() { "watch" } else { "list" },
                r.query.iter().cloned().collect(),
            )
        })
        .collect()
}

/// Waits until the server holds `n` open watches.
pub async fn wait_watches(server: &FakeApiServer, n: usize) {
    tokio::time::timeout(
        Duration::from_secs(3600),
        server.wait_until(|_, open| open == n),
    )
    .await
    .expect("watch count never reached");
}

/// Waits until `n` watch requests were made and one watch is open.
pub async fn wait_watch_requests(server: &FakeApiServer, n: usize) {
    tokio::time::timeout(
        Duration::from_secs(3600),
        server.wait_until(|requests, open| {
            open == 1 && requests.iter().filter(|r| r.is_watch()).count() == n
        }),
    )
    .await
    .expect("watch requests never reached");
}

/// Ends the open watch normally once it has lived past the one-second
/// "very short watch" mark (so the source re-watches rather than relists),
/// and makes that re-watch answer with an `ERROR` event carrying `status`.
pub async fn error_on_rewatch(server: &FakeApiServer, status: kube_informer_testing::ApiStatus) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.inject_watch_fault(
        kube_informer_testing::RequestMatch::Watch,
        0,
        kube_informer_testing::WatchFault::ErrorEvent(status),
    );
    server.close_watches();
}
