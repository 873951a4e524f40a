//! What the mirror operator wants and how it gets there: for one source
//! ConfigMap, the copies it should have (one per target namespace) against
//! the copies it has (found through the copies' label), and the writes that
//! close the gap.
//!
//! A copy lives in another namespace than its source, so an ownerReference
//! cannot tie them (they never cross namespaces): each copy carries the label
//! [`Labels::copy_of`] whose value names its source (`<namespace>.<name>`),
//! and an index of the copies' store on that label finds a source's copies
//! without a scan.

use std::{collections::BTreeMap, fmt};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ObjectMeta, PostParams, Preconditions},
};
use kube_informer::{ObjectKey, Store, controller::Observed, runner::Action};

/// Name of the copies' store index: copies by the source they mirror.
pub const BY_SOURCE: &str = "by-source";

/// The labels the operator reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    /// A ConfigMap labelled `<source>=true` is mirrored.
    pub source: String,
    /// A namespace labelled `<target>=true` receives copies.
    pub target: String,
    /// The label of a copy that names its source.
    pub copy_of: String,
}

impl Default for Labels {
    fn default() -> Self {
        Self {
            source: "mirror".into(),
            target: "mirror-target".into(),
            copy_of: "mirror.kube-informer.dev/source".into(),
        }
    }
}

impl Labels {
    /// The sources' label selector.
    pub fn sources(&self) -> String {
        format!("{}=true", self.source)
    }

    /// The target namespaces' label selector.
    pub fn targets(&self) -> String {
        format!("{}=true", self.target)
    }

    /// The copies' label selector (any value).
    pub fn copies(&self) -> String {
        self.copy_of.clone()
    }

    fn is_set(object: &impl ResourceExt, label: &str) -> bool {
        object.labels().get(label).is_some_and(|v| v == "true")
    }
}

/// The value of [`Labels::copy_of`] for the copies of `source`:
/// `<namespace>.<name>`, unambiguous because a namespace name has no dot.
/// `None` when that is longer than a label value may be (63 characters).
pub fn copy_label_value(source: &ObjectKey) -> Option<String> {
    let value = format!("{}.{}", source.namespace()?, source.name());
    (value.len() <= 63).then_some(value)
}

/// The owner mapper: the key of the source a copy mirrors, read from its
/// label; `None` for an object without the label or with a bad value.
pub fn source_of_copy(copy: &ConfigMap, labels: &Labels) -> Option<ObjectKey> {
    let value = copy.labels().get(&labels.copy_of)?;
    let (namespace, name) = value.split_once('.')?;
    ObjectKey::new(Some(namespace), name).ok()
}

/// Why a reconcile failed; the runner retries the key with backoff.
#[derive(Debug)]
pub enum MirrorError {
    /// The API server refused or did not answer a write.
    Api {
        /// What was being done, e.g. `create team-a/default.settings`.
        action: String,
        /// The client's error.
        error: kube::Error,
    },
    /// The source's `<namespace>.<name>` does not fit in a label value.
    NameTooLong(ObjectKey),
    /// A ConfigMap the operator did not make holds a copy's name.
    NameTaken(String),
}

impl fmt::Display for MirrorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api { action, error } => write!(f, "{action}: {error}"),
            Self::NameTooLong(key) => write!(
                f,
                "{key}: namespace and name together exceed the 63 characters of a label value"
            ),
            Self::NameTaken(copy) => write!(f, "{copy} exists and is not a mirror copy"),
        }
    }
}

impl std::error::Error for MirrorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Api { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The reconciler: reads the three informers' stores, writes copies.
#[derive(Clone)]
pub struct Mirror {
    client: Client,
    labels: Labels,
    copies: Store<ConfigMap>,
    namespaces: Store<Namespace>,
    /// Whether a replace carries the resourceVersion it was computed from.
    replace_preconditions: bool,
    /// Whether a delete carries the uid and resourceVersion of the copy
    /// it was decided on.
    delete_preconditions: bool,
}

impl fmt::Debug for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mirror")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl Mirror {
    /// A reconciler over the copies' store (indexed [`BY_SOURCE`]) and the
    /// target namespaces' store.
    pub fn new(
        client: Client,
        labels: Labels,
        copies: Store<ConfigMap>,
        namespaces: Store<Namespace>,
    ) -> Self {
        Self {
            client,
            labels,
            copies,
            namespaces,
            replace_preconditions: true,
            delete_preconditions: true,
        }
    }

    /// The same reconciler with a planted bug: its replaces carry no
    /// resourceVersion, so a change made since the copies' store saw the
    /// copy is overwritten instead of refused. The operator never calls
    /// this; `tests/simulation_mirror.rs` does, to check that seeded
    /// simulations find the lost update.
    #[allow(dead_code)] // only the simulation test calls it
    #[must_use]
    pub fn without_replace_preconditions(mut self) -> Self {
        self.replace_preconditions = false;
        self
    }

    /// The same reconciler with a planted bug: its deletes carry no
    /// precondition, so a copy a user took over after the copies' store
    /// saw it is deleted all the same. The operator never calls this;
    /// `tests/simulation_mirror.rs` does, to check that seeded simulations
    /// find the lost object.
    #[allow(dead_code)] // only the simulation test calls it
    #[must_use]
    pub fn without_delete_preconditions(mut self) -> Self {
        self.delete_preconditions = false;
        self
    }

    /// The namespaces that should hold copies now: labelled targets that
    /// are not being deleted (the API server refuses new objects there).
    pub fn target_namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .namespaces
            .list()
            .iter()
            .filter(|ns| Labels::is_set(&***ns, &self.labels.target))
            .filter(|ns| ns.metadata.deletion_timestamp.is_none())
            .map(|ns| ns.name_any())
            .collect();
        names.sort();
        names
    }

    /// The copies `source` should have, by namespace: none when it is gone,
    /// unlabelled or being deleted; else one in every target namespace but
    /// its own.
    pub fn desired(
        &self,
        key: &ObjectKey,
        source: Option<&ConfigMap>,
    ) -> Result<BTreeMap<String, ConfigMap>, MirrorError> {
        let Some(source) = source.filter(|s| {
            Labels::is_set(*s, &self.labels.source) && s.metadata.deletion_timestamp.is_none()
        }) else {
            return Ok(BTreeMap::new());
        };
        let value = copy_label_value(key).ok_or_else(|| MirrorError::NameTooLong(key.clone()))?;
        Ok(self
            .target_namespaces()
            .into_iter()
            .filter(|ns| Some(ns.as_str()) != key.namespace())
            .map(|ns| {
                let copy = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(value.clone()),
                        namespace: Some(ns.clone()),
                        labels: Some([(self.labels.copy_of.clone(), value.clone())].into()),
                        ..Default::default()
                    },
                    data: source.data.clone(),
                    binary_data: source.binary_data.clone(),
                    immutable: source.immutable,
                };
                (ns, copy)
            })
            .collect())
    }

    /// Makes the copies of `key` what [`desired`](Self::desired) says:
    /// creates missing ones, replaces stale ones (with the resourceVersion
    /// the store holds, so a concurrent change is a conflict, retried),
    /// deletes the ones no longer wanted (with the uid and resourceVersion
    /// the store holds, so a copy changed since, e.g. taken over by a user,
    /// is not deleted). A source that was deleted, or that the operator
    /// never saw (`None`), wants no copies.
    ///
    /// A write that fails does not stop the others: every namespace gets
    /// its write, then the first error is returned (and the key retried).
    /// So a copy name taken in one namespace ([`MirrorError::NameTaken`])
    /// keeps no copy out of the other namespaces.
    pub async fn reconcile(
        &self,
        key: &ObjectKey,
        source: Option<Observed<ConfigMap>>,
    ) -> Result<Action, MirrorError> {
        let source = source.filter(|source| !source.is_deleted());
        let mut want = self.desired(key, source.as_ref().map(|source| &**source.object()))?;
        let have = match copy_label_value(key) {
            Some(value) => self
                .copies
                .by_index(BY_SOURCE, &value)
                .expect("the copies' store has the by-source index"),
            None => Vec::new(),
        };
        let mut first_error = None;
        for copy in have {
            let ns = copy.namespace().unwrap_or_default();
            let written = match want.remove(&ns) {
                Some(wanted) if same_content(&copy, &wanted) => Ok(()),
                Some(mut wanted) => {
                    wanted.metadata.resource_version = copy.resource_version();
                    self.replace(&ns, wanted).await
                }
                None => self.delete(&ns, &copy).await,
            };
            if let Err(error) = written {
                first_error.get_or_insert(error);
            }
        }
        for (ns, wanted) in want {
            if let Err(error) = self.create(&ns, wanted).await {
                first_error.get_or_insert(error);
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(Action::await_change()),
        }
    }

    fn api(&self, ns: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), ns)
    }

    async fn create(&self, ns: &str, wanted: ConfigMap) -> Result<(), MirrorError> {
        let name = wanted.name_any();
        match self.api(ns).create(&PostParams::default(), &wanted).await {
            Ok(_) => Ok(()),
            // The copies' store has not seen it yet (or a restart hid it):
            // read it and take it over if it is a copy of this source.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let current = self
                    .api(ns)
                    .get(&name)
                    .await
                    .map_err(|error| api_error(format!("read {ns}/{name}"), error))?;
                if current.labels().get(&self.labels.copy_of)
                    != wanted.labels().get(&self.labels.copy_of)
                {
                    return Err(MirrorError::NameTaken(format!("{ns}/{name}")));
                }
                if same_content(&current, &wanted) {
                    return Ok(());
                }
                let mut wanted = wanted;
                wanted.metadata.resource_version = current.resource_version();
                self.replace(ns, wanted).await
            }
            Err(error) => Err(api_error(format!("create {ns}/{name}"), error)),
        }
    }

    async fn replace(&self, ns: &str, mut wanted: ConfigMap) -> Result<(), MirrorError> {
        let name = wanted.name_any();
        if !self.replace_preconditions {
            wanted.metadata.resource_version = None;
        }
        self.api(ns)
            .replace(&name, &PostParams::default(), &wanted)
            .await
            .map(drop)
            .map_err(|error| api_error(format!("update {ns}/{name}"), error))
    }

    /// Deletes `copy` as the copies' store holds it: a precondition on its
    /// uid and resourceVersion refuses the delete (409, retried) when the
    /// object changed since, e.g. a user took the name over.
    async fn delete(&self, ns: &str, copy: &ConfigMap) -> Result<(), MirrorError> {
        let name = copy.name_any();
        let mut params = DeleteParams::default();
        if self.delete_preconditions {
            params.preconditions = Some(Preconditions {
                uid: copy.uid(),
                resource_version: copy.resource_version(),
            });
        }
        match self.api(ns).delete(&name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()), // already gone
            Err(error) => Err(api_error(format!("delete {ns}/{name}"), error)),
        }
    }
}

fn api_error(action: String, error: kube::Error) -> MirrorError {
    MirrorError::Api { action, error }
}

/// Whether a copy already holds what is wanted (data and its label).
fn same_content(copy: &ConfigMap, wanted: &ConfigMap) -> bool {
    copy.data == wanted.data
        && copy.binary_data == wanted.binary_data
        && copy.immutable == wanted.immutable
        && wanted
            .labels()
            .iter()
            .all(|(k, v)| copy.labels().get(k) == Some(v))
}
