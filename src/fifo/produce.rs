//! The producer half of [`DeltaFifo`]: every way a change enters the queue.

use std::sync::Arc;

use kube::Resource;

use super::consume::DeltaFifo;
use super::state::FifoState;
use crate::delta::{Delta, DeltaObject, DeltaType, Deltas};
use crate::hash::KeySet;
use crate::key::ObjectKey;
use crate::key::error::{Error, UserCode};

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// Queues an `Added` delta (F3). Marks the FIFO populated (F7), even when
    /// the object is then rejected, unless the first streamed relist is
    /// open.
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
    pub fn add(&self, obj: K) -> Result<(), Error> {
        self.enqueue_live(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta (F3), whether or not the key is known.
    /// Marks the FIFO populated (F7), even when the object is then rejected,
    /// unless the first streamed relist is open.
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
    /// assert_eq!(fifo.try_pop().unwrap()[0].delta_type, kube_informer::DeltaType::Updated);
    /// # Ok(())
    /// # }
    /// ```
    pub fn update(&self, obj: K) -> Result<(), Error> {
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
    pub fn delete(&self, obj: K) -> Result<(), Error> {
        let key = self.key_of(&obj)?;
        let mut state = self.lock();
        state.live_event(None);
        if !self.deletion_counts(&state, &key)? {
            return Ok(());
        }
        if self.options().transform.is_none() {
            self.append_and_wake(state, key, Delta::new(DeltaType::Deleted, Arc::new(obj)));
            return Ok(());
        }
        // The transform is user code: it runs with the lock released, and
        // whether the deletion counts is asked again once it is taken back.
        drop(state);
        let obj = self.transform(&key, obj)?;
        let state = self.lock();
        if self.deletion_counts(&state, &key)? {
            self.append_and_wake(state, key, Delta::new(DeltaType::Deleted, obj));
        }
        Ok(())
    }

    /// F4: a deletion is queued only for a key that is queued or that the
    /// known objects hold.
    fn deletion_counts(&self, state: &FifoState<K>, key: &ObjectKey) -> Result<bool, Error> {
        if state.is_pending(key) {
            return Ok(true);
        }
        Ok(match self.known() {
            Some(known) => known.get_by_key(key)?.is_some(),
            None => false,
        })
    }

    /// Replaces the FIFO's view with a complete list (F6): every object is
    /// queued as `Replaced` (or `Sync`, see
    /// [`emit_replaced`](super::FifoOptions::emit_replaced)) in list order, then every
    /// key that vanished gets a tombstone. The whole relist happens under one
    /// lock, so no consumer sees half of it.
    ///
    /// On a rejected object the relist stops there: objects before it stay
    /// queued, no tombstones are computed, and the error is returned (F11).
    ///
    /// A complete list supersedes a streamed relist left open: that listing
    /// is discarded, and its end returns [`Error::NoListInProgress`].
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
    pub fn replace(
        &self,
        list: impl IntoIterator<Item = K>,
        resource_version: &str,
    ) -> Result<(), Error> {
        // Keys and transforms are user code: all of them run before the
        // lock is taken, up to the first object they reject.
        let list = list.into_iter();
        let mut prepared = Vec::with_capacity(list.size_hint().0);
        let mut rejected = None;
        for obj in list {
            match self.prepare(obj) {
                Ok(entry) => prepared.push(entry),
                Err(error) => {
                    rejected = Some(error);
                    break;
                }
            }
        }
        let mut listed = KeySet::with_capacity_and_hasher(prepared.len(), Default::default());
        let mut state = self.lock();
        let before = state.len();
        state.take_listing();
        let delta_type = self.relist_delta_type();
        for (key, obj) in prepared {
            listed.insert(key.clone());
            state.append(key, Delta::new(delta_type, obj));
        }
        let result = match rejected {
            Some(error) => Err(error),
            None => state
                .tombstone_unlisted(&listed, self.known())
                .map(|deletions| state.finish_relist(listed.len() + deletions, resource_version)),
        };
        self.wake_for(state, before);
        result
    }

    /// Opens a streamed relist (F13): objects follow one by one through
    /// [`listed`](Self::listed), then [`list_done`](Self::list_done) queues
    /// the tombstones. Calling it again discards an unfinished listing.
    ///
    /// While a listing is open, an [`add`](Self::add) or
    /// [`update`](Self::update) counts its key as listed (the object is
    /// evidently alive, so it gets no tombstone); a [`delete`](Self::delete)
    /// is queued as usual. While the *first* listing is open, those live
    /// changes do not make the FIFO populated: only its
    /// [`list_done`](Self::list_done) does (F7).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::fifo::{DeltaFifo, FifoOptions};
    ///
    /// # fn main() -> Result<(), kube_informer::store::Error> {
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
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn listed(&self, obj: K) -> Result<(), Error> {
        let prepared = self.prepare(obj);
        let mut state = self.lock();
        let listing = state.listing_mut().ok_or(Error::NoListInProgress)?;
        let (key, obj) = prepared?;
        listing.keys.insert(key.clone());
        let delta = Delta::new(self.relist_delta_type(), obj);
        self.append_and_wake(state, key, delta);
        Ok(())
    }

    /// Abandons an open streamed relist without completing it: nothing is
    /// tombstoned, the relist does not count towards `has_synced` (F7), and
    /// live changes mark the FIFO populated again, as they do when no relist
    /// is open. What was listed so far stays queued. This is what a
    /// [`replace`](Self::replace) that stops at a rejected object leaves
    /// behind; a later [`list_start`](Self::list_start) also discards an open
    /// relist, so a consumer that starts over need not call this. Does
    /// nothing when no relist is open.
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
    /// fifo.list_abandon();
    /// assert!(fifo.list_done("7").is_err()); // no relist open any more
    /// fifo.add(cm("b", "2"))?; // a live change: populated
    /// fifo.try_pop();
    /// fifo.try_pop();
    /// assert!(fifo.has_synced());
    /// # Ok(())
    /// # }
    /// ```
    #[doc(hidden)]
    pub fn list_abandon(&self) {
        self.lock().take_listing();
    }

    /// Ends a streamed relist: queues tombstones exactly as
    /// [`replace`](Self::replace) would for the same list (F13).
    ///
    /// When the first relist is streamed, [`has_synced`](Self::has_synced)
    /// turns true once every key queued at this call has been popped (F7):
    /// keys the consumer popped while the listing was open were already
    /// handed out, and a key popped and queued again counts once.
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
    #[doc(hidden)]
    pub fn list_done(&self, resource_version: &str) -> Result<(), Error> {
        let mut state = self.lock();
        let listing = state.take_listing().ok_or(Error::NoListInProgress)?;
        let before = state.len();
        let result = state.tombstone_unlisted(&listing.keys, self.known());
        if result.is_ok() {
            // F7 for a streamed relist: the initial population is everything
            // queued when it completes. Listed keys popped while it was open
            // were handed out already (as part of the initial list); a key
            // listed, popped and queued again counts once, by its one place
            // in the queue.
            let queued = state.len();
            state.finish_relist(queued, resource_version);
        }
        self.wake_for(state, before);
        result.map(drop)
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
    /// assert_eq!(fifo.try_pop().unwrap()[0].delta_type, kube_informer::DeltaType::Sync);
    /// # Ok(())
    /// # }
    /// ```
    pub fn resync(&self) -> Result<(), Error> {
        let Some(known) = self.known() else {
            return Ok(());
        };
        // The known objects and the key function are user code: they run
        // before the lock is taken, up to the first error; whether a key has
        // something pending is decided under it.
        let mut objects = Vec::new();
        let result = (|| {
            for known_key in known.list_keys()? {
                let Some(object) = known.get_by_key(&known_key)? else {
                    continue;
                };
                objects.push((self.key_of(&object)?, object));
            }
            Ok(())
        })();
        let mut state = self.lock();
        let before = state.len();
        state.resync(objects);
        self.wake_for(state, before);
        result
    }

    /// Puts popped deltas back at the tail of the queue, unless the key has
    /// pending deltas again, in which case the newer deltas win (F10). Like
    /// a live change, it marks the FIFO populated only when no streamed
    /// relist is open; during the first one, that relist's end decides when
    /// [`has_synced`](Self::has_synced) turns true (F7).
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
    pub fn requeue(&self, deltas: Deltas<K>) -> Result<(), Error> {
        for delta in &deltas {
            let found = match &delta.object {
                DeltaObject::Object(obj) => self.key_of(obj)?,
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

    fn relist_delta_type(&self) -> DeltaType {
        if self.options().emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        }
    }

    fn transform(&self, key: &ObjectKey, obj: K) -> Result<Arc<K>, Error> {
        let Some(transform) = &self.options().transform else {
            return Ok(Arc::new(obj));
        };
        crate::panic::catch(|| transform(obj))
            .map_err(|message| Error::Panicked {
                callback: UserCode::Transform,
                message,
            })?
            .map(Arc::new)
            .map_err(|source| Error::Transform {
                key: key.clone(),
                source: Arc::from(source),
            })
    }

    /// Keys and transforms an entering object: the one place a `K` becomes an
    /// `Arc<K>`.
    fn prepare(&self, obj: K) -> Result<(ObjectKey, Arc<K>), Error> {
        let key = self.key_of(&obj)?;
        let obj = self.transform(&key, obj)?;
        Ok((key, obj))
    }

    fn enqueue_live(&self, delta_type: DeltaType, obj: K) -> Result<(), Error> {
        // Keying and transforming outside the lock keeps producers from
        // serialising on user code.
        let prepared = self.prepare(obj);
        let mut state = self.lock();
        let key = prepared.as_ref().ok().map(|(key, _)| key);
        state.live_event(key);
        let (key, obj) = prepared?;
        self.append_and_wake(state, key, Delta::new(delta_type, obj));
        Ok(())
    }
}
