//! [`KeyGate`]: the one place that says which keys may be worked on, and
//! counts the work in flight, so a handover can wait for it.

use std::{collections::HashMap, fmt, sync::Arc};

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::ownership::Ownership;
use crate::{key::ObjectKey, metrics::ShardMetrics, store::Store};

/// Which keys this replica may work on now, and the work in flight on them.
///
/// Work on a key starts with [`begin`](Self::begin), which hands out a
/// [`WorkGuard`] only while the key is owned, and ends when the guard is
/// dropped. When ownership shrinks ([`set_ownership`](Self::set_ownership)),
/// no new guard is handed out for the released keys at once, and the
/// membership task waits ([`released`](Self::released)) until the guards
/// already out on them are dropped before it tells the other replicas that
/// it let go.
///
/// Cheap to clone; every clone is the same gate.
///
/// # Examples
///
/// ```
/// use kube_informer::{ObjectKey, shard::{KeyGate, Ownership}};
///
/// let gate = KeyGate::new(Ownership::everything());
/// let key: ObjectKey = "default/web".parse()?;
/// let guard = gate.begin(&key).expect("owned");
/// // Ownership goes; the work already running is still counted.
/// assert!(gate.set_ownership(Ownership::nothing()));
/// assert!(gate.begin(&key).is_none());
/// assert!(!guard.is_owned());
/// drop(guard);
/// assert_eq!(gate.in_flight(), 0);
/// # Ok::<(), kube_informer::KeyError>(())
/// ```
#[derive(Clone)]
pub struct KeyGate {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    ownership: watch::Sender<Ownership>,
    released: Notify,
}

struct State {
    ownership: Ownership,
    in_flight: HashMap<ObjectKey, usize>,
    /// How many times `set_ownership` changed the ownership.
    changes: u64,
}

impl KeyGate {
    /// A gate that starts with `ownership`.
    pub fn new(ownership: Ownership) -> Self {
        let (sender, _) = watch::channel(ownership.clone());
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    ownership,
                    in_flight: HashMap::new(),
                    changes: 0,
                }),
                ownership: sender,
                released: Notify::new(),
            }),
        }
    }

    /// Whether `key` is owned now.
    pub fn owns(&self, key: &ObjectKey) -> bool {
        self.inner.state.lock().ownership.owns(key)
    }

    /// The ownership now.
    pub fn ownership(&self) -> Ownership {
        self.inner.state.lock().ownership.clone()
    }

    /// Starts work on `key` if it is owned: the returned guard counts as
    /// work in flight until dropped. `None` when the key is not owned: do
    /// not work on it (a work queue drops such a key).
    pub fn begin(&self, key: &ObjectKey) -> Option<WorkGuard> {
        let mut state = self.inner.state.lock();
        if !state.ownership.owns(key) {
            return None;
        }
        *state.in_flight.entry(key.clone()).or_insert(0) += 1;
        drop(state);
        Some(WorkGuard {
            gate: Arc::clone(&self.inner),
            key: key.clone(),
            ownership: self.inner.ownership.subscribe(),
        })
    }

    /// Installs a new ownership: from now on only its keys are handed out.
    /// Returns whether work is still in flight on a key it does not own.
    ///
    /// The membership task calls this; a program gating work some other way
    /// (its own election, tests) may too.
    pub fn set_ownership(&self, ownership: Ownership) -> bool {
        let mut state = self.inner.state.lock();
        let changed = state.ownership != ownership;
        state.changes += u64::from(changed);
        state.ownership = ownership.clone();
        let busy = state.in_flight.keys().any(|key| !state.ownership.owns(key));
        drop(state);
        if changed {
            self.inner.ownership.send_replace(ownership);
        }
        busy
    }

    /// Whether work is in flight on a key not owned now.
    pub fn released_busy(&self) -> bool {
        let state = self.inner.state.lock();
        state.in_flight.keys().any(|key| !state.ownership.owns(key))
    }

    /// How many guards are out.
    pub fn in_flight(&self) -> usize {
        self.inner.state.lock().in_flight.values().sum()
    }

    /// This replica's [`ShardMetrics`]: members, the keys of `store` it
    /// owns now, ownership changes so far, work in flight. Counting owned
    /// keys looks at every key of `store`: call it when scraping, not per
    /// event.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, shard::{KeyGate, Ownership}, store::Writer};
    ///
    /// // In a program: the informer's store, and the gate of its `Shard`.
    /// let writer = Writer::<ConfigMap>::new(Default::default());
    /// for key in ["default/a", "default/b"] {
    ///     writer.apply_upsert(key.parse::<ObjectKey>()?, Arc::new(ConfigMap::default()))?;
    /// }
    /// let gate = KeyGate::new(Ownership::nothing());
    /// assert_eq!(gate.metrics(&writer.reader()).owned_keys, 0);
    /// gate.set_ownership(Ownership::everything());
    /// let _guard = gate.begin(&"default/a".parse()?);
    /// let metrics = gate.metrics(&writer.reader());
    /// assert_eq!((metrics.members, metrics.owned_keys), (1, 2));
    /// assert_eq!((metrics.ownership_changes, metrics.work_in_flight), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics<K>(&self, store: &Store<K>) -> ShardMetrics {
        let keys = store.list_keys();
        let state = self.inner.state.lock();
        ShardMetrics {
            members: state.ownership.members(),
            owned_keys: keys.iter().filter(|key| state.ownership.owns(key)).count(),
            ownership_changes: state.changes,
            work_in_flight: state.in_flight.values().sum(),
        }
    }

    /// Resolves when a guard is dropped after this call began (register
    /// before checking [`released_busy`](Self::released_busy) to miss none).
    pub async fn released(&self) {
        self.inner.released.notified().await;
    }

    /// A receiver of every ownership change, for streams that announce
    /// acquired and lost keys.
    pub fn watch(&self) -> watch::Receiver<Ownership> {
        self.inner.ownership.subscribe()
    }

    pub(crate) fn released_notify(&self) -> &Notify {
        &self.inner.released
    }
}

impl fmt::Debug for KeyGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("KeyGate")
            .field("ownership", &state.ownership)
            .field("in_flight", &state.in_flight.len())
            .finish()
    }
}

/// Work in flight on one key: while it lives, a handover of the key waits.
/// Drop it when the work is done.
///
/// If the replica loses the key anyway (it could not renew its Lease in
/// time), [`lost`](Self::lost) resolves: stop the work, because another
/// replica may take the key once the Lease duration has passed.
#[must_use = "the work counts as in flight until the guard is dropped"]
pub struct WorkGuard {
    gate: Arc<Inner>,
    key: ObjectKey,
    ownership: watch::Receiver<Ownership>,
}

impl WorkGuard {
    /// The key worked on.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// Whether the key is still owned.
    pub fn is_owned(&self) -> bool {
        self.gate.state.lock().ownership.owns(&self.key)
    }

    /// Resolves once the key is no longer owned (cancel-safe).
    pub async fn lost(&mut self) {
        let key = self.key.clone();
        // An error means the gate is gone: nothing is owned any more.
        let _ = self.ownership.wait_for(|o| !o.owns(&key)).await;
    }
}

impl Drop for WorkGuard {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock();
        if let Some(count) = state.in_flight.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                state.in_flight.remove(&self.key);
            }
        }
        drop(state);
        self.gate.released.notify_waiters();
    }
}

impl fmt::Debug for WorkGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkGuard").field("key", &self.key).finish()
    }
}
