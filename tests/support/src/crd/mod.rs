//! Custom resources: `CustomResourceDefinition`s registered by a test
//! ([`FakeApiServer::register_crd`]) or created over HTTP, and the objects
//! of the types they define.
//!
//! The CRD object itself is the record of what is served: it is stored
//! under `apiextensions.k8s.io/v1/customresourcedefinitions` (listable and
//! watchable like any object), and each request for a custom resource looks
//! its definition up there.
//!
//! Rules (each test names the one it checks):
//! - CR1: a registered CRD serves every version marked `served`, with its
//!   scope (`Namespaced` or `Cluster`); objects are stored once, at the
//!   storage version, whose apiVersion they carry.
//! - CR2: a CRD the API server would refuse is refused with 422 `Invalid`
//!   and its field errors: a name other than `<plural>.<group>`, a group
//!   without a dot, a scope other than `Namespaced`/`Cluster`, missing
//!   plural or kind, and anything but exactly one storage version. (A CRD
//!   that serves no version is accepted, as kube-apiserver v1.34 accepts it.)
//! - CR3: a created CRD is stored with `spec.conversion.strategy: None`
//!   defaulted and an empty status (`acceptedNames` with empty plural and
//!   kind, `storedVersions` the storage version), answered as such (201),
//!   then accepted and established as the API server's controllers do it:
//!   one update with `NamesAccepted=True` (`NoConflicts`) and
//!   `Established=False` (`Installing`), one with `Established=True`
//!   (`InitialNamesAccepted`), `status.acceptedNames` set from
//!   `spec.names`. Each is a watch event (ADDED, MODIFIED, MODIFIED).
//! - CR4: a read, list or watch through a served version other than the
//!   storage version answers the same objects with that version's
//!   apiVersion; a write through it is stored at the storage version. No
//!   conversion webhook runs: fields pass through unchanged, as with
//!   `spec.conversion.strategy: None`.
//! - CR5: a custom resource body must name its kind and the URL's
//!   apiVersion: no `kind` is 400 ("Object 'Kind' is missing"), another
//!   apiVersion (or none) is 400 ("the API version in the data … does not
//!   match the expected API version …"), another kind is 422 `Invalid`
//!   ("kind: Invalid value: …: must be Foo"). A version the CRD does not
//!   serve is 404.
//! - CR6: deleting a CRD answers the CRD marked for deletion
//!   (`deletionTimestamp`, the `customresourcecleanup.apiextensions.k8s.io`
//!   finalizer, `Terminating=True` / `InstanceDeletionPending`), then, as
//!   the API server's cleanup does: `Terminating` / `InstanceDeletionInProgress`,
//!   every object of the type deleted (a DELETED event each on open watches
//!   of any served version), the open watches of the type ended, the type
//!   no longer served (404), and the CRD deleted (its DELETED event last).
//! - CR7: the status subresource comes from each version's
//!   `subresources.status` (the [`ResourceType`]'s `status_subresource`).

mod definition;
mod lifecycle;
pub(crate) mod versions;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::{FakeApiServer, faults::ApiStatus, resource::ResourceType};

pub(crate) use definition::{Definition, crd_resource_type};
pub(crate) use lifecycle::{around_write, definitions, find_definition, status_on_create};

impl FakeApiServer {
    /// Registers a `CustomResourceDefinition` (as kube's
    /// `CustomResourceExt::crd()` builds one) as kube-apiserver installs
    /// one: the CRD is stored (created, or replaced if one of that name
    /// exists) and established, and every served version becomes a
    /// resource type. Returns those types, storage version first.
    ///
    /// Objects are stored at the storage version; reads through another
    /// served version carry that version's apiVersion, with fields passed
    /// through unchanged (no conversion webhook, as with conversion
    /// strategy `None`). Test-side writes (`create_value`, typed `create`)
    /// go through the storage version's type.
    ///
    /// A CRD the API server would refuse (a name other than
    /// `<plural>.<group>`, not exactly one storage version, …) gets the
    /// API server's 422 `Invalid` status.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "widgets.example.com"},
    ///     "spec": {
    ///         "group": "example.com",
    ///         "names": {"plural": "widgets", "kind": "Widget"},
    ///         "scope": "Namespaced",
    ///         "versions": [{"name": "v1", "served": true, "storage": true,
    ///                       "subresources": {"status": {}}}],
    ///     },
    /// }))?;
    /// let types = server.register_crd(&crd)?;
    /// assert_eq!(types[0].api_version(), "example.com/v1");
    /// assert!(types[0].status_subresource);
    ///
    /// let widget = serde_json::json!({
    ///     "apiVersion": "example.com/v1", "kind": "Widget",
    ///     "metadata": {"name": "w", "namespace": "default"},
    /// });
    /// server.create_value(&types[0], widget)?;
    /// # Ok(()) }
    /// ```
    pub fn register_crd(
        &self,
        crd: &CustomResourceDefinition,
    ) -> Result<Vec<ResourceType>, ApiStatus> {
        let value = serde_json::to_value(crd).map_err(|e| {
            ApiStatus::new(
                400,
                "BadRequest",
                &format!("the CRD does not serialize: {e}"),
            )
        })?;
        self.register_crd_value(value)
    }

    /// [`register_crd`](Self::register_crd) for a CRD given as JSON (for
    /// instance read from a YAML manifest). `apiVersion` and `kind` may be
    /// left out.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// let refused = server.register_crd_value(serde_json::json!({
    ///     "metadata": {"name": "widgets.example.com"},
    ///     "spec": {"group": "example.com", "scope": "Cluster",
    ///              "names": {"plural": "gadgets", "kind": "Gadget"},
    ///              "versions": [{"name": "v1", "served": true, "storage": true}]},
    /// }));
    /// assert_eq!(refused.unwrap_err().code, 422); // the name must be gadgets.example.com
    /// # }
    /// ```
    pub fn register_crd_value(&self, crd: Value) -> Result<Vec<ResourceType>, ApiStatus> {
        let result = lifecycle::register(&mut self.shared.state.lock(), crd);
        self.shared.changed.notify_waiters();
        result
    }

    /// Deletes a registered CRD as kube-apiserver does: every object of its
    /// type is deleted, open watches of the type end, the type is no
    /// longer served, and the CRD goes (CR6). Returns the CRD's last state.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::start().await;
    /// let types = server.register_crd_value(serde_json::json!({
    ///     "metadata": {"name": "gadgets.example.com"},
    ///     "spec": {"group": "example.com", "scope": "Cluster",
    ///              "names": {"plural": "gadgets", "kind": "Gadget"},
    ///              "versions": [{"name": "v1", "served": true, "storage": true}]},
    /// }))?;
    /// server.create_value(&types[0], serde_json::json!({"metadata": {"name": "g"}}))?;
    /// server.delete_crd("gadgets.example.com")?;
    /// assert!(server.objects_value(&types[0]).is_empty());
    /// # Ok(()) }
    /// ```
    pub fn delete_crd(&self, name: &str) -> Result<Value, ApiStatus> {
        let result = lifecycle::delete(&mut self.shared.state.lock(), name).map(|(_, last)| last);
        self.shared.changed.notify_waiters();
        result
    }
}

// ---- `ApiStatus` as an error (so `?` takes the refusals of `register_crd` into `Box<dyn Error>`) ----

impl std::fmt::Display for ApiStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiStatus {}
