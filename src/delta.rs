//! What the [`DeltaFifo`](crate::fifo::DeltaFifo) queues: one [`Delta`] per
//! change, gathered per key into non-empty [`Deltas`] (F1).
//!
//! Objects are held as `Arc<K>`: one allocation per object version, shared by
//! the FIFO, the store and every subscriber. Nothing here clones a `K`.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::key::ObjectKey;

/// The kind of change a [`Delta`] records (F1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (a watch ADDED event).
    Added,
    /// The object changed (a watch MODIFIED event).
    Updated,
    /// The object was deleted, or vanished between two lists.
    Deleted,
    /// The object was part of a relist.
    Replaced,
    /// The object was re-delivered by a periodic resync, or by a relist when
    /// `Replaced` deltas are turned off.
    Sync,
}

/// The object a [`Delta`] carries: a live object, or the typed tombstone of an
/// object whose deletion was inferred from a relist rather than watched.
#[derive(Debug)]
pub enum DeltaObject<K> {
    /// The object as the API server sent it.
    Object(Arc<K>),
    /// The object disappeared while no watch was looking: the informer knows it
    /// is gone but not its final state. `object` is the last state known here.
    DeletedFinalStateUnknown {
        /// The key of the vanished object.
        key: ObjectKey,
        /// The newest state of the object that was known before it vanished.
        object: Arc<K>,
    },
}

impl<K> DeltaObject<K> {
    /// The object, live or last known.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeltaObject::Object(o) => o,
            DeltaObject::DeletedFinalStateUnknown { object, .. } => object,
        }
    }

    /// Whether this is a [`DeltaObject::DeletedFinalStateUnknown`] tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeltaObject::DeletedFinalStateUnknown { .. })
    }

    /// Consumes this and returns the object, live or last known.
    pub fn into_object(self) -> Arc<K> {
        match self {
            DeltaObject::Object(o) => o,
            DeltaObject::DeletedFinalStateUnknown { object, .. } => object,
        }
    }
}

impl<K> Clone for DeltaObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeltaObject::Object(o) => DeltaObject::Object(Arc::clone(o)),
            DeltaObject::DeletedFinalStateUnknown { key, object } => {
                DeltaObject::DeletedFinalStateUnknown {
                    key: key.clone(),
                    object: Arc::clone(object),
                }
            }
        }
    }
}

impl<K> PartialEq for DeltaObject<K> {
    /// Two delta objects are equal when they are the same variant, carry the
    /// same allocation and (for tombstones) the same key.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DeltaObject::Object(a), DeltaObject::Object(b)) => Arc::ptr_eq(a, b),
            (
                DeltaObject::DeletedFinalStateUnknown { key: ka, object: a },
                DeltaObject::DeletedFinalStateUnknown { key: kb, object: b },
            ) => ka == kb && Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// One change to one object.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Delta, DeltaObject, DeltaType};
///
/// let delta = Delta {
///     delta_type: DeltaType::Added,
///     object: DeltaObject::Object(Arc::new(ConfigMap::default())),
/// };
/// assert_eq!(delta.delta_type, DeltaType::Added);
/// assert!(!delta.object.is_tombstone());
/// ```
#[derive(Debug)]
pub struct Delta<K> {
    /// What happened.
    pub delta_type: DeltaType,
    /// The object it happened to.
    pub object: DeltaObject<K>,
}

impl<K> Delta<K> {
    /// A delta carrying a live object.
    pub(crate) fn new(delta_type: DeltaType, object: Arc<K>) -> Self {
        Self {
            delta_type,
            object: DeltaObject::Object(object),
        }
    }

    /// A `Deleted` delta carrying a tombstone.
    pub(crate) fn tombstone(key: ObjectKey, object: Arc<K>) -> Self {
        Self {
            delta_type: DeltaType::Deleted,
            object: DeltaObject::DeletedFinalStateUnknown { key, object },
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        Self {
            delta_type: self.delta_type,
            object: self.object.clone(),
        }
    }
}

impl<K> PartialEq for Delta<K> {
    fn eq(&self, other: &Self) -> bool {
        self.delta_type == other.delta_type && self.object == other.object
    }
}

/// The pending changes of one key, oldest first; never empty.
///
/// Most keys carry a single delta when popped, so the first one is stored
/// inline without a heap allocation.
///
/// # One key
///
/// Every delta in a `Deltas` is meant to be about its [`key`](Deltas::key).
/// `Deltas` cannot check that for live objects, since it does not know the
/// key function that keys them, so [`new`](Deltas::new) and
/// [`push`](Deltas::push) take what they are given. The FIFO checks at its door instead: the only way a `Deltas`
/// built by hand enters one, [`DeltaFifo::requeue`](crate::fifo::DeltaFifo::requeue),
/// keys every object, compares every tombstone's key, and refuses the whole
/// `Deltas` (`store::Error::RequeueKeyMismatch`) if one differs; nothing of
/// it is queued then. Deltas the FIFO builds itself hold one key's changes
/// by construction.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Delta, DeltaObject, DeltaType, Deltas, ObjectKey};
///
/// let delta = |delta_type| Delta { delta_type, object: DeltaObject::Object(Arc::new(ConfigMap::default())) };
/// let key: ObjectKey = "default/app".parse()?;
/// let mut deltas = Deltas::new(key.clone(), delta(DeltaType::Added));
/// deltas.push(delta(DeltaType::Updated));
/// assert_eq!(deltas.key(), &key);
/// assert_eq!(deltas.len(), 2);
/// assert_eq!(deltas.newest().delta_type, DeltaType::Updated);
/// // A slice of deltas, oldest first: `len`, `iter`, indexing (`deltas[0]`
/// // is the oldest) and the rest of the slice methods read it.
/// let types: Vec<_> = deltas.iter().map(|d| d.delta_type).collect();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// assert_eq!(deltas[1].delta_type, DeltaType::Updated);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Deltas<K> {
    key: ObjectKey,
    items: SmallVec<[Delta<K>; 1]>,
}

impl<K> Deltas<K> {
    /// Deltas holding one delta.
    pub fn new(key: ObjectKey, first: Delta<K>) -> Self {
        let mut items = SmallVec::new();
        items.push(first);
        Self { key, items }
    }

    /// The key all these deltas belong to.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// Appends a newer delta, as is: no merge and no key check (see
    /// [One key](Deltas#one-key)).
    pub fn push(&mut self, delta: Delta<K>) {
        self.items.push(delta);
    }

    /// The newest delta: what the object is now, as far as this batch
    /// knows (the oldest is `self[0]`; a `Deltas` is never empty).
    pub fn newest(&self) -> &Delta<K> {
        &self.items[self.items.len() - 1]
    }

    /// Mutable access for the FIFO's in-place dedup and coalescing. Callers
    /// keep the list non-empty.
    pub(crate) fn items_mut(&mut self) -> &mut SmallVec<[Delta<K>; 1]> {
        &mut self.items
    }
}

/// The deltas as a slice, oldest first, never empty: `len`, `iter`,
/// `first`/`last` and indexing read it.
impl<K> std::ops::Deref for Deltas<K> {
    type Target = [Delta<K>];

    fn deref(&self) -> &[Delta<K>] {
        &self.items
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            items: self.items.clone(),
        }
    }
}

impl<K> PartialEq for Deltas<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.items == other.items
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = smallvec::IntoIter<[Delta<K>; 1]>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        "ns/a".parse().unwrap()
    }

    // F1
    #[test]
    fn f1_deltas_keep_order_and_are_never_empty() {
        let mut d = Deltas::new(key(), Delta::new(DeltaType::Added, Arc::new(1u8)));
        d.push(Delta::new(DeltaType::Sync, Arc::new(2u8)));
        d.push(Delta::tombstone(key(), Arc::new(3u8)));
        let got: Vec<_> = d
            .iter()
            .map(|x| (x.delta_type, **x.object.object()))
            .collect();
        assert_eq!(
            got,
            [
                (DeltaType::Added, 1),
                (DeltaType::Sync, 2),
                (DeltaType::Deleted, 3)
            ]
        );
        assert!(d.newest().object.is_tombstone());
        assert!(!d[0].object.is_tombstone());
        assert!(!d.is_empty());
    }
}
