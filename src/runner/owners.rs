//! Owner mapping: notifications about children become keys of their
//! controller owner, so "watch owned objects" is one combinator.

use std::{
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll},
};

use futures::{Stream, stream::FusedStream};
use kube::Resource;
use pin_project::pin_project;

use crate::{key::ObjectKey, notification::Notification};

/// The key of `child`'s controller owner of type `O`: the owner reference
/// with `controller: true` whose kind and apiVersion are `O`'s, in the
/// child's namespace (owner references never cross namespaces). `None` when
/// the child has no such owner.
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
    let meta = child.meta();
    let kind = O::kind(&());
    let api_version = O::api_version(&());
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true) && r.kind == kind && r.api_version == api_version)
        .and_then(|r| ObjectKey::new(meta.namespace.as_deref(), &r.name).ok())
}

/// Owner mapping on streams of [`Notification`]s, e.g. a
/// [`Subscription`](crate::Subscription) of Pods feeding a queue of
/// ReplicaSet keys.
pub trait OwnerStreamExt<K>: Stream<Item = Notification<K>> {
    /// The key of the controller owner of type `O` of each notification's
    /// newest object ([`controller_owner_key`]); children without one are
    /// skipped.
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
    fn owner_keys<O>(self) -> OwnerKeys<Self, O>
    where
        Self: Sized,
        K: Resource,
        O: Resource<DynamicType = ()>,
    {
        OwnerKeys {
            stream: self,
            owner: PhantomData,
        }
    }
}

impl<K, S: Stream<Item = Notification<K>> + ?Sized> OwnerStreamExt<K> for S {}

/// Stream for the [`owner_keys`](OwnerStreamExt::owner_keys) method.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct OwnerKeys<S, O> {
    #[pin]
    stream: S,
    owner: PhantomData<fn() -> O>,
}

impl<S: std::fmt::Debug, O> std::fmt::Debug for OwnerKeys<S, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerKeys")
            .field("stream", &self.stream)
            .finish()
    }
}

impl<K, S, O> Stream for OwnerKeys<S, O>
where
    K: Resource,
    S: Stream<Item = Notification<K>>,
    O: Resource<DynamicType = ()>,
{
    type Item = ObjectKey;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ObjectKey>> {
        let mut this = self.project();
        loop {
            match std::task::ready!(this.stream.as_mut().poll_next(cx)) {
                Some(n) => {
                    if let Some(key) = controller_owner_key::<O, K>(&**n.object()) {
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
    S: FusedStream<Item = Notification<K>>,
    O: Resource<DynamicType = ()>,
{
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}
