//! Projections: cache a slim type of your own in place of a full one.
//!
//! A cached `Pod` costs its whole decoded form whatever a controller reads
//! of it: k8s-openapi's types keep every optional sub-struct inline
//! (`benches/compare/NOTES.md`, "Where a cached Pod's bytes go", takes one
//! apart; BENCHMARKS.md compares a projection's cost with the full
//! type's). A controller that reads three fields can cache a struct with
//! those three fields instead. serde skips every other field of the JSON
//! while decoding, so nothing else is ever allocated.
//!
//! [`projection!`](crate::projection!) makes such a struct a
//! [`kube::Resource`] with the identity of the full type: same group,
//! version, kind, plural and scope. So `Api::<SlimPod>::all(client)` lists
//! and watches `/api/v1/pods`, and everything in this crate that takes a
//! `K: Resource` takes it: [`Informer`](crate::Informer) with label and
//! field selectors, indexes, transforms; the
//! [`InformerFactory`](crate::InformerFactory) (which shares informers by
//! resource *and* Rust type, so a projection and the full type get one
//! informer each); the [`Controller`](crate::Controller), its `owns` and
//! `watches`.
//!
//! # What a projection must have
//!
//! - a `metadata: ObjectMeta` field: keys, resourceVersions, owner
//!   references and selectors come from it (put `#[serde(default)]` on it
//!   only if the server may leave it out, which it does not for stored
//!   objects);
//! - `Deserialize`, `Clone` and `Debug` (what `kube::Api` asks of a
//!   listed type); every other field `Option` or `#[serde(default)]`, since
//!   objects may leave them out;
//! - a full type with `DynamicType = ()` (every k8s-openapi type and every
//!   `#[derive(CustomResource)]` type).
//!
//! A projection keeps `ObjectMeta` whole, managedFields included: they
//! are most of a projected Pod's memory unless
//! [`InformerBuilder::strip_managed_fields`](crate::InformerBuilder::strip_managed_fields)
//! leaves them out, so a projection wants the strip too ([the guide's
//! chapter on memory](crate::guide::memory) has the figures of both).
//!
//! # kube-derive's `inherit`
//!
//! kube-derive's `#[derive(Resource)]` with `#[resource(inherit = "Pod")]`
//! writes the same [`kube::Resource`] impl as [`projection!`](crate::projection!):
//! the full type's identity, the metadata from the `metadata` field. This
//! crate sees nothing but that impl, so it treats a type made either way
//! alike. The macro spares a program kube's `derive` feature
//! and any `kube` or `k8s-openapi` import of its own, and takes the full
//! type as a type rather than a string:
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use kube::{Api, Resource};
//! use kube_informer::Informer;
//! use kube_informer_testing::FakeApiServer;
//! use serde::Deserialize;
//!
//! #[derive(Resource, Debug, Clone, Deserialize)]
//! #[resource(inherit = "Pod")]
//! struct MetaPod {
//!     metadata: ObjectMeta,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = FakeApiServer::start().await;
//! let mut pod = Pod::default();
//! pod.metadata.namespace = Some("shop".into());
//! pod.metadata.name = Some("web-1".into());
//! server.create(&pod)?;
//!
//! let informer = Informer::builder(Api::<MetaPod>::all(server.client())).build();
//! tokio::spawn(informer.run());
//! informer.wait_until_synced().await?;
//! assert!(informer.store().get_by(Some("shop"), "web-1").is_some());
//! informer.stop();
//! # Ok(()) }
//! ```
//!
//! # Rules
//!
//! - **PJ1** An informer of a projection lists and watches the full type's
//!   resource, and its store holds what the projection names, decoded from
//!   the same bytes; fields the projection does not name are skipped, not
//!   errors.
//! - **PJ2** Label and field selectors go to the server as for the full
//!   type; index functions and transforms see the projection.
//! - **PJ3** An [`InformerFactory`](crate::InformerFactory) shares one
//!   informer among the callers of one projection, and keeps the
//!   projection's apart from the full type's (two caches of one resource).
//! - **PJ4** A [`Controller`](crate::Controller) of a projection
//!   reconciles on its changes and maps owned objects to it by their owner
//!   references (kind and group are the full type's).
//!
//! # What it does not do
//!
//! - Writes: a projection is for reading. A write through
//!   `Api<SlimPod>` would send only the projected fields; write through the
//!   full type's `Api` (or a patch) instead.
//! - Status from the server that the projection does not name is gone:
//!   a reconciler that needs a field the projection left out reads the
//!   object from the API server, or the projection grows that field.

/// Makes `$slim`, a struct with a `metadata: ObjectMeta` field, a
/// [`kube::Resource`] with the identity (group, version, kind, plural,
/// scope) of `$full`, so an informer can cache it in place of `$full`.
///
/// See [the module docs](mod@crate::projection) for what the struct must have.
///
/// # Examples
///
/// A Pod informer that caches each Pod's metadata, node and phase only,
/// with an index by node:
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use kube::Api;
/// use kube_informer::Informer;
/// use kube_informer_testing::{FakeApiServer, ResourceType};
/// use serde::Deserialize;
///
/// /// The three things a scheduler-like controller reads of a Pod.
/// #[derive(Debug, Clone, Deserialize)]
/// struct SlimPod {
///     metadata: ObjectMeta,
///     spec: Option<SlimSpec>,
///     status: Option<SlimStatus>,
/// }
///
/// #[derive(Debug, Clone, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// struct SlimSpec {
///     node_name: Option<String>,
/// }
///
/// #[derive(Debug, Clone, Deserialize)]
/// struct SlimStatus {
///     phase: Option<String>,
/// }
///
/// kube_informer::projection!(SlimPod, Pod);
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// server.create_value(
///     &ResourceType::of::<Pod>(),
///     serde_json::json!({
///         "apiVersion": "v1", "kind": "Pod",
///         "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
///         "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "web:1"}]},
///         "status": {"phase": "Running"}
///     }),
/// )?;
///
/// let by_node = |pod: &SlimPod| {
///     pod.spec.iter().filter_map(|s| s.node_name.clone()).collect()
/// };
/// let informer = Informer::builder(Api::<SlimPod>::all(server.client()))
///     .indexer("node", by_node)
///     .strip_managed_fields()
///     .build();
/// tokio::spawn(informer.run());
/// informer.wait_until_synced().await?;
///
/// let on_node_a = informer.store().by_index("node", "node-a")?;
/// assert_eq!(on_node_a.len(), 1);
/// let phase = on_node_a[0].status.as_ref().and_then(|s| s.phase.as_deref());
/// assert_eq!(phase, Some("Running"));
/// informer.stop();
/// # Ok(())
/// # }
/// ```
#[macro_export]
macro_rules! projection {
    ($slim:ty, $full:ty $(,)?) => {
        impl $crate::__private::kube::Resource for $slim {
            type DynamicType = ();
            type Scope = <$full as $crate::__private::kube::Resource>::Scope;

            fn kind(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$full as $crate::__private::kube::Resource>::kind(dt)
            }

            fn group(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$full as $crate::__private::kube::Resource>::group(dt)
            }

            fn version(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$full as $crate::__private::kube::Resource>::version(dt)
            }

            fn api_version(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$full as $crate::__private::kube::Resource>::api_version(dt)
            }

            fn plural(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$full as $crate::__private::kube::Resource>::plural(dt)
            }

            fn meta(&self) -> &$crate::__private::ObjectMeta {
                &self.metadata
            }

            fn meta_mut(&mut self) -> &mut $crate::__private::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
