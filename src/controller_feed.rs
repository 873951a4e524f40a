//! [`ControllerFeed`]: drives kube-runtime's `Controller` from a
//! [`Subscription`], for programs that keep their kube-runtime reconcilers.
//!
//! kube-runtime's `Controller` reads objects from its own
//! [`reflector::Store`](kube_runtime::reflector::Store), which only its own
//! `Writer` can fill. The feed owns such a writer: every notification it
//! takes from the subscription is applied to that store before the object is
//! handed on as a reconcile trigger, so the controller finds what triggered
//! it. The Controller store becomes ready (kube-runtime holds reconciles
//! until then) when the subscription has synced (L2).
//!
//! # What it costs
//!
//! The kube-runtime store holds its own deep copy of every object, beside
//! the `Arc` this informer's [`Store`](crate::Store) shares with every
//! subscriber: memory for the cached objects doubles, and each change costs
//! two clones of the object (kube-runtime's `Writer` copies from a borrowed
//! event, which is itself built from a clone). A reconciler that can look
//! objects up in this crate's `Store` avoids both: see the
//! [`runner`](crate::runner) module, which reconciles on the informer's own
//! cache.

use std::{
    fmt,
    future::Future,
    hash::Hash,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use crate::hash::KeyMap;
use futures::{FutureExt, Stream, StreamExt, stream::FusedStream};
use kube::Resource;
use kube_runtime::{
    reflector::{Lookup as _, ObjectRef, Store, store::Writer},
    watcher::Event,
};

use crate::{dispatch::Subscription, notification::Notification};

/// The objects a [`ControllerFeed`] carries: kube resources (kube-runtime's
/// `Lookup` follows from `Resource`) whose dynamic type can key
/// kube-runtime's store. Implemented for every such type.
pub trait FeedObject:
    Resource<DynamicType: Eq + Hash + Clone + Unpin> + Clone + Send + Sync + 'static
{
}

impl<K> FeedObject for K where
    K: Resource<DynamicType: Eq + Hash + Clone + Unpin> + Clone + Send + Sync + 'static
{
}

/// A stream of reconcile triggers for kube-runtime's `Controller`, fed by a
/// [`Subscription`] and keeping a kube-runtime
/// [`Store`] up to date on the way.
///
/// It yields the object of every `Added` and `Updated` notification
/// (resyncs included, so a resync period set on the subscription re-runs
/// the reconciler), after applying it to the store; deletions update the
/// store and trigger nothing, as with kube-runtime's own shared streams.
/// Objects seen before the subscription synced are held back from the
/// store and applied together when it syncs, which is when the store
/// turns ready. The stream ends when the subscription ends.
///
/// Pass the stream and the store to `Controller::for_shared_stream`
/// (behind kube-runtime's `unstable-runtime-subscribe` feature, which your
/// `Cargo.toml` enables on `kube` or `kube-runtime`), or, with stable
/// kube-runtime only, map each object to its `ObjectRef` and pass both to
/// `kube_runtime::applier`. The store's cost is stated in the
/// [module docs](self).
///
/// # Examples
///
/// ```no_run
/// use std::{sync::Arc, time::Duration};
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, Client};
/// use kube_informer::{Informer, SubscribeOptions, controller_feed::ControllerFeed};
/// use kube_runtime::controller::{Action, Controller};
///
/// async fn reconcile(cm: Arc<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> {
///     println!("reconciling {:?}", cm.metadata.name);
///     Ok(Action::requeue(Duration::from_secs(300)))
/// }
///
/// fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<()>) -> Action {
///     Action::requeue(Duration::from_secs(5))
/// }
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let informer = Informer::builder(Api::<ConfigMap>::all(Client::try_default().await?)).build();
/// let (store, triggers) = ControllerFeed::new(informer.subscribe(SubscribeOptions::default())?);
/// tokio::spawn(informer.run());
/// Controller::for_shared_stream(triggers, store)
///     .run(reconcile, error_policy, Arc::new(()))
///     .for_each(|result| async move { println!("{result:?}") })
///     .await;
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ControllerFeed<K: FeedObject> {
    subscription: Subscription<K>,
    writer: Writer<K>,
    dyntype: K::DynamicType,
    /// Until the subscription syncs: the objects seen so far by reference,
    /// applied to the store as one initial list when it syncs. `None` once
    /// the store is ready.
    initial: Option<KeyMap<ObjectRef<K>, Arc<K>>>,
    /// Resolves when the subscription syncs, for an initial list that
    /// yields nothing to wake the feed (an empty one).
    synced: Option<Pin<Box<dyn Future<Output = bool> + Send>>>,
}

impl<K> ControllerFeed<K>
where
    K: FeedObject,
    K::DynamicType: Default,
{
    /// A feed for a kind whose dynamic type is known at compile time, and
    /// the kube-runtime store it fills.
    ///
    /// See the [type docs](ControllerFeed) for an example.
    pub fn new(subscription: Subscription<K>) -> (Store<K>, Self) {
        Self::new_with(subscription, Default::default())
    }
}

impl<K: FeedObject> ControllerFeed<K> {
    /// A feed for a kind with a runtime dynamic type (e.g. the
    /// `ApiResource` of a `DynamicObject`), and the kube-runtime store it
    /// fills.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::stream;
    /// use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    /// use kube_informer::{Informer, SubscribeOptions, controller_feed::ControllerFeed, source::Event};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    /// let events = stream::empty::<Result<Event<DynamicObject>, std::io::Error>>();
    /// let informer = Informer::builder_from_stream(events).build();
    /// let subscription = informer.subscribe(SubscribeOptions::default())?;
    /// let (store, _triggers) = ControllerFeed::new_with(subscription, resource);
    /// assert!(store.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn new_with(subscription: Subscription<K>, dyntype: K::DynamicType) -> (Store<K>, Self) {
        let mut writer = Writer::new(dyntype.clone());
        writer.apply_watcher_event(&Event::Init);
        let store = writer.as_reader();
        let status = subscription.sync_status();
        let feed = Self {
            subscription,
            writer,
            dyntype,
            initial: Some(KeyMap::default()),
            synced: Some(async move { status.wait_until_synced().await.is_ok() }.boxed()),
        };
        (store, feed)
    }

    /// Applies what was held back as the store's initial list and marks
    /// the store ready.
    fn finish_initial_list(&mut self) {
        self.synced = None;
        if let Some(initial) = self.initial.take() {
            for object in initial.into_values() {
                self.writer
                    .apply_watcher_event(&Event::InitApply(K::clone(&object)));
            }
            self.writer.apply_watcher_event(&Event::InitDone);
        }
    }

    /// Records `notification` in the store (or in the held-back initial
    /// list); returns the object to trigger on, if any.
    fn apply(&mut self, notification: Notification<K>) -> Option<Arc<K>> {
        let (object, deleted) = match notification {
            Notification::Added { object, .. } | Notification::Updated { new: object, .. } => {
                (object, false)
            }
            Notification::Deleted { object, .. } => (object, true),
        };
        match &mut self.initial {
            Some(initial) => {
                let object_ref = object.to_object_ref(self.dyntype.clone());
                if deleted {
                    initial.remove(&object_ref);
                } else {
                    initial.insert(object_ref, Arc::clone(&object));
                }
            }
            None if deleted => self
                .writer
                .apply_watcher_event(&Event::Delete(K::clone(&object))),
            None => self
                .writer
                .apply_watcher_event(&Event::Apply(K::clone(&object))),
        }
        (!deleted).then_some(object)
    }
}

impl<K: FeedObject> Stream for ControllerFeed<K> {
    type Item = Arc<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(synced) = &mut this.synced
                && let Poll::Ready(synced) = synced.poll_unpin(cx)
            {
                if synced {
                    this.finish_initial_list();
                } else {
                    // Ended before it synced: the store never turns ready,
                    // and the subscription ends below.
                    this.synced = None;
                }
            }
            let Some(notification) = futures::ready!(this.subscription.poll_next_unpin(cx)) else {
                return Poll::Ready(None);
            };
            let trigger = this.apply(notification);
            if this.initial.is_some() && this.subscription.sync_status().has_synced() {
                this.finish_initial_list();
            }
            if let Some(object) = trigger {
                return Poll::Ready(Some(object));
            }
        }
    }
}

impl<K: FeedObject> FusedStream for ControllerFeed<K> {
    fn is_terminated(&self) -> bool {
        self.subscription.is_terminated()
    }
}

impl<K: FeedObject> fmt::Debug for ControllerFeed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerFeed")
            .field("subscription", &self.subscription)
            .field("store_ready", &self.initial.is_none())
            .finish_non_exhaustive()
    }
}
