//! How a [`DeltaFifo`](super::DeltaFifo) is configured.

use std::{fmt, sync::Arc};

use kube::Resource;

use super::known::KnownObjects;
use crate::key::error::Error;
use crate::key::{KeyFn, ObjectKey, default_key_fn};

/// A function applied to every object entering the FIFO (F11), for example to
/// strip `managedFields` before anything is kept.
pub(crate) type TransformFn<K> =
    Arc<dyn Fn(K) -> Result<K, Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

/// How the deltas of one key accumulate while the key waits in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Coalesce {
    /// Keep every delta, deduplicating only two `Deleted` in a row (F5).
    /// This is what client-go does.
    #[default]
    KeepAll,
    /// Keep at most the newest object delta per key, plus a `Deleted` marker
    /// (F12, a deliberate difference from client-go), so a slow consumer costs
    /// memory bounded by the number of keys, not the number of events.
    ///
    /// A key's pending deltas are then one of `[object]`, `[Deleted]`,
    /// `[object, Deleted]` or `[Deleted, object]`, where "object" is any of
    /// `Added`, `Updated`, `Replaced` or `Sync`:
    ///
    /// - an object delta arriving after an object delta merges into it: the
    ///   merged delta carries the newer object, and keeps the older delta's
    ///   type if that was `Added` or `Updated` (so a consumer still learns
    ///   that the key is new), otherwise takes the newer type;
    /// - an object delta arriving after a `Deleted` is a re-creation: what came
    ///   before the `Deleted` is dropped and the result is `[Deleted, object]`;
    /// - a `Deleted` arriving after an object delta is appended, unless a
    ///   `Deleted` is already pending before that object (a re-creation that
    ///   was deleted again), in which case the new `Deleted` alone remains;
    /// - a `Deleted` arriving after a `Deleted` is deduplicated as in F5.
    Latest,
}

/// Options for [`DeltaFifo::new`](super::DeltaFifo::new).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::fifo::{Coalesce, DeltaFifo, FifoOptions};
///
/// let fifo = DeltaFifo::<ConfigMap>::new(
///     FifoOptions::default()
///         .coalesce(Coalesce::Latest)
///         .transform(|mut cm: ConfigMap| {
///             cm.metadata.managed_fields = None;
///             Ok(cm)
///         }),
/// );
/// assert!(fifo.is_empty());
/// ```
#[must_use]
pub struct FifoOptions<K> {
    pub(crate) key_fn: KeyFn<K>,
    pub(crate) known_objects: Option<Arc<dyn KnownObjects<K>>>,
    pub(crate) emit_replaced: bool,
    pub(crate) transform: Option<TransformFn<K>>,
    pub(crate) coalesce: Coalesce,
}

impl<K: Resource + 'static> Default for FifoOptions<K> {
    fn default() -> Self {
        Self {
            key_fn: default_key_fn(),
            known_objects: None,
            emit_replaced: true,
            transform: None,
            coalesce: Coalesce::KeepAll,
        }
    }
}

impl<K> FifoOptions<K> {
    /// How objects are keyed; [`ObjectKey::from_object`](crate::ObjectKey::from_object) by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{fifo::{DeltaFifo, FifoOptions}, store::Error, ObjectKey};
    ///
    /// // Key by name only, ignoring the namespace.
    /// let by_name = |cm: &ConfigMap| {
    ///     ObjectKey::new(None, cm.metadata.name.as_deref().ok_or(Error::MissingName)?)
    /// };
    /// let fifo = DeltaFifo::new(FifoOptions::default().key_fn(by_name));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("ns".into());
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(cm)?;
    /// assert_eq!(fifo.list_keys()[0].as_str(), "a");
    /// # Ok::<(), kube_informer::store::Error>(())
    /// ```
    pub fn key_fn(
        mut self,
        key_fn: impl Fn(&K) -> Result<ObjectKey, Error> + Send + Sync + 'static,
    ) -> Self {
        self.key_fn = Arc::new(key_fn);
        self
    }

    /// The objects the consumer already holds (usually the informer's store),
    /// consulted by delete (F4), relist (F6) and resync (F8). None by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{fifo::{DeltaFifo, FifoOptions, KnownObjects}, ObjectKey};
    ///
    /// struct Nothing;
    /// impl KnownObjects<ConfigMap> for Nothing {
    ///     fn get_by_key(&self, _: &ObjectKey) -> Option<Arc<ConfigMap>> { None }
    ///     fn list_keys(&self) -> Vec<ObjectKey> { Vec::new() }
    /// }
    /// let fifo = DeltaFifo::new(FifoOptions::default().known_objects(Arc::new(Nothing)));
    /// fifo.resync()?;
    /// assert!(fifo.is_empty());
    /// # Ok::<(), kube_informer::store::Error>(())
    /// ```
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Whether relisted objects are queued as `Replaced` (true, the default,
    /// as informers use) or as `Sync` (false).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{fifo::{DeltaFifo, FifoOptions}, DeltaType};
    ///
    /// let fifo = DeltaFifo::new(FifoOptions::default().emit_replaced(false));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.replace([cm], "1")?;
    /// assert_eq!(fifo.try_pop().unwrap()[0].delta_type, DeltaType::Sync);
    /// # Ok::<(), kube_informer::store::Error>(())
    /// ```
    pub fn emit_replaced(mut self, emit_replaced: bool) -> Self {
        self.emit_replaced = emit_replaced;
        self
    }

    /// A function run on every object entering the FIFO except tombstones and
    /// the `Sync` deltas of a resync (F11). An error rejects that one object.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{fifo::{DeltaFifo, FifoOptions}, store::Error};
    ///
    /// let fifo = DeltaFifo::new(FifoOptions::default().transform(|cm: ConfigMap| {
    ///     if cm.data.is_none() { Err("refusing an empty ConfigMap".into()) } else { Ok(cm) }
    /// }));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// assert!(matches!(fifo.add(cm), Err(Error::Transform { .. })));
    /// assert!(fifo.is_empty());
    /// ```
    pub fn transform(
        mut self,
        transform: impl Fn(K) -> Result<K, Box<dyn std::error::Error + Send + Sync>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// How deltas of one key accumulate; [`Coalesce::KeepAll`] by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::fifo::{Coalesce, DeltaFifo, FifoOptions};
    ///
    /// let fifo = DeltaFifo::new(FifoOptions::default().coalesce(Coalesce::Latest));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(cm.clone())?;
    /// fifo.update(cm)?;
    /// assert_eq!(fifo.try_pop().unwrap().len(), 1);
    /// # Ok::<(), kube_informer::store::Error>(())
    /// ```
    pub fn coalesce(mut self, coalesce: Coalesce) -> Self {
        self.coalesce = coalesce;
        self
    }
}

impl<K> fmt::Debug for FifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_replaced", &self.emit_replaced)
            .field("transform", &self.transform.is_some())
            .field("coalesce", &self.coalesce)
            .finish_non_exhaustive()
    }
}
