//! Helpers for the informer scenarios (`tests/e2e_informer*.rs`): running,
//! syncing and stopping an informer with bounded waits, reading its error
//! stream, and small ConfigMap edits.

use std::fmt::Debug;
use std::time::Duration;

use anyhow::Result;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use kube_informer::informer;
use kube_informer::source::{self, BackoffConfig};
use kube_informer::{Informer, Notification};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use super::{configmap, within};

/// Bound on every wait for the informer or the servers.
pub const WAIT: Duration = Duration::from_secs(60);

/// Retries quickly, so a test waiting for a restarted server is not left
/// waiting out a long backoff; the rules of the backoff itself are tested
/// against the fake server.
pub fn quick_retries<K>() -> source::Config<K> {
    source::Config::default().backoff(BackoffConfig {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(2),
        factor: 2.0,
        jitter: 0.5,
        reset_after: Duration::from_secs(120),
    })
}

/// Polls `informer.run()` on its own task.
pub fn spawn_run<K>(informer: &Informer<K>) -> JoinHandle<Result<(), informer::Error>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    tokio::spawn(informer.run())
}

/// Waits (bounded) until the informer has synced.
pub async fn synced<K>(informer: &Informer<K>) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    within(WAIT, "informer sync", async {
        informer.wait_until_synced().await?;
        Ok(())
    })
    .await
}

/// Stops the informer and checks that `run` ends cleanly.
pub async fn stop<K>(
    informer: &Informer<K>,
    run: JoinHandle<Result<(), informer::Error>>,
) -> Result<()>
where
    K: Resource + Send + Sync + 'static,
{
    informer.stop();
    within(WAIT, "informer stop", async { Ok(run.await??) }).await
}

/// The errors reported so far (without waiting for more).
pub fn reported(
    errors: &mut (impl futures::Stream<Item = informer::Error> + Unpin),
) -> Vec<informer::Error> {
    let mut seen = Vec::new();
    while let Some(Some(error)) = errors.next().now_or_never() {
        seen.push(error);
    }
    seen
}

/// The HTTP status of an informer error that came from the list/watch source.
pub fn status_code(error: &informer::Error) -> Option<u16> {
    match error {
        informer::Error::Source(cause) => cause.status_code(),
        _ => None,
    }
}

/// A test ConfigMap's `value` entry.
pub fn data_value(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("value").map(String::as_str)
}

/// The object's resourceVersion (empty when it has none).
pub fn rv_of<K: Resource>(object: &K) -> String {
    object.resource_version().unwrap_or_default()
}

/// The notifications about `name`, in order.
pub fn about<'a, K: Resource>(log: &'a [Notification<K>], name: &str) -> Vec<&'a Notification<K>> {
    log.iter()
        .filter(|n| n.object().name_any() == name)
        .collect()
}

/// Sets a ConfigMap's `value` entry with a merge patch.
pub async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) -> Result<ConfigMap> {
    let patch = serde_json::json!({ "data": { "value": value } });
    Ok(api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// Sets one label of a ConfigMap with a merge patch.
pub async fn set_label(
    api: &Api<ConfigMap>,
    name: &str,
    key: &str,
    value: &str,
) -> Result<ConfigMap> {
    let patch = serde_json::json!({ "metadata": { "labels": { key: value } } });
    Ok(api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// A test ConfigMap carrying the label `key=value`.
pub fn labelled(name: &str, key: &str, value: &str) -> ConfigMap {
    let mut cm = configmap(name, name);
    cm.metadata.labels = Some([(key.to_owned(), value.to_owned())].into());
    cm
}
