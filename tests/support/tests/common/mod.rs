//! Helpers the fake server's tests share: the status of a refused request,
//! and watch events read one at a time with a deadline.

#![allow(dead_code)] // each test file uses some of these

use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{WatchEvent, WatchParams},
};
use kube_informer_testing::FakeApiServer;

/// Code, reason and message of the API error `result` must be.
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The next event's type and object, bookmarks skipped; fails the test if
/// none comes within 60 s, the watch errs or it ends.
pub async fn next_event<K>(
    stream: &mut (impl Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> (&'static str, K) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.try_next())
            .await
            .expect("the watch delivers the event")
            .expect("the watch has no error")
            .expect("the watch is open");
        return match event {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        };
    }
}

/// A watch of the ConfigMaps of every namespace from the server's current
/// resourceVersion: it sees the changes made after it opened.
pub async fn watch_configmaps(
    server: &FakeApiServer,
) -> impl Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin {
    let start = server.resource_version().to_string();
    Api::<ConfigMap>::all(server.client())
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed()
}
