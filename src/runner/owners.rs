//! Owner mapping: notifications about children become keys of their
//! controller owner, so "watch owned objects" is one combinator.

use std::{
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use kube::Resource;
use pin_project::pin_project;

use crate::{key::ObjectKey, notification::Notification};

/// The key of `child`'s controller owner of type `O`: the owner reference
/// with `controller: true` whose kind and API group are `O`'s, in the
/// child's namespace (owner references never cross namespaces). `None` when
/// the child has no such owner (E5).
///
/// The version in the reference's apiVersion is not compared: a reference
/// written under another served version of the owner's kind names the same
/// object. For owner types with a dynamic type, such as
/// [`DynamicObject`](kube::core::DynamicObject), use
/// [`controller_owner_key_with`].
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kube_informer::runner::controller_owner_key;
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web-abc12".into());
/// pod.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "apps/v1".into(),
///     kind: "ReplicaSet".into(),
///     name: "web".into(),
///     controller: Some(true),
///     ..Default::default()
/// }]);
/// let owner = controller_owner_key::<ReplicaSet, _>(&pod).unwrap();
/// assert_eq!(owner.as_str(), "default/web");
/// ```
pub fn controller_owner_key<O, K>(child: &K) -> Option<ObjectKey>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    controller_owner_key_with::<O, K>(child, &())
}

/// [`controller_owner_key`] for an owner type whose kind and group are
/// known at run time from `dyntype`, e.g. a
/// [`DynamicObject`](kube::core::DynamicObject) with its
/// [`ApiResource`](kube::core::ApiResource).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
/// use kube_informer::runner::controller_owner_key_with;
///
/// let database = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Database"));
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("shop".into());
/// cm.metadata.name = Some("orders-config".into());
/// cm.metadata.owner_references = Some(vec![OwnerReference {
///     // Written under an older served version: the same Database.
///     api_version: "example.com/v1beta1".into(),
///     kind: "Database".into(),
///     name: "orders".into(),
///     controller: Some(true),
///     ..Default::default()
/// }]);
/// let owner = controller_owner_key_with::<DynamicObject, _>(&cm, &database).unwrap();
/// assert_eq!(owner.as_str(), "shop/orders");
/// ```
pub fn controller_owner_key_with<O, K>(child: &K, dyntype: &O::DynamicType) -> Option<ObjectKey>
where
    O: Resource,
    K: Resource,
{
    controller_owner_key_of(child, &O::group(dyntype), &O::kind(dyntype))
}

/// The key of `child`'s controller owner of the given API group and kind
/// (E5): the one matching rule behind both functions above and the stream.
fn controller_owner_key_of<K: Resource>(child: &K, group: &str, kind: &str) -> Option<ObjectKey> {
    let meta = child.meta();
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| {
            r.controller == Some(true) && r.kind == kind && group_of(&r.api_version) == Some(group)
        })
        .and_then(|r| ObjectKey::new(meta.namespace.as_deref(), &r.name).ok())
}

/// The API group of an apiVersion: the part before the `/` of
/// `group/version`, `""` for the core group's bare `version` (`"v1"`).
/// `None` for a string of neither form (empty, an empty part, or more than
/// one `/`), which no owner matches.
fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None if !api_version.is_empty() => Some(""),
        Some((group, version))
            if !group.is_empty() && !version.is_empty() && !version.contains('/') =>
        {
            Some(group)
        }
        _ => None,
    }
}

/// Owner mapping on streams of [`Notification`]s, e.g. a
/// [`Subscription`](crate::Subscription) of Pods feeding a queue of
/// ReplicaSet keys.
pub trait OwnerStreamExt<K>: Stream<Item = Notification<K>> {
    /// The key of the controller owner of type `O` of each notification's
    /// newest object ([`controller_owner_key`]: matched by API group and
    /// kind, any version); children without one are skipped (E5). For owner
    /// types with a dynamic type, use [`owner_keys_with`](Self::owner_keys_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    /// use kube_informer::{Notification, runner::OwnerStreamExt};
    ///
    /// fn pod(owner: Option<&str>) -> Arc<Pod> {
    ///     let mut pod = Pod::default();
    ///     pod.metadata.namespace = Some("default".into());
    ///     pod.metadata.name = Some("p".into());
    ///     pod.metadata.owner_references = owner.map(|name| vec![OwnerReference {
    ///         api_version: "apps/v1".into(),
    ///         kind: "ReplicaSet".into(),
    ///         name: name.into(),
    ///         controller: Some(true),
    ///         ..Default::default()
    ///     }]);
    ///     Arc::new(pod)
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let notifications = stream::iter([
    ///     Notification::Added { object: pod(Some("web")), in_initial_list: false },
    ///     Notification::Added { object: pod(None), in_initial_list: false },
    /// ]);
    /// let owners: Vec<_> = notifications.owner_keys::<ReplicaSet>().collect().await;
    /// assert_eq!(owners.len(), 1);
    /// assert_eq!(owners[0].as_str(), "default/web");
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn owner_keys<O>(self) -> impl FusedStream<Item = ObjectKey>
    where
        Self: Sized,
        K: Resource,
        O: Resource<DynamicType = ()>,
    {
        self.owner_keys_with::<O>(())
    }

    /// [`owner_keys`](Self::owner_keys) for an owner type whose kind and
    /// group are known at run time from `dyntype`, e.g. a
    /// [`DynamicObject`](kube::core::DynamicObject) with its
    /// [`ApiResource`](kube::core::ApiResource)
    /// ([`controller_owner_key_with`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    /// use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    /// use kube_informer::{Notification, runner::OwnerStreamExt};
    ///
    /// fn cm(owner_api_version: &str) -> Arc<ConfigMap> {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.namespace = Some("shop".into());
    ///     cm.metadata.name = Some("orders-config".into());
    ///     cm.metadata.owner_references = Some(vec![OwnerReference {
    ///         api_version: owner_api_version.into(),
    ///         kind: "Database".into(),
    ///         name: "orders".into(),
    ///         controller: Some(true),
    ///         ..Default::default()
    ///     }]);
    ///     Arc::new(cm)
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let database = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Database"));
    /// let notifications = stream::iter([
    ///     Notification::Added { object: cm("example.com/v1"), in_initial_list: false },
    ///     Notification::Added { object: cm("example.com/v1beta1"), in_initial_list: false },
    ///     Notification::Added { object: cm("other.io/v1"), in_initial_list: false },
    /// ]);
    /// let owners: Vec<_> = notifications.owner_keys_with::<DynamicObject>(database).collect().await;
    /// assert_eq!(owners.len(), 2); // both versions of example.com's Database
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn owner_keys_with<O>(self, dyntype: O::DynamicType) -> impl FusedStream<Item = ObjectKey>
    where
        Self: Sized,
        K: Resource,
        O: Resource,
    {
        OwnerKeys::<Self, O> {
            stream: self.fuse(),
            group: O::group(&dyntype).into_owned(),
            kind: O::kind(&dyntype).into_owned(),
            owner: PhantomData,
        }
    }
}

impl<K, S: Stream<Item = Notification<K>> + ?Sized> OwnerStreamExt<K> for S {}

/// Stream for the [`owner_keys`](OwnerStreamExt::owner_keys) and
/// [`owner_keys_with`](OwnerStreamExt::owner_keys_with) methods, which
/// return it as an `impl FusedStream`.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct OwnerKeys<S, O> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
    // The owner type's group and kind, read once from its dynamic type.
    group: String,
    kind: String,
    owner: PhantomData<fn() -> O>,
}

impl<S: std::fmt::Debug, O> std::fmt::Debug for OwnerKeys<S, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerKeys")
            .field("stream", &self.stream)
            .field("group", &self.group)
            .field("kind", &self.kind)
            .finish()
    }
}

impl<K, S, O> Stream for OwnerKeys<S, O>
where
    K: Resource,
    S: Stream<Item = Notification<K>>,
{
    type Item = ObjectKey;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ObjectKey>> {
        let mut this = self.project();
        loop {
            match std::task::ready!(this.stream.as_mut().poll_next(cx)) {
                Some(n) => {
                    if let Some(key) = controller_owner_key_of(&**n.object(), this.group, this.kind)
                    {
                        return Poll::Ready(Some(key));
                    }
                }
                None => return Poll::Ready(None),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.stream.size_hint().1)
    }
}

impl<K, S, O> FusedStream for OwnerKeys<S, O>
where
    K: Resource,
    S: Stream<Item = Notification<K>>,
{
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}

#[cfg(test)]
mod tests {
    use super::group_of;

    // E5: the group of an apiVersion, and the strings no owner matches.
    #[test]
    fn e5_group_of_reads_group_version_and_the_core_group() {
        assert_eq!(group_of("apps/v1"), Some("apps"));
        assert_eq!(group_of("example.com/v1beta1"), Some("example.com"));
        assert_eq!(group_of("v1"), Some(""));
        for malformed in ["", "/", "apps/", "/v1", "a/b/c"] {
            assert_eq!(group_of(malformed), None, "{malformed:?}");
        }
    }
}
