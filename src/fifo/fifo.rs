//! The [`DeltaFifo`] handle: the lock around the queue state plus the
//! [`Notify`] that wakes waiting consumers.

use std::collections::HashSet;
use std::{fmt, sync::Arc};

use kube::Resource;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;

use super::error::{Error, Result};
use super::known::KnownObjects;
use super::options::FifoOptions;
use super::state::FifoState;
use super::stream::DeltaStream;
use crate::delta::{Delta, DeltaObject, DeltaType, Deltas};
use crate::key::ObjectKey;

/// A keyed queue of pending changes: one slot per object key, the changes of
/// a key accumulated as [`Deltas`] until a consumer pops them.
///
/// See the [module docs](super) for the rules, closing and cancel safety.
/// Cloning gives another handle to the same queue.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
/// use kube_informer::fifo::{DeltaFifo, FifoOptions};
/// use kube_informer::DeltaType;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kube_informer::fifo::Error> {
/// let cm = |rv: &str| ConfigMap {
///     metadata: ObjectMeta {
///         namespace: Some("default".into()),
///         name: Some("app".into()),
///         resource_version: Some(rv.into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// let fifo = DeltaFifo::new(FifoOptions::default());
/// fifo.add(cm("1"))?;
/// fifo.update(cm("2"))?;
/// let deltas = fifo.pop().await?;
/// assert_eq!(deltas.key().as_str(), "default/app");
/// let types: Vec<_> = deltas.iter().map(|d| d.delta_type).collect();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// # Ok(())
/// # }
/// ```
pub struct DeltaFifo<K> {
    shared: Arc<Shared<K>>,
}

struct Shared<K> {
    state: Mutex<FifoState<K>>,
    notify: Arc<Notify>,
    options: FifoOptions<K>,
}

impl<K> Clone for DeltaFifo<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("DeltaFifo")
            .field("len", &state.len())
            .field("has_synced", &state.has_synced())
            .field("closed", &state.is_closed())
            .field("options", &self.shared.options)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// An empty, open FIFO.
    pub fn new(options: FifoOptions<K>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(FifoState::new(options.coalesce)),
                notify: Arc::new(Notify::new()),
                options,
            }),
        }
    }

    /// Queues an `Added` delta (F3). Marks the FIFO populated (F7), even when
    /// the object is then rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// assert_eq!(fifo.len(), 1);
    /// assert!(fifo.add(ConfigMap::default()).is_err()); // no name
    /// # Ok(())
    /// # }
    /// ```
    pub fn add(&self, obj: K) -> Result<()> {
        self.enqueue_live(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta (F3), whether or not the key is known.
    /// Marks the FIFO populated (F7), even when the object is then rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.update(cm("a", "1"))?;
    /// assert_eq!(fifo.try_pop().unwrap().oldest().delta_type, kube_informer::DeltaType::Updated);
    /// # Ok(())
    /// # }
    /// ```
    pub fn update(&self, obj: K) -> Result<()> {
        self.enqueue_live(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta, unless the key has nothing pending and the
    /// known objects (if any) do not hold it (F4).
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.delete(cm("a", "1"))?; // nothing pending, no known objects: dropped
    /// assert!(fifo.is_empty());
    /// fifo.add(cm("a", "1"))?;
    /// fifo.delete(cm("a", "2"))?;
    /// assert_eq!(fifo.try_pop().unwrap().len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(&self, obj: K) -> Result<()> {
        let key = (self.options().key_fn)(&obj)?;
        let mut state = self.lock();
        state.mark_populated();
        if !state.is_pending(&key) {
            let known = self.known().is_some_and(|k| k.get_by_key(&key).is_some());
            if !known {
                return Ok(());
            }
        }
        let obj = self.transform(&key, obj)?;
        self.append_and_wake(state, key, Delta::new(DeltaType::Deleted, obj));
        Ok(())
    }

    /// Replaces the FIFO's view with a complete list (F6): every object is
    /// queued as `Replaced` (or `Sync`, see
    /// [`emit_replaced`](FifoOptions::emit_replaced)) in list order, then every
    /// key that vanished gets a tombstone. The whole relist happens under one
    /// lock, so no consumer sees half of it.
    ///
    /// On a rejected object the relist stops there: objects before it stay
    /// queued, no tombstones are computed, and the error is returned (F11).
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("old", "1"))?;
    /// fifo.replace([cm("a", "2"), cm("b", "2")], "2")?;
    /// let keys: Vec<String> = fifo.list_keys().iter().map(|k| k.to_string()).collect();
    /// assert_eq!(keys, ["old", "a", "b"]);
    /// // "old" was not in the list: its deltas end with a tombstone.
    /// assert!(fifo.try_pop().unwrap().newest().object.is_tombstone());
    /// # Ok(())
    /// # }
    /// ```
    pub fn replace(&self, list: impl IntoIterator<Item = K>, resource_version: &str) -> Result<()> {
        let list = list.into_iter();
        let mut listed = HashSet::with_capacity(list.size_hint().0);
        let mut state = self.lock();
        let before = state.len();
        let result = self.replace_locked(&mut state, list, &mut listed, resource_version);
        self.wake_for(state, before);
        result
    }

    fn replace_locked(
        &self,
        state: &mut FifoState<K>,
        list: impl Iterator<Item = K>,
        listed: &mut HashSet<ObjectKey>,
        resource_version: &str,
    ) -> Result<()> {
        let delta_type = self.relist_delta_type();
        for obj in list {
            let (key, obj) = self.prepare(obj)?;
            listed.insert(key.clone());
            state.append(key, Delta::new(delta_type, obj));
        }
        let deletions = state.tombstone_unlisted(listed, self.known());
        state.finish_relist(listed.len(), deletions, 0, resource_version);
        Ok(())
    }

    /// Opens a streamed relist (F13): objects follow one by one through
    /// [`listed`](Self::listed), then [`list_done`](Self::list_done) queues
    /// the tombstones. Calling it again discards an unfinished listing.
    ///
    /// While a listing is open, an [`add`](Self::add) or
    /// [`update`](Self::update) counts its key as listed (the object is
    /// evidently alive, so it gets no tombstone); a [`delete`](Self::delete)
    /// is queued as usual.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::fifo::{DeltaFifo, FifoOptions};
    ///
    /// # fn main() -> Result<(), kube_informer::fifo::Error> {
    /// let named = |n: &str| { let mut cm = ConfigMap::default(); cm.metadata.name = Some(n.into()); cm };
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(named("old"))?;
    /// fifo.list_start();
    /// fifo.listed(named("a"))?;
    /// fifo.listed(named("b"))?;
    /// fifo.list_done("42")?;
    /// // "old" was not listed: it now ends with a tombstone.
    /// assert!(fifo.get_by_key(&"old".parse()?).unwrap().newest().object.is_tombstone());
    /// assert_eq!(fifo.last_sync_resource_version().as_deref(), Some("42"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_start(&self) {
        self.lock().list_start();
    }

    /// Queues one object of a streamed relist as it arrives (F13).
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// assert!(fifo.listed(cm("a", "1")).is_err()); // no list_start yet
    /// fifo.list_start();
    /// fifo.listed(cm("a", "1"))?;
    /// assert_eq!(fifo.len(), 1); // queued at once
    /// # Ok(())
    /// # }
    /// ```
    pub fn listed(&self, obj: K) -> Result<()> {
        let prepared = self.prepare(obj);
        let mut state = self.lock();
        let listing = state.listing_mut().ok_or(Error::NoListInProgress)?;
        let (key, obj) = prepared?;
        listing.keys.insert(key.clone());
        let delta = Delta::new(self.relist_delta_type(), obj);
        self.append_and_wake(state, key, delta);
        Ok(())
    }

    /// Ends a streamed relist: queues tombstones exactly as
    /// [`replace`](Self::replace) would for the same list (F13).
    ///
    /// When the first relist is streamed and the consumer pops while it is
    /// open, those pops count toward [`has_synced`](Self::has_synced).
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.list_start();
    /// fifo.listed(cm("a", "1"))?;
    /// fifo.list_done("7")?;
    /// assert_eq!(fifo.last_sync_resource_version().as_deref(), Some("7"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_done(&self, resource_version: &str) -> Result<()> {
        let mut state = self.lock();
        let listing = state.take_listing().ok_or(Error::NoListInProgress)?;
        let before = state.len();
        let deletions = state.tombstone_unlisted(&listing.keys, self.known());
        state.finish_relist(
            listing.keys.len(),
            deletions,
            listing.popped,
            resource_version,
        );
        self.wake_for(state, before);
        Ok(())
    }

    /// Queues `Sync` for every known object whose key has nothing pending
    /// (F8). Does nothing without known objects; does not touch `has_synced`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use std::sync::Arc;
    /// # use kube_informer::{fifo::KnownObjects, ObjectKey};
    /// struct One(Arc<ConfigMap>);
    /// impl KnownObjects<ConfigMap> for One {
    ///     fn get_by_key(&self, _: &ObjectKey) -> Option<Arc<ConfigMap>> { Some(self.0.clone()) }
    ///     fn list_keys(&self) -> Vec<ObjectKey> { vec!["a".parse().unwrap()] }
    /// }
    /// let known = Arc::new(One(Arc::new(cm("a", "1"))));
    /// let fifo = DeltaFifo::new(FifoOptions::default().known_objects(known));
    /// fifo.resync()?;
    /// assert_eq!(fifo.try_pop().unwrap().oldest().delta_type, kube_informer::DeltaType::Sync);
    /// # Ok(())
    /// # }
    /// ```
    pub fn resync(&self) -> Result<()> {
        let Some(known) = self.known() else {
            return Ok(());
        };
        let mut state = self.lock();
        let before = state.len();
        let result = state.resync(known, &self.options().key_fn);
        self.wake_for(state, before);
        result
    }

    /// Puts popped deltas back at the tail of the queue, unless the key has
    /// pending deltas again, in which case the newer deltas win (F10).
    ///
    /// Every object in `deltas` must have the key of `deltas`; otherwise
    /// nothing is queued and [`Error::RequeueKeyMismatch`] is returned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// let deltas = fifo.try_pop().unwrap();
    /// // Processing failed: put it back for a later attempt.
    /// fifo.requeue(deltas)?;
    /// assert_eq!(fifo.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn requeue(&self, deltas: Deltas<K>) -> Result<()> {
        for delta in &deltas {
            let found = match &delta.object {
                DeltaObject::Object(obj) => (self.options().key_fn)(obj)?,
                DeltaObject::DeletedFinalStateUnknown { key, .. } => key.clone(),
            };
            if &found != deltas.key() {
                return Err(Error::RequeueKeyMismatch {
                    expected: deltas.key().clone(),
                    found,
                });
            }
        }
        let mut state = self.lock();
        let before = state.len();
        state.requeue(deltas);
        self.wake_for(state, before);
        Ok(())
    }

    /// Closes the FIFO: waiting consumers wake up, queued items still pop,
    /// and once the queue is empty [`pop`](Self::pop) returns
    /// [`Error::Closed`] and [`stream`](Self::stream) ends (F9).
    ///
    /// Producers are not stopped: like client-go, a closed FIFO still accepts
    /// changes, and they pop until the queue is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::fifo::Error> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// fifo.close();
    /// assert!(fifo.pop().await.is_ok()); // still drains
    /// assert!(matches!(fifo.pop().await, Err(kube_informer::fifo::Error::Closed)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn close(&self) {
        self.lock().close();
        self.shared.notify.notify_waiters();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    /// fifo.close();
    /// assert!(fifo.is_closed());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_closed(&self) -> bool {
        self.lock().is_closed()
    }

    /// Waits for the oldest key and returns all its deltas (F9).
    ///
    /// Returns [`Error::Closed`] once the FIFO is closed and empty.
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe: an item is taken from the queue only in
    /// the same poll that returns it, so dropping the future loses nothing.
    /// A wakeup meant for a dropped `pop` passes on to another waiting one.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::fifo::Error> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// let consumer = tokio::spawn({
    ///     let fifo = fifo.clone();
    ///     async move { fifo.pop().await.map(|d| d.key().to_string()) }
    /// });
    /// fifo.add(cm("a", "1"))?;
    /// assert_eq!(consumer.await.unwrap()?, "a");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn pop(&self) -> Result<Deltas<K>> {
        loop {
            if let Some(popped) = self.poll_queue() {
                return popped;
            }
            let notified = self.shared.notify.notified();
            tokio::pin!(notified);
            // Registered before looking again, so an item pushed after the
            // look below is guaranteed to wake us.
            notified.as_mut().enable();
            if let Some(popped) = self.poll_queue() {
                return popped;
            }
            notified.await;
        }
    }

    /// Pops the oldest key's deltas if any are queued, without waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// assert!(fifo.try_pop().is_none());
    /// fifo.add(cm("a", "1"))?;
    /// assert!(fifo.try_pop().is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_pop(&self) -> Option<Deltas<K>> {
        self.lock().pop()
    }

    /// A stream of popped deltas that ends once the FIFO is closed and empty.
    ///
    /// Several streams and `pop` calls may consume the same FIFO; each item
    /// goes to exactly one of them.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::fifo::Error> {
    /// use futures::StreamExt;
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// let mut stream = fifo.stream();
    /// assert_eq!(stream.next().await.unwrap().key().as_str(), "a");
    /// # Ok(())
    /// # }
    /// ```
    pub fn stream(&self) -> DeltaStream<K> {
        DeltaStream::new(self.clone())
    }

    /// True once the first relist happened (or an add, update, delete or
    /// requeue came first) and every item counted by that relist was popped
    /// (F7). Never turns false again.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.replace([cm("a", "1")], "1")?;
    /// assert!(!fifo.has_synced());
    /// fifo.try_pop();
    /// assert!(fifo.has_synced());
    /// # Ok(())
    /// # }
    /// ```
    pub fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// The number of keys with pending deltas.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// fifo.update(cm("a", "2"))?;
    /// assert_eq!(fifo.len(), 1); // one key, two deltas
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key has pending deltas.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    /// assert!(fifo.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys with pending deltas, in the order they will pop.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("b", "1"))?;
    /// fifo.add(cm("a", "1"))?;
    /// let keys: Vec<String> = fifo.list_keys().iter().map(|k| k.to_string()).collect();
    /// assert_eq!(keys, ["b", "a"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().keys().cloned().collect()
    }

    /// A copy of the pending deltas of `key` (objects are shared, not cloned).
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// fifo.add(cm("a", "1"))?;
    /// let pending = fifo.get_by_key(&"a".parse()?).unwrap();
    /// assert_eq!(pending.len(), 1);
    /// assert_eq!(fifo.len(), 1); // still queued
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_by_key(&self, key: &ObjectKey) -> Option<Deltas<K>> {
        self.lock().get(key).cloned()
    }

    /// The resourceVersion of the last completed relist.
    ///
    /// # Examples
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube_informer::fifo::{DeltaFifo, FifoOptions};
    /// # fn cm(name: &str, rv: &str) -> ConfigMap {
    /// #     let mut c = ConfigMap::default();
    /// #     c.metadata.name = Some(name.into());
    /// #     c.metadata.resource_version = Some(rv.into());
    /// #     c
    /// # }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fifo = DeltaFifo::<ConfigMap>::new(FifoOptions::default());
    /// assert_eq!(fifo.last_sync_resource_version(), None);
    /// fifo.replace([], "42")?;
    /// assert_eq!(fifo.last_sync_resource_version().as_deref(), Some("42"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.lock().last_sync_resource_version().map(str::to_owned)
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// One step of a consumer: an item, `Closed`, or `None` to keep waiting.
    pub(super) fn poll_queue(&self) -> Option<Result<Deltas<K>>> {
        let mut state = self.lock();
        match state.pop() {
            Some(deltas) => Some(Ok(deltas)),
            None if state.is_closed() => Some(Err(Error::Closed)),
            None => None,
        }
    }

    pub(super) fn notify(&self) -> &Arc<Notify> {
        &self.shared.notify
    }

    fn options(&self) -> &FifoOptions<K> {
        &self.shared.options
    }

    fn known(&self) -> Option<&dyn KnownObjects<K>> {
        self.options().known_objects.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, FifoState<K>> {
        self.shared.state.lock()
    }

    fn relist_delta_type(&self) -> DeltaType {
        if self.options().emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        }
    }

    fn transform(&self, key: &ObjectKey, obj: K) -> Result<Arc<K>> {
        match &self.options().transform {
            None => Ok(Arc::new(obj)),
            Some(transform) => transform(obj)
                .map(Arc::new)
                .map_err(|source| Error::Transform {
                    key: key.clone(),
                    source,
                }),
        }
    }

    /// Keys and transforms an entering object: the one place a `K` becomes an
    /// `Arc<K>`.
    fn prepare(&self, obj: K) -> Result<(ObjectKey, Arc<K>)> {
        let key = (self.options().key_fn)(&obj)?;
        let obj = self.transform(&key, obj)?;
        Ok((key, obj))
    }

    fn enqueue_live(&self, delta_type: DeltaType, obj: K) -> Result<()> {
        // Keying and transforming outside the lock keeps producers from
        // serialising on user code.
        let prepared = self.prepare(obj);
        let mut state = self.lock();
        state.mark_populated();
        let (key, obj) = prepared?;
        if let Some(listing) = state.listing_mut() {
            listing.keys.insert(key.clone());
        }
        self.append_and_wake(state, key, Delta::new(delta_type, obj));
        Ok(())
    }

    fn append_and_wake(
        &self,
        mut state: MutexGuard<'_, FifoState<K>>,
        key: ObjectKey,
        delta: Delta<K>,
    ) {
        let before = state.len();
        state.append(key, delta);
        self.wake_for(state, before);
    }

    /// Releases the lock, then wakes one consumer per key that joined the
    /// queue: each new item gets its own wakeup, so none is stranded while a
    /// consumer waits, and deltas added to a queued key wake nobody.
    fn wake_for(&self, state: MutexGuard<'_, FifoState<K>>, len_before: usize) {
        let joined = state.len().saturating_sub(len_before);
        drop(state);
        for _ in 0..joined {
            self.shared.notify.notify_one();
        }
    }
}
