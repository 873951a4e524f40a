//! [`WriteLog`]: the writes of each parent's reconcile, until taken.

use std::{fmt, sync::Arc};

use kube::{Api, Resource};
use parking_lot::{Mutex, MutexGuard};

use super::cleanups::FinishedCleanups;
use crate::{hash::KeyMap, key::ObjectKey, resource::WatchedResource, resource_version::Written};

/// One write the API server accepted: which object, and what it left (RW5).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{own_writes::RecordedWrite, resource_version::Written};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let api = Api::<ConfigMap>::namespaced(server.client(), "default");
/// let write = RecordedWrite::new(&api, "default/app".parse()?, Written::Version("7".into()));
/// assert_eq!((write.group.as_str(), write.resource.as_str()), ("", "configmaps"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RecordedWrite {
    /// The written object's API group (empty for the core group).
    pub group: String,
    /// The written object's resource plural (`configmaps`).
    pub resource: String,
    /// The written object's key.
    pub key: ObjectKey,
    /// What the write left on the server.
    pub written: Written,
}

impl RecordedWrite {
    /// A write of `key` through `api` (whose URL names the resource) that
    /// left `written`.
    pub fn new<K: Resource>(api: &Api<K>, key: ObjectKey, written: Written) -> Self {
        let (group, resource) = resource_of(api);
        Self {
            group,
            resource,
            key,
            written,
        }
    }

    /// Whether this write and `other` are to the same object.
    fn same_object(&self, other: &Self) -> bool {
        self.key == other.key && self.resource == other.resource && self.group == other.group
    }
}

/// The API group and plural of `api`'s resource, read from its URL as
/// informers name theirs.
pub(super) fn resource_of<K: Resource>(api: &Api<K>) -> (String, String) {
    let watched = WatchedResource::from_url(api.resource_url(), None, None);
    (watched.group, watched.resource)
}

/// The writes recorded for each parent key since its records were last
/// taken (RW5, RW6): cheap to clone, shared by the reconciler that writes
/// and the gate that waits.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, api::PostParams};
/// use kube_informer::{ObjectKey, own_writes::WriteLog, resource_version::Written};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let log = WriteLog::new();
/// let parent: ObjectKey = "default/web".parse()?;
/// let children = log.api(Api::<ConfigMap>::namespaced(server.client(), "default"), parent.clone());
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("web-settings".into());
/// let created = children.create(&PostParams::default(), &cm).await?;
///
/// let writes = log.take(&parent);
/// assert_eq!(writes.len(), 1);
/// assert_eq!(writes[0].key.as_str(), "default/web-settings");
/// assert_eq!(writes[0].written, Written::Version(created.metadata.resource_version.unwrap()));
/// assert!(log.take(&parent).is_empty()); // taken
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct WriteLog {
    parents: Arc<Mutex<KeyMap<ObjectKey, Vec<RecordedWrite>>>>,
    /// Cleanups of the finalizer helper whose finalizer is still on (Z11).
    cleanups: Arc<Mutex<FinishedCleanups>>,
}

impl WriteLog {
    /// An empty log.
    // `WriteLog::default()` is the way in; kept for the crate's own tests.
    #[doc(hidden)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `write` under `parent`, replacing an earlier record of a
    /// write to the same object (RW5): for a write made without a
    /// [`RecordedApi`](super::RecordedApi), such as one through a client of one's own.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    /// use kube_informer::{own_writes::{RecordedWrite, WriteLog}, resource_version::Written};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    /// let log = WriteLog::new();
    /// let parent = "default/web".parse()?;
    /// log.record(&parent, RecordedWrite::new(&api, "default/a".parse()?, Written::Version("3".into())));
    /// log.record(&parent, RecordedWrite::new(&api, "default/a".parse()?, Written::Version("5".into())));
    /// let writes = log.take(&parent);
    /// assert_eq!(writes.len(), 1);
    /// assert_eq!(writes[0].written, Written::Version("5".into()));
    /// # Ok(()) }
    /// ```
    pub fn record(&self, parent: &ObjectKey, write: RecordedWrite) {
        let mut parents = self.parents.lock();
        let writes = parents.entry(parent.clone()).or_default();
        match writes.iter_mut().find(|w| w.same_object(&write)) {
            Some(earlier) => *earlier = write,
            None => writes.push(write),
        }
    }

    /// The writes recorded under `parent` since they were last taken, in
    /// the order first written; forgets them (RW6). See the
    /// [type docs](WriteLog) for an example.
    pub fn take(&self, parent: &ObjectKey) -> Vec<RecordedWrite> {
        self.parents.lock().remove(parent).unwrap_or_default()
    }

    /// How many parents have writes recorded, not yet taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::own_writes::WriteLog;
    ///
    /// assert_eq!(WriteLog::new().parents(), 0);
    /// ```
    // A count for the crate's own tests.
    #[doc(hidden)]
    pub fn parents(&self) -> usize {
        self.parents.lock().len()
    }

    /// The finalizer helper's finished cleanups (Z11), locked; never held
    /// across an await.
    pub(crate) fn cleanups(&self) -> MutexGuard<'_, FinishedCleanups> {
        self.cleanups.lock()
    }
}

impl fmt::Debug for WriteLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteLog")
            .field("parents", &self.parents())
            .field("finished_cleanups", &self.cleanups().len())
            .finish()
    }
}
