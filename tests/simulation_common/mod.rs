//! What the seeded simulations of the controller examples share: a source
//! configuration that draws nothing at random, and a user's edits, retried
//! while the faults refuse them.

use std::{fmt::Debug, future::Future, time::Duration};

use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use kube_informer::source::{BackoffConfig, Config};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

/// A list/watch configuration that draws nothing at random (no backoff
/// jitter) and ends each watch after a fixed minute, so a run is a
/// function of its seed.
pub fn source_config<K>() -> Config<K> {
    Config::default()
        .backoff(BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        })
        .watch_timeout(Duration::from_secs(60), Duration::from_secs(60))
}

/// Retries `attempt` until it reports done (faults refuse many requests),
/// at most 100 times, 50 ms apart.
pub async fn retry<F, Fut>(mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..100 {
        if attempt().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether a user's request is done: it succeeded, or what it acted on is
/// not there (404).
pub fn gone_or_ok<T>(result: Result<T, kube::Error>) -> bool {
    match result {
        Ok(_) => true,
        Err(kube::Error::Api(status)) => status.code == 404,
        Err(_) => false,
    }
}

/// One attempt of a user's edit: `name` in `api` gets `spec.content`
/// `content`, created by `make` when it is not there, patched with a
/// resourceVersion precondition when it is. One being deleted is left
/// alone (a new one comes once it is gone). Whether the edit is done.
pub async fn set_content<K>(api: &Api<K>, name: &str, content: &str, make: impl Fn() -> K) -> bool
where
    K: Resource + Clone + Debug + DeserializeOwned + Serialize,
{
    match api.get_opt(name).await {
        Err(_) => false,
        Ok(Some(current)) if current.meta().deletion_timestamp.is_some() => true,
        Ok(None) => gone_or_ok(api.create(&PostParams::default(), &make()).await),
        Ok(Some(current)) => {
            let patch = Patch::Merge(json!({
                "metadata": {"resourceVersion": current.resource_version()},
                "spec": {"content": content},
            }));
            api.patch(name, &PatchParams::default(), &patch)
                .await
                .is_ok()
        }
    }
}
