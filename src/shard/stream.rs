//! [`KeyGate::filter`]: a notification stream cut down to the keys this
//! replica owns, with acquisitions replayed and losses announced.

use std::{
    collections::VecDeque,
    fmt,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::{Stream, StreamExt, stream::BoxStream};
use kube::Resource;
use pin_project::pin_project;

use super::{gate::KeyGate, gate::WorkGuard, ownership::Ownership};
use crate::{key::ObjectKey, notification::Notification, store::Store};

/// What a sharded stream ([`KeyGate::filter`]) yields.
#[derive(Debug)]
pub enum ShardEvent<K> {
    /// A change to a key this replica owns, with the guard that counts the
    /// work on it as in flight: keep it until the work is done (a handover
    /// of the key waits for it), then drop it.
    ///
    /// When the replica acquires a key, its current state from the store
    /// comes as `Added { in_initial_list: true }`, so a reconciler catches
    /// up. Changes the upstream stream had already queued for it may follow
    /// with older states; a reconciler that reads the store by key is not
    /// misled by them.
    Change {
        /// The change.
        notification: Notification<K>,
        /// The work on `notification`'s key, in flight until dropped.
        guard: WorkGuard,
    },
    /// This replica no longer owns the key: no change of it comes until it
    /// is acquired again. Drop per-key state.
    Lost {
        /// The key let go.
        key: ObjectKey,
    },
}

impl<K> ShardEvent<K> {
    /// The key this event is about.
    pub fn key(&self) -> &ObjectKey {
        match self {
            ShardEvent::Change { guard, .. } => guard.key(),
            ShardEvent::Lost { key } => key,
        }
    }
}

impl KeyGate {
    /// `stream` (usually a [`Subscription`](crate::Subscription) of the
    /// informer that fills `store`) cut down to the keys this gate owns:
    /// only the notifications of owned keys, each with the
    /// [`WorkGuard`] that counts its work as in flight; keys acquired later
    /// replayed from `store`; keys lost announced as
    /// [`ShardEvent::Lost`] (S6). Over a [`Shard`](super::Shard)'s gate it
    /// is this replica's share; over a `Leadership`'s (feature
    /// `leader-election`), everything while leading.
    ///
    /// Keys owned when the stream is made are not replayed: their
    /// notifications come through `stream`. The stream ends when `stream`
    /// ends and what it queued is handed out. It is `Send` and `Unpin`
    /// when `stream` is.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, Notification, dispatch::SubscribeOptions, source::Event};
    /// use kube_informer::shard::{KeyGate, Ownership, ShardEvent};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// cm.metadata.resource_version = Some("1".into());
    /// let events = futures::stream::iter([
    ///     Ok::<_, std::io::Error>(Event::ListStart),
    ///     Ok(Event::Listed(cm)),
    ///     Ok(Event::ListDone { resource_version: "1".into() }),
    /// ]);
    /// let informer = Informer::builder_from_stream(events).build();
    /// let subscription = informer.subscribe(SubscribeOptions::default())?;
    /// informer.run().await?;
    ///
    /// // Nothing owned yet: the listed object is held back...
    /// let gate = KeyGate::new(Ownership::nothing());
    /// let mut sharded = gate.filter(subscription, informer.store());
    /// // ...until the key is acquired: then it comes from the store.
    /// gate.set_ownership(Ownership::everything());
    /// match sharded.next().await {
    ///     Some(ShardEvent::Change { notification: Notification::Added { in_initial_list, .. }, guard }) => {
    ///         assert!(in_initial_list);
    ///         assert_eq!(guard.key().as_str(), "default/app");
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// gate.set_ownership(Ownership::nothing());
    /// assert!(matches!(sharded.next().await, Some(ShardEvent::Lost { .. })));
    /// # Ok(()) }
    /// ```
    pub fn filter<S, K>(
        &self,
        stream: S,
        store: Store<K>,
    ) -> impl Stream<Item = ShardEvent<K>> + use<S, K>
    where
        S: Stream<Item = Notification<K>>,
        K: Resource + Send + Sync + 'static,
    {
        ShardedStream::new(stream, store, self.clone())
    }
}

/// Stream for the [`KeyGate::filter`] method.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct ShardedStream<S, K> {
    #[pin]
    stream: S,
    store: Store<K>,
    gate: KeyGate,
    changes: BoxStream<'static, Ownership>,
    seen: Ownership,
    pending: VecDeque<Pending<K>>,
    upstream_done: bool,
}

enum Pending<K> {
    Replay(ObjectKey, Arc<K>),
    Lost(ObjectKey),
}

impl<S, K> ShardedStream<S, K>
where
    S: Stream<Item = Notification<K>>,
    K: Resource + Send + Sync + 'static,
{
    /// Filters `stream` by `gate`'s ownership; see [`KeyGate::filter`].
    pub(crate) fn new(stream: S, store: Store<K>, gate: KeyGate) -> Self {
        let receiver = gate.watch();
        let seen = receiver.borrow().clone();
        let changes = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.changed().await.ok()?;
            let ownership = receiver.borrow_and_update().clone();
            Some((ownership, receiver))
        })
        .boxed();
        Self {
            stream,
            store,
            gate,
            changes,
            seen,
            pending: VecDeque::new(),
            upstream_done: false,
        }
    }
}

impl<S, K> ShardedStream<S, K>
where
    K: Resource,
{
    /// Queues what changed between the ownership seen last and `next`.
    fn queue_changes(
        store: &Store<K>,
        seen: &mut Ownership,
        next: Ownership,
        pending: &mut VecDeque<Pending<K>>,
    ) {
        for (key, object) in store.snapshot() {
            match (seen.owns(&key), next.owns(&key)) {
                (false, true) => pending.push_back(Pending::Replay(key, object)),
                (true, false) => pending.push_back(Pending::Lost(key)),
                _ => {}
            }
        }
        *seen = next;
    }
}

impl<S, K> Stream for ShardedStream<S, K>
where
    S: Stream<Item = Notification<K>>,
    K: Resource,
{
    type Item = ShardEvent<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            // Ownership first, so that nothing is handed out under an
            // ownership this stream has not announced.
            while let Poll::Ready(Some(next)) = this.changes.poll_next_unpin(cx) {
                Self::queue_changes(this.store, this.seen, next, this.pending);
            }
            if let Some(item) = this.pending.pop_front() {
                match item {
                    Pending::Lost(key) => return Poll::Ready(Some(ShardEvent::Lost { key })),
                    Pending::Replay(key, object) => {
                        // Lost again before it was handed out: skip it.
                        if let Some(guard) = this.gate.begin(&key) {
                            let notification = Notification::Added {
                                object,
                                in_initial_list: true,
                            };
                            return Poll::Ready(Some(ShardEvent::Change {
                                notification,
                                guard,
                            }));
                        }
                        continue;
                    }
                }
            }
            if *this.upstream_done {
                return Poll::Ready(None);
            }
            match this.stream.as_mut().poll_next(cx) {
                Poll::Ready(Some(notification)) => {
                    let Ok(key) = ObjectKey::from_object(&**notification.object()) else {
                        continue;
                    };
                    if let Some(guard) = this.gate.begin(&key) {
                        return Poll::Ready(Some(ShardEvent::Change {
                            notification,
                            guard,
                        }));
                    }
                }
                Poll::Ready(None) => {
                    *this.upstream_done = true;
                    if this.pending.is_empty() {
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S: fmt::Debug, K> fmt::Debug for ShardedStream<S, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedStream")
            .field("stream", &self.stream)
            .field("gate", &self.gate)
            .field("pending", &self.pending.len())
            .finish()
    }
}
