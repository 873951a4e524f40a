//! [`FinalizerApi`]: where the helper's patches go, and how they are sent.

use std::{fmt::Debug, time::Duration};

use kube::{
    Api, Resource,
    api::{Patch, PatchParams},
};
use serde::de::DeserializeOwned;

use crate::own_writes::RecordedApi;

/// How long a finalizer patch may take: kube-apiserver ends a request
/// after 60 s by default (`--request-timeout`), so past 70 s no answer is
/// coming.
pub const PATCH_TIMEOUT: Duration = Duration::from_secs(70);

/// What [`finalizer`](super::finalizer) sends its patches through: a
/// [`kube::Api`], or a [`RecordedApi`] whose
/// [`WriteLog`](crate::own_writes::WriteLog) records them (Z10) and
/// remembers a cleanup that finished until its finalizer is off (Z11).
/// Sealed: those two are the only ones.
///
/// Give the helper the [`RecordedApi`] of a controller's
/// [`read_own_writes`](crate::controller::Controller::read_own_writes)
/// log, made for the key being reconciled: the key's next reconcile then
/// waits until the cache shows the finalizer added or the object gone, and
/// a cleanup runs once per deletion even when the removal of its finalizer
/// failed or the cache lags.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{
///     ObjectKey, finalizer::{Event, finalizer}, own_writes::WriteLog,
///     resource_version::Written, runner::Action,
/// };
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("app".into());
/// let cm = server.create(&cm)?;
///
/// let log = WriteLog::new();
/// let key = ObjectKey::from_object(&cm)?;
/// let api = log.api(Api::<ConfigMap>::namespaced(server.client(), "default"), key.clone());
/// finalizer(&api, "example.com/cleanup", Arc::new(cm), |_event: Event<ConfigMap>| async {
///     Ok::<_, kube::Error>(Action::AwaitChange)
/// })
/// .await?;
/// // The patch that added the finalizer, recorded under the key.
/// let added = api.api().get("app").await?.metadata.resource_version.unwrap();
/// assert_eq!(log.take(&key)[0].written, Written::Version(added));
/// # Ok(()) }
/// ```
pub trait FinalizerApi<K>: sealed::Sealed<K> {}

pub(super) mod sealed {
    use kube::Api;

    use crate::own_writes::RecordedApi;

    /// How the helper reaches the API server through each kind of `Api`.
    pub trait Sealed<K> {
        /// The `Api` itself, for its namespace.
        fn api(&self) -> &Api<K>;
        /// The recording `Api`, when the patches are to be recorded.
        fn recorded(&self) -> Option<&RecordedApi<K>>;
    }
}

impl<K> sealed::Sealed<K> for Api<K> {
    fn api(&self) -> &Api<K> {
        self
    }

    fn recorded(&self) -> Option<&RecordedApi<K>> {
        None
    }
}

impl<K> FinalizerApi<K> for Api<K> {}

impl<K: Resource> sealed::Sealed<K> for RecordedApi<K> {
    fn api(&self) -> &Api<K> {
        RecordedApi::api(self)
    }

    fn recorded(&self) -> Option<&RecordedApi<K>> {
        Some(self)
    }
}

impl<K: Resource> FinalizerApi<K> for RecordedApi<K> {}

/// Sends one JSON patch through `api`, within [`PATCH_TIMEOUT`], recorded
/// when `api` records (Z10); answers with the object the server returned.
pub(super) async fn send<K, A>(
    api: &A,
    name: &str,
    operations: serde_json::Value,
) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    A: FinalizerApi<K>,
{
    // The operations are built by this module, so this cannot fail; were
    // it to, it is reported as a request that could not be built.
    let operations = serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
    let (params, patch) = (PatchParams::default(), Patch::Json::<()>(operations));
    let request = async {
        match api.recorded() {
            Some(recorded) => recorded.patch(name, &params, &patch).await,
            None => api.api().patch(name, &params, &patch).await,
        }
    };
    match tokio::time::timeout(PATCH_TIMEOUT, request).await {
        Ok(answer) => answer,
        Err(elapsed) => Err(kube::Error::Service(Box::new(elapsed))),
    }
}
