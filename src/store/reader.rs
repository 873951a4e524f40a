//! [`Store`]: the read-only handle on an indexed cache.

use std::{
    fmt,
    future::Future,
    pin::{Pin, pin},
    sync::Arc,
};

use kube::Resource;
use tokio::sync::watch;

#[cfg(feature = "compact")]
use super::compact::CompactStats;
use super::{
    Error,
    shared::{Shared, Waiting},
};
use crate::{
    key::{ObjectKey, with_key_str},
    resource_version::Written,
    sync_error::SyncError,
};

/// A cheap-to-clone, read-only handle on an indexed cache, such as the one
/// [`Informer::store`](crate::Informer::store) returns.
///
/// Reads take a shared lock for as long as the call lasts and never await.
/// Objects come out as `Arc<K>`: the very allocation the informer holds,
/// which a reader cannot mutate (in a [compact](super::compact) store: an
/// equal object decoded for the read, or shared from its hot set). Only the store's [`Writer`](super::Writer)
/// changes it, and an informer never gives its writer out, so what a `Store`
/// shows always agrees with what the informer's subscribers were told.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{ObjectKey, store::{Indexers, NAMESPACE_INDEX}};
/// use kube_informer::unstable::store::Writer;
///
/// let writer = Writer::new(Indexers::<ConfigMap>::new());
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("app".into());
/// writer.apply_upsert(ObjectKey::from_object(&cm)?, Arc::new(cm))?;
///
/// let store = writer.reader();
/// assert!(store.get_by(Some("default"), "app").is_some());
/// assert_eq!(store.namespace("default").list().len(), 1);
/// assert_eq!(store.by_index(NAMESPACE_INDEX, "default")?.len(), 1);
/// assert_eq!(store.index_values(NAMESPACE_INDEX)?, ["default"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A `Store` has no way to write, and no way to get at the writer:
///
/// ```compile_fail,E0599
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, ObjectKey, source::Event};
///
/// let informer = Informer::<ConfigMap>::builder_from_stream(
///     futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>(),
/// )
/// .build();
/// let key: ObjectKey = "default/app".parse().unwrap();
/// informer.store().apply_delete(&key); // no such method on a Store
/// ```
///
/// ```compile_fail,E0277
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, source::Event};
/// use kube_informer::unstable::store::Writer;
///
/// let informer = Informer::<ConfigMap>::builder_from_stream(
///     futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>(),
/// )
/// .build();
/// let writer: Writer<ConfigMap> = informer.store().into(); // no Store -> Writer
/// ```
pub struct Store<K> {
    shared: Arc<Shared<K>>,
    /// What this handle keeps alive besides the cache: for a store an
    /// informer handed out, a share of that informer's lifetime (L8), so a
    /// held store keeps it running. `None` for a store built from a
    /// [`Writer`](super::Writer) and for the informer's own readers (which
    /// must not keep it alive, or it would never stop). Only `clone` and
    /// `drop` touch it; reads never do.
    owner: Option<Arc<dyn Owner>>,
}

/// What a store an informer handed out keeps alive (a share of the
/// informer's lifetime), and how that store learns the informer ended.
pub(crate) trait Owner: Send + Sync {
    /// Resolves once the owner has ended: it marks the store synced never
    /// after that.
    fn ended(&self) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

    /// The owner's wait for its first sync, which the store's answers for it.
    fn wait_until_synced(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<(), SyncError>> + Send + 'static>>;
}

impl<K> Store<K> {
    pub(super) fn from_shared(shared: Arc<Shared<K>>) -> Self {
        Self {
            shared,
            owner: None,
        }
    }

    /// This reader, holding `owner` alive for as long as it or any clone of
    /// it lives.
    pub(crate) fn keeping_alive(&self, owner: Arc<dyn Owner>) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            owner: Some(owner),
        }
    }

    /// The lookup behind [`get`](Self::get) and [`get_by`](Self::get_by):
    /// keys are found by their text, so a name needs no `ObjectKey` built.
    fn get_str(&self, key: &str) -> Option<Arc<K>> {
        self.lookup(key, true)
    }

    /// The object held under `key`; `admit`: a compact store may keep it in
    /// its hot set (CM4). The lock is released before decoding.
    fn lookup(&self, key: &str, admit: bool) -> Option<Arc<K>> {
        let state = self.shared.state.read();
        if self.shared.compact.is_none() {
            return state.objects.get(key).and_then(|e| e.object.decoded());
        }
        let (key, entry) = state.objects.get_key_value(key)?;
        let (key, stored) = (key.clone(), entry.object.clone());
        drop(state);
        self.shared.resolve(&key, stored, admit)
    }

    /// The object held under `key`, without admitting it to a compact
    /// store's hot set: the informer's own reads (relists, resyncs), which
    /// visit every key once and must not flush the keys users read often.
    pub(crate) fn peek(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.lookup(key.as_str(), false)
    }

    /// What a compact store has done so far (objects and bytes held
    /// encoded, hot-set hits, decodes, failures); `None` for a store in the
    /// default mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::store::{CompactCache, Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// assert!(Writer::new(Indexers::<ConfigMap>::new()).reader().compact_stats().is_none());
    /// let compact = Writer::compact(Indexers::<ConfigMap>::new(), CompactCache::default());
    /// assert_eq!(compact.reader().compact_stats().unwrap().decode_failures, 0);
    /// ```
    #[cfg(feature = "compact")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
    pub fn compact_stats(&self) -> Option<CompactStats> {
        self.shared.compact.as_ref().map(|compact| compact.stats())
    }

    /// The object held under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.get_str(key.as_str())
    }

    /// The object named `name` in `namespace` (`None`, or `Some("")`, for a
    /// cluster-scoped object), without building an [`ObjectKey`] first.
    ///
    /// A name no key can have (empty, or with a `/`) finds nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    /// use kube_informer::{ObjectKey, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// let writer = Writer::new(Indexers::<Namespace>::new());
    /// let mut ns = Namespace::default();
    /// ns.metadata.name = Some("kube-system".into());
    /// writer.apply_upsert(ObjectKey::from_object(&ns)?, Arc::new(ns))?;
    /// let store = writer.reader();
    /// assert!(store.get_by(None, "kube-system").is_some());
    /// assert!(store.get_by(Some("default"), "kube-system").is_none());
    /// assert!(store.get_by(None, "a/b").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_by(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        with_key_str(namespace, name, |key| self.get_str(key)).flatten()
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.shared.state.read();
        if self.shared.compact.is_none() {
            return state
                .objects
                .values()
                .filter_map(|e| e.object.decoded())
                .collect();
        }
        let entries = state
            .objects
            .iter()
            .map(|(k, e)| (k.clone(), e.object.clone()))
            .collect();
        drop(state);
        self.shared.resolve_all(entries)
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.shared.state.read().objects.keys().cloned().collect()
    }

    /// Every `(key, object)` pair, taken at one instant: what a late
    /// subscriber's replay is made of. The informer's own (and its tests');
    /// a user reads [`list`](Self::list), and keys an object with
    /// [`ObjectKey::from_object`] (or the informer's key function).
    #[doc(hidden)]
    pub fn snapshot(&self) -> Vec<(ObjectKey, Arc<K>)> {
        let state = self.shared.state.read();
        if self.shared.compact.is_none() {
            return state
                .objects
                .iter()
                .filter_map(|(k, e)| Some((k.clone(), e.object.decoded()?)))
                .collect();
        }
        let entries: Vec<_> = state
            .objects
            .iter()
            .map(|(k, e)| (k.clone(), e.object.clone()))
            .collect();
        drop(state);
        entries
            .into_iter()
            .filter_map(|(key, stored)| {
                let object = self.shared.resolve(&key, stored, false)?;
                Some((key, object))
            })
            .collect()
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.shared.state.read().objects.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects filed under `value` in the index `index_name`.
    ///
    /// Fails only when no index has that name; an unused value gives an empty
    /// list.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let position = self.shared.indexers.position(index_name)?;
        let state = self.shared.state.read();
        let keys = state.indexes[position].keys(value);
        if self.shared.compact.is_none() {
            return Ok(keys
                .filter_map(|key| state.objects.get(key).and_then(|e| e.object.decoded()))
                .collect());
        }
        let entries = keys
            .filter_map(|key| Some((key.clone(), state.objects.get(key)?.object.clone())))
            .collect();
        drop(state);
        Ok(self.shared.resolve_all(entries))
    }

    /// The keys filed under `value` in the index `index_name`.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, Error> {
        let position = self.shared.indexers.position(index_name)?;
        let state = self.shared.state.read();
        Ok(state.indexes[position].keys(value).cloned().collect())
    }

    /// Every value that at least one object is filed under in `index_name`,
    /// in no particular order.
    pub fn index_values(&self, index_name: &str) -> Result<Vec<String>, Error> {
        let position = self.shared.indexers.position(index_name)?;
        let state = self.shared.state.read();
        Ok(state.indexes[position]
            .values()
            .map(str::to_owned)
            .collect())
    }

    /// The objects of `namespace` (`""`: the cluster-scoped ones), through
    /// the namespace index when the store still has it.
    pub(super) fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let state = self.shared.state.read();
        if self.shared.compact.is_none() {
            return match self.shared.indexers.namespace_position() {
                Some(position) => state.indexes[position]
                    .keys(namespace)
                    .filter_map(|key| state.objects.get(key).and_then(|e| e.object.decoded()))
                    .collect(),
                None => state
                    .objects
                    .iter()
                    .filter(|(key, _)| key.namespace().unwrap_or("") == namespace)
                    .filter_map(|(_, e)| e.object.decoded())
                    .collect(),
            };
        }
        let entries: Vec<_> = match self.shared.indexers.namespace_position() {
            Some(position) => state.indexes[position]
                .keys(namespace)
                .filter_map(|key| Some((key, &state.objects.get(key)?.object)))
                .collect(),
            None => state
                .objects
                .iter()
                .filter(|(key, _)| key.namespace().unwrap_or("") == namespace)
                .map(|(key, e)| (key, &e.object))
                .collect(),
        };
        let entries = entries
            .into_iter()
            .map(|(key, stored)| (key.clone(), stored.clone()))
            .collect();
        drop(state);
        self.shared.resolve_all(entries)
    }

    /// Whether the store's writer marked it synced: for an informer's store,
    /// whether the informer has delivered its first full list.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until [`has_synced`](Store::has_synced). For a store an
    /// informer handed out, this is that informer's
    /// [`wait_until_synced`](crate::Informer::wait_until_synced), with the
    /// same answers: `Ok(())` once it synced, a [`SyncError`] once it
    /// cannot (refused, not found, or stopped before it synced, whether or
    /// not its `run` was ever polled: I7, I9, L7). A store built from a
    /// [`Writer`](super::Writer) has nothing that could stop: it waits
    /// until the writer marks it synced. It has no deadline of its own
    /// (I12): wrap it in [`tokio::time::timeout`] for one.
    ///
    /// Cancel-safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, informer::SyncError, source::Event, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// let store = writer.reader();
    /// let waiting = tokio::spawn(async move { store.wait_until_synced().await });
    /// writer.mark_synced();
    /// assert!(waiting.await.unwrap().is_ok());
    ///
    /// // An informer stopped before it synced: its store says so.
    /// let informer = Informer::<ConfigMap>::builder_from_stream(
    ///     futures::stream::pending::<Result<Event<ConfigMap>, std::io::Error>>(),
    /// )
    /// .build();
    /// let store = informer.store();
    /// informer.stop();
    /// assert!(matches!(store.wait_until_synced().await, Err(SyncError::Stopped { .. })));
    /// # }
    /// ```
    pub async fn wait_until_synced(&self) -> Result<(), SyncError> {
        if let Some(owner) = &self.owner {
            return owner.wait_until_synced().await;
        }
        let mut synced = self.shared.synced.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail here.
        let _ = synced.wait_for(|s| *s).await;
        Ok(())
    }

    /// Whether the store has caught up with `written` for `key`: holds the
    /// object at the written resourceVersion or a later one, or, for a
    /// deletion, no longer holds the key (RW1–RW3 of
    /// [`resource_version`](crate::resource_version)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, resource_version::Written, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// let store = writer.reader();
    /// let key: ObjectKey = "default/app".parse()?;
    /// let written = Written::Version("12".into());
    /// assert!(!store.caught_up(&key, &written));
    ///
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// cm.metadata.resource_version = Some("15".into()); // a later change
    /// writer.apply_upsert(key.clone(), Arc::new(cm))?;
    /// assert!(store.caught_up(&key, &written));
    /// assert!(!store.caught_up(&key, &Written::Deleted));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn caught_up(&self, key: &ObjectKey, written: &Written) -> bool
    where
        K: Resource,
    {
        let held = self.peek(key);
        written.seen_in(
            held.as_deref()
                .and_then(|object| object.meta().resource_version.as_deref()),
        )
    }

    /// Waits until the store has [caught up](Self::caught_up) with
    /// `written` for `key`, and returns `true`; or returns whether it has
    /// once the informer that handed the store out stops (I12), so a wait
    /// never outlives the informer that could end it.
    ///
    /// It is woken by the writes to the store, never by a timer (RW4), and
    /// has no deadline of its own: a write the store will never show (an
    /// object outside the informer's namespace or selectors, one deleted by
    /// someone else before the informer saw it, RW2's opaque versions)
    /// keeps it waiting, so wrap it in [`tokio::time::timeout`] with the
    /// staleness the caller can bear. A store built from a
    /// [`Writer`](super::Writer) has nothing that stops: it waits for the
    /// writer.
    ///
    /// Cancel-safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, resource_version::Written, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// let store = writer.reader();
    /// let key: ObjectKey = "default/app".parse()?;
    /// // What `Api::create` answered: the object at resourceVersion 7.
    /// let written = Written::Version("7".into());
    /// let waiting = tokio::spawn({
    ///     let (store, key) = (store.clone(), key.clone());
    ///     async move { tokio::time::timeout(Duration::from_secs(5), store.wait_for(&key, &written)).await }
    /// });
    ///
    /// // The informer delivers the object.
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// cm.metadata.resource_version = Some("7".into());
    /// writer.apply_upsert(key, Arc::new(cm))?;
    /// assert_eq!(waiting.await?, Ok(true));
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(&self, key: &ObjectKey, written: &Written) -> bool
    where
        K: Resource,
    {
        let mut ended = pin!(async {
            match &self.owner {
                Some(owner) => owner.ended().await,
                None => std::future::pending().await,
            }
        });
        // Counted before the first look, so a write after that look wakes
        // this waiter (see `Shared::waiting`).
        let _waiting = Waiting::register(&self.shared);
        loop {
            let mut changed = pin!(self.shared.changed.notified());
            // Listening before looking: a write between the look and the
            // await below still wakes it.
            changed.as_mut().enable();
            if self.caught_up(key, written) {
                return true;
            }
            tokio::select! {
                biased;
                () = changed => {}
                () = &mut ended => return self.caught_up(key, written),
            }
        }
    }

    /// A receiver that turns `true` when the store is marked synced, for
    /// code that must select on it (the dispatch layer's upstream flag).
    pub(crate) fn watch_synced(&self) -> watch::Receiver<bool> {
        self.shared.synced.subscribe()
    }
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            owner: self.owner.clone(),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("len", &self.len())
            .field("indexers", &self.shared.indexers)
            .field("synced", &self.has_synced())
            .finish()
    }
}
