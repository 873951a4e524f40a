//! Combinators on any stream of [`Notification`]s, one per file under
//! `ext/`, and the [`ChangeFilter`]s (in [`changed`]) that
//! [`NotificationStreamExt::filter_changes`] filters updates by.

pub mod changed;
mod changed_only;
mod filter_changes;
mod keys;
mod objects;

pub use changed::ChangeFilter;
// The controller holds its own subscription as this named type.
pub(crate) use changed_only::ChangedOnly;

use std::sync::Arc;

use filter_changes::FilterChanges;
use futures::{Stream, stream::FusedStream};
use keys::Keys;
use kube::Resource;
use objects::Objects;

use crate::{
    key::{Error, ObjectKey},
    notification::Notification,
};

/// Extra methods for streams of [`Notification`]s, such as a
/// [`Subscription`](crate::dispatch::Subscription).
///
/// Each method returns an `impl FusedStream`: the stream it returns ends
/// for good once it has returned `None`, so it can go into `select!` as it
/// is. It is `Send`, `Sync` and `Unpin` when the stream it wraps (and the
/// filter or key function it was given) is.
pub trait NotificationStreamExt<K>: Stream<Item = Notification<K>> {
    /// Drops every `Updated` whose old and new objects have the same
    /// resourceVersion (resyncs and relists that found nothing new): the
    /// usual first line of a client-go UpdateFunc. The rule is the one
    /// that sets [`Notification::is_resync`] (I3), applied whatever the
    /// notification's `resync` flag says; a missing resourceVersion reads
    /// as the empty string, as in Go.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Notification, ext::NotificationStreamExt};
    ///
    /// fn cm(rv: &str) -> Arc<ConfigMap> {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.resource_version = Some(rv.into());
    ///     Arc::new(cm)
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let notifications = stream::iter([
    ///     Notification::Updated { old: cm("1"), new: cm("1"), resync: true },
    ///     Notification::Updated { old: cm("1"), new: cm("2"), resync: false },
    /// ]);
    /// let kept: Vec<_> = notifications.changed_only().collect().await;
    /// assert_eq!(kept.len(), 1);
    /// assert_eq!(kept[0].object().metadata.resource_version.as_deref(), Some("2"));
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn changed_only(self) -> impl FusedStream<Item = Notification<K>>
    where
        Self: Sized,
        K: Resource,
    {
        ChangedOnly::new(self)
    }

    /// Drops the watched updates that `filter` says do not matter: an
    /// `Updated` with `resync: false` passes when
    /// [`filter.passes(old, new)`](ChangeFilter::passes) (P1). Additions
    /// and deletions always pass (P1), and so do resyncs (P2): a subscriber
    /// that asked for a resync period gets its rounds, whatever the
    /// filter; follow with [`changed_only`](Self::changed_only) to drop
    /// them as well. The filters and their rules are in [`changed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kube_informer::{Notification, ext::{NotificationStreamExt, ChangeFilter, changed}};
    ///
    /// fn deploy(generation: i64, rv: &str) -> Arc<Deployment> {
    ///     let mut d = Deployment::default();
    ///     d.metadata.generation = Some(generation);
    ///     d.metadata.resource_version = Some(rv.into());
    ///     Arc::new(d)
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let notifications = stream::iter([
    ///     // A status write: same generation, dropped.
    ///     Notification::Updated { old: deploy(1, "10"), new: deploy(1, "11"), resync: false },
    ///     // A spec change: kept.
    ///     Notification::Updated { old: deploy(1, "11"), new: deploy(2, "12"), resync: false },
    ///     // A resync: kept (P2).
    ///     Notification::Updated { old: deploy(2, "12"), new: deploy(2, "12"), resync: true },
    /// ]);
    /// let kept: Vec<_> = notifications
    ///     .filter_changes(changed::generation().or(changed::labels()))
    ///     .map(|n| n.object().metadata.resource_version.clone().unwrap())
    ///     .collect()
    ///     .await;
    /// assert_eq!(kept, ["12", "12"]);
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn filter_changes<P>(self, filter: P) -> impl FusedStream<Item = Notification<K>>
    where
        Self: Sized,
        P: ChangeFilter<K>,
    {
        FilterChanges::new(self, filter)
    }

    /// The newest object of each notification: the added object, the new
    /// state of an update, the deleted object.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use kube_informer::{Notification, ext::NotificationStreamExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let notifications = stream::iter([
    ///     Notification::Added { object: Arc::new(1), in_initial_list: true },
    ///     Notification::Updated { old: Arc::new(1), new: Arc::new(2), resync: false },
    ///     Notification::Deleted { object: Arc::new(2), final_state_unknown: false },
    /// ]);
    /// let objects: Vec<i32> = notifications.objects().map(|o| *o).collect().await;
    /// assert_eq!(objects, [1, 2, 2]);
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn objects(self) -> impl FusedStream<Item = Arc<K>>
    where
        Self: Sized,
    {
        Objects::new(self)
    }

    /// The key of each notification's newest object, by the default key
    /// function, [`ObjectKey::from_object`] (`namespace/name`); an object
    /// without a usable name yields its [`store::Error`](crate::store::Error) and the stream goes on.
    ///
    /// It does not know an informer's custom
    /// [`key_fn`](crate::InformerBuilder::key_fn): for an informer keyed
    /// some other way, map [`objects`](Self::objects) with the same
    /// function (`objects().map(|object| key_fn(&object))`), or the keys
    /// will not match the store's.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::{StreamExt, stream};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Notification, ext::NotificationStreamExt, store::Error};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut named = ConfigMap::default();
    /// named.metadata.namespace = Some("default".into());
    /// named.metadata.name = Some("app".into());
    /// let notifications = stream::iter([
    ///     Notification::Added { object: Arc::new(named), in_initial_list: false },
    ///     Notification::Added { object: Arc::new(ConfigMap::default()), in_initial_list: false },
    /// ]);
    /// let keys: Vec<_> = notifications.keys().collect().await;
    /// assert_eq!(keys[0].as_ref().map(|k| k.as_str()), Ok("default/app"));
    /// assert_eq!(keys[1], Err(Error::MissingName));
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    fn keys(self) -> impl FusedStream<Item = Result<ObjectKey, Error>>
    where
        Self: Sized,
        K: Resource,
    {
        Keys::new(self)
    }
}

impl<K, S: Stream<Item = Notification<K>> + ?Sized> NotificationStreamExt<K> for S {}
