//! [`RecordedApi`]: `kube::Api`'s writes, recorded in a [`WriteLog`].

use std::fmt::{self, Debug};

use either::Either;
use kube::{
    Api, Resource,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
    core::Status,
};
use serde::{Serialize, de::DeserializeOwned};

use super::{RecordedWrite, WriteLog, Written, log::resource_of};
use crate::key::ObjectKey;

/// A `kube::Api` whose accepted writes are recorded in a [`WriteLog`]
/// under the key of the object being reconciled (RW5); made by
/// [`WriteLog::api`]. Each method forwards to the `Api` method of the same
/// name and answers as it did; reads go through [`api`](Self::api).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, api::{DeleteParams, Patch, PatchParams, PostParams}};
/// use kube_informer::{ObjectKey, own_writes::WriteLog, resource_version::Written};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let log = WriteLog::new();
/// let parent: ObjectKey = "default/web".parse()?;
/// let api = log.api(Api::<ConfigMap>::namespaced(server.client(), "default"), parent.clone());
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// api.create(&PostParams::default(), &cm).await?;
/// let patch = serde_json::json!({"data": {"mode": "fast"}});
/// let patched = api.patch("settings", &PatchParams::default(), &Patch::Merge(&patch)).await?;
/// let writes = log.take(&parent);
/// // One record per object: the patch replaced the create's.
/// assert_eq!(writes.len(), 1);
/// assert_eq!(writes[0].written, Written::Version(patched.metadata.resource_version.unwrap()));
///
/// api.delete("settings", &DeleteParams::default()).await?;
/// assert_eq!(log.take(&parent)[0].written, Written::Deleted);
/// // Reads go through the `Api` itself.
/// assert!(api.api().get_opt("settings").await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RecordedApi<K> {
    api: Api<K>,
    log: WriteLog,
    parent: ObjectKey,
    group: String,
    resource: String,
}

impl WriteLog {
    /// `api`, whose writes are recorded under `parent`, the key being
    /// reconciled. See the [type docs](WriteLog) for an example.
    pub fn api<K: Resource>(&self, api: Api<K>, parent: ObjectKey) -> RecordedApi<K> {
        RecordedApi::new(api, self.clone(), parent)
    }
}

impl<K: Resource> RecordedApi<K> {
    pub(super) fn new(api: Api<K>, log: WriteLog, parent: ObjectKey) -> Self {
        let (group, resource) = resource_of(&api);
        Self {
            api,
            log,
            parent,
            group,
            resource,
        }
    }

    /// The `Api` the writes go through, for reads (and for writes that
    /// should not be recorded). See the [type docs](RecordedApi) for an
    /// example.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }

    /// Records that `key` was left `written`.
    fn record(&self, key: ObjectKey, written: Written) {
        let write = RecordedWrite {
            group: self.group.clone(),
            resource: self.resource.clone(),
            key,
            written,
        };
        self.log.record(&self.parent, write);
    }

    /// The log the writes are recorded in.
    pub(crate) fn log(&self) -> &WriteLog {
        &self.log
    }

    /// Records the object a write answered with, if it can be keyed and
    /// carries a resourceVersion (RW5), or as deleted when the write let it
    /// go (RW9).
    fn record_object(&self, object: &K) {
        let meta = object.meta();
        if went_with_the_write(meta) {
            match ObjectKey::from_object(object) {
                Ok(key) => self.record(key, Written::Deleted),
                Err(error) => tracing::debug!(
                    parent = %self.parent,
                    %error,
                    "a write's answer has no key; not recorded"
                ),
            }
            return;
        }
        let version = meta.resource_version.clone();
        match (ObjectKey::from_object(object), version) {
            (Ok(key), Some(version)) => self.record(key, Written::Version(version)),
            (key, version) => tracing::debug!(
                parent = %self.parent,
                ?key,
                ?version,
                "a write's answer has no key or no resourceVersion; not recorded"
            ),
        }
    }
}

impl<K> RecordedApi<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    /// `Api::create`, recorded (RW5). See the [type docs](RecordedApi) for an
    /// example.
    pub async fn create(&self, pp: &PostParams, data: &K) -> kube::Result<K>
    where
        K: Serialize,
    {
        let created = self.api.create(pp, data).await?;
        self.record_object(&created);
        Ok(created)
    }

    /// `Api::replace`, recorded (RW5). See the [type docs](RecordedApi) for an
    /// example.
    pub async fn replace(&self, name: &str, pp: &PostParams, data: &K) -> kube::Result<K>
    where
        K: Serialize,
    {
        let replaced = self.api.replace(name, pp, data).await?;
        self.record_object(&replaced);
        Ok(replaced)
    }

    /// `Api::replace_status`, recorded (RW5). See the [type docs](RecordedApi) for an
    /// example.
    pub async fn replace_status(&self, name: &str, pp: &PostParams, data: &K) -> kube::Result<K>
    where
        K: Serialize,
    {
        let replaced = self.api.replace_status(name, pp, data).await?;
        self.record_object(&replaced);
        Ok(replaced)
    }

    /// `Api::patch`, recorded (RW5). See the [type docs](RecordedApi) for an
    /// example.
    pub async fn patch<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<K> {
        let patched = self.api.patch(name, pp, patch).await?;
        self.record_object(&patched);
        Ok(patched)
    }

    /// `Api::patch_status`, recorded (RW5). See the [type docs](RecordedApi) for an
    /// example.
    pub async fn patch_status<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<K> {
        let patched = self.api.patch_status(name, pp, patch).await?;
        self.record_object(&patched);
        Ok(patched)
    }

    /// `Api::delete`, recorded: an object in the answer (its deletion waits
    /// for finalizers) is recorded at its resourceVersion, a `Status` (it
    /// is gone) as [`Written::Deleted`] of `name` in the `Api`'s namespace
    /// (RW5), and so is an object answered as its last state (RW9). See
    /// the [type docs](RecordedApi) for an example.
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> kube::Result<Either<K, Status>> {
        let deleted = self.api.delete(name, dp).await?;
        match &deleted {
            Either::Left(terminating) => self.record_object(terminating),
            Either::Right(_) => match ObjectKey::new(self.api.namespace(), name) {
                Ok(key) => self.record(key, Written::Deleted),
                Err(error) => {
                    tracing::debug!(parent = %self.parent, %error, "a deleted name makes no key; not recorded");
                }
            },
        }
        Ok(deleted)
    }
}

/// Whether the API server deleted the object in the write that answered
/// with `meta` (RW9): it is being deleted, with no grace period left and no
/// finalizer to wait for. kube-apiserver deletes such an object in the same
/// write that emptied its finalizers, answers with its last state, and the
/// caches then lose the key rather than hold that version. A Pod in its
/// grace period (a non-zero `deletionGracePeriodSeconds`) stays until its
/// kubelet confirms, so it is not gone.
fn went_with_the_write(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
        && meta.deletion_grace_period_seconds == Some(0)
        && meta.finalizers.as_deref().unwrap_or_default().is_empty()
}

impl<K> fmt::Debug for RecordedApi<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedApi")
            .field("group", &self.group)
            .field("resource", &self.resource)
            .field("parent", &self.parent)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
    use kube::api::ObjectMeta;

    use super::went_with_the_write;

    fn meta(deleting: bool, grace: Option<i64>, finalizers: &[&str]) -> ObjectMeta {
        ObjectMeta {
            deletion_timestamp: deleting.then_some(Time(Timestamp::UNIX_EPOCH)),
            deletion_grace_period_seconds: grace,
            finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
            ..ObjectMeta::default()
        }
    }

    /// RW9: only an object being deleted with no grace period and no
    /// finalizer left went with the write.
    #[test]
    fn rw9_gone_means_deleting_no_grace_no_finalizer() {
        assert!(went_with_the_write(&meta(true, Some(0), &[])));
        assert!(went_with_the_write(&ObjectMeta {
            finalizers: None,
            ..meta(true, Some(0), &[])
        }));
        // Finalizers left: it stays.
        assert!(!went_with_the_write(&meta(true, Some(0), &["a.io/x"])));
        // A Pod in its grace period stays until its kubelet confirms.
        assert!(!went_with_the_write(&meta(true, Some(30), &[])));
        assert!(!went_with_the_write(&meta(true, None, &[])));
        // Not being deleted.
        assert!(!went_with_the_write(&meta(false, Some(0), &[])));
    }
}
