//! [`KeyGate`]: the one place that says which keys may be worked on, and
//! counts the work in flight, so a handover can wait for it.
//!
//! The membership task installs each ownership with the deadline S3 gives
//! it (a renew deadline after the last successful Lease write was sent).
//! The gate enforces that deadline itself: every read compares it with the
//! clock, so no key is admitted past it even while the membership task is
//! stuck in a request, and [`KeyGate::expire_at_deadlines`] (polled beside
//! the membership task) announces the loss to watchers when it passes.

use std::{fmt, sync::Arc};

use parking_lot::Mutex;
use tokio::{
    sync::{Notify, watch},
    time::{Instant, sleep_until},
};

use super::ownership::Ownership;
use crate::{
    hash::KeyMap,
    key::ObjectKey,
    metrics::{MetricsReader, ShardMetrics},
    store::Store,
};

/// Which keys this replica may work on now, and the work in flight on them.
///
/// Work on a key starts with [`begin`](Self::begin), which hands out a
/// [`WorkGuard`] only while the key is owned, and ends when the guard is
/// dropped. When ownership shrinks ([`set_ownership`](Self::set_ownership)),
/// no new guard is handed out for the released keys at once, and the
/// membership task waits until the guards already out on them are dropped
/// before it tells the other replicas that it let go.
///
/// An ownership installed by a [`Shard`](super::Shard) holds only until a
/// renew deadline after the member sent its last successful Lease write
/// (S3): past that instant nothing is owned, `begin` refuses every key and
/// every [`WorkGuard::lost`] resolves, whether or not the membership task
/// has run since. An ownership installed with
/// [`set_ownership`](Self::set_ownership) has no deadline.
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
/// drop(guard); // the work on `key` is over
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
#[derive(Clone)]
pub struct KeyGate {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    ownership: watch::Sender<Ownership>,
    /// The deadline of the ownership now installed, for the waiters that
    /// must wake when it passes.
    deadline: watch::Sender<Option<Instant>>,
    released: Notify,
}

struct State {
    ownership: Ownership,
    /// From this instant on nothing is owned, whatever `ownership` says.
    until: Option<Instant>,
    in_flight: KeyMap<ObjectKey, usize>,
    /// How many times the ownership changed.
    changes: u64,
}

impl State {
    fn owns(&self, key: &ObjectKey) -> bool {
        self.in_force() && self.ownership.owns(key)
    }

    /// Whether the deadline, if any, has not passed.
    fn in_force(&self) -> bool {
        self.until.is_none_or(|until| Instant::now() < until)
    }

    fn released_busy(&self) -> bool {
        self.in_flight.keys().any(|key| !self.owns(key))
    }
}

impl KeyGate {
    /// A gate that starts with `ownership`.
    pub fn new(ownership: Ownership) -> Self {
        let (sender, _) = watch::channel(ownership.clone());
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    ownership,
                    until: None,
                    in_flight: KeyMap::default(),
                    changes: 0,
                }),
                ownership: sender,
                deadline: watch::Sender::new(None),
                released: Notify::new(),
            }),
        }
    }

    /// Whether `key` is owned now.
    pub fn owns(&self, key: &ObjectKey) -> bool {
        self.inner.state.lock().owns(key)
    }

    /// The ownership now. The crate's own (and its tests'): a user asks
    /// [`owns`](Self::owns).
    #[doc(hidden)]
    pub fn ownership(&self) -> Ownership {
        let state = self.inner.state.lock();
        if state.in_force() {
            state.ownership.clone()
        } else {
            Ownership::nothing()
        }
    }

    /// Starts work on `key` if it is owned: the returned guard counts as
    /// work in flight until dropped. `None` when the key is not owned: do
    /// not work on it (a work queue drops such a key).
    pub fn begin(&self, key: &ObjectKey) -> Option<WorkGuard> {
        let mut state = self.inner.state.lock();
        if !state.owns(key) {
            return None;
        }
        *state.in_flight.entry(key.clone()).or_insert(0) += 1;
        drop(state);
        Some(WorkGuard {
            gate: Arc::clone(&self.inner),
            key: key.clone(),
            ownership: self.inner.ownership.subscribe(),
            deadline: self.inner.deadline.subscribe(),
        })
    }

    /// Installs a new ownership: from now on only its keys are handed out.
    /// Returns whether work is still in flight on a key it does not own.
    ///
    /// The membership task calls this; a program gating work some other way
    /// (its own election, tests) may too.
    pub fn set_ownership(&self, ownership: Ownership) -> bool {
        self.grant(ownership, None)
    }

    /// Installs `ownership` until `until` (S3): from that instant on nothing
    /// is owned, until the next grant. Returns whether work is still in
    /// flight on a key not owned now.
    pub(crate) fn grant(&self, ownership: Ownership, until: Option<Instant>) -> bool {
        // A grant whose deadline already passed grants nothing.
        let ownership = if until.is_some_and(|until| Instant::now() >= until) {
            Ownership::nothing()
        } else {
            ownership
        };
        let mut state = self.inner.state.lock();
        let changed = state.ownership != ownership;
        state.changes += u64::from(changed);
        state.ownership = ownership.clone();
        state.until = until;
        let busy = state.released_busy();
        drop(state);
        if changed {
            self.inner.ownership.send_replace(ownership);
        }
        self.inner.deadline.send_if_modified(|deadline| {
            let moved = *deadline != until;
            *deadline = until;
            moved
        });
        busy
    }

    /// Runs for as long as it is polled: each time the deadline of the
    /// installed ownership passes, installs [`Ownership::nothing`] so that
    /// watchers ([`watch`](Self::watch), [`filter`](Self::filter),
    /// [`WorkGuard::lost`]) learn of the loss then, not when the membership
    /// task next gets to run. Reads of the gate need no such help: they
    /// compare the deadline with the clock themselves.
    pub(crate) async fn expire_at_deadlines(&self) {
        let mut deadline = self.inner.deadline.subscribe();
        loop {
            let until = *deadline.borrow_and_update();
            if let Some(until) = until {
                tokio::select! {
                    biased;
                    () = sleep_until(until) => {
                        self.expire(until);
                        if deadline.changed().await.is_err() {
                            return;
                        }
                    }
                    changed = deadline.changed() => if changed.is_err() { return },
                }
            } else if deadline.changed().await.is_err() {
                return;
            }
        }
    }

    /// Installs nothing if the deadline is still `until` (no grant came
    /// since), and tells the watchers.
    fn expire(&self, until: Instant) {
        let mut state = self.inner.state.lock();
        if state.until != Some(until) {
            return;
        }
        let changed = !state.ownership.is_nothing();
        state.changes += u64::from(changed);
        state.ownership = Ownership::nothing();
        drop(state);
        if changed {
            self.inner.ownership.send_replace(Ownership::nothing());
        }
    }

    /// Whether work is in flight on a key not owned now: the membership's
    /// wait before a handover (and its tests').
    #[doc(hidden)]
    pub fn released_busy(&self) -> bool {
        self.inner.state.lock().released_busy()
    }

    /// How many guards are out: for tests; a user reads
    /// [`ShardMetrics::work_in_flight`] from [`metrics`](Self::metrics).
    #[doc(hidden)]
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
    /// use kube_informer::{ObjectKey, shard::{KeyGate, Ownership}};
    /// use kube_informer::unstable::store::Writer;
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
        let members = if state.in_force() {
            state.ownership.members()
        } else {
            0
        };
        ShardMetrics {
            members,
            owned_keys: keys.iter().filter(|key| state.owns(key)).count(),
            ownership_changes: state.changes,
            work_in_flight: state.in_flight.values().sum(),
        }
    }

    /// Waits until no work is in flight, or until `give_up`; returns
    /// whether none is left. A graceful leave waits here before it gives
    /// its Lease up.
    pub(crate) async fn wait_idle(&self, give_up: Instant) -> bool {
        loop {
            // Registered before the count is read, so a guard dropped in
            // between wakes this loop.
            let mut released = std::pin::pin!(self.inner.released.notified());
            released.as_mut().enable();
            if self.in_flight() == 0 {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            tokio::select! {
                biased;
                () = &mut released => {}
                () = sleep_until(give_up) => {}
            }
        }
    }

    /// Resolves when a guard is dropped after this call began (register
    /// before checking [`released_busy`](Self::released_busy) to miss none):
    /// the membership's wait, and its tests'.
    #[doc(hidden)]
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

/// A reader of the gate's [`metrics`](KeyGate::metrics) over `store`, e.g.
/// for `metrics::register` (feature `prometheus`). It keeps the gate and
/// `store`; a store from [`Informer::store`](crate::Informer::store) keeps
/// its informer running while the reader is held.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{metrics::MetricsReader, shard::{KeyGate, Ownership}};
/// use kube_informer::unstable::store::Writer;
///
/// let store = Writer::<ConfigMap>::new(Default::default()).reader();
/// let gate = KeyGate::new(Ownership::everything());
/// let reader = MetricsReader::from((&gate, store));
/// assert_eq!(reader.read().unwrap().members, 1);
/// ```
impl<K: Send + Sync + 'static> From<(&KeyGate, Store<K>)> for MetricsReader<ShardMetrics> {
    fn from((gate, store): (&KeyGate, Store<K>)) -> Self {
        let gate = gate.clone();
        MetricsReader::new(move || Some(gate.metrics(&store)))
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
    deadline: watch::Receiver<Option<Instant>>,
}

impl WorkGuard {
    /// The key worked on.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// Whether the key is still owned.
    pub fn is_owned(&self) -> bool {
        self.gate.state.lock().owns(&self.key)
    }

    /// Resolves once the key is no longer owned: released in a handover, or
    /// at the deadline of the ownership it was handed out under, at that
    /// instant even if the membership task is stuck (cancel-safe).
    pub async fn lost(&mut self) {
        let Self {
            gate,
            key,
            ownership,
            deadline,
        } = self;
        loop {
            let until = *deadline.borrow_and_update();
            if !gate.state.lock().owns(key) {
                return;
            }
            tokio::select! {
                biased;
                // An error means the gate is gone: nothing is owned any more.
                _ = ownership.wait_for(|o| !o.owns(key)) => return,
                () = sleep_until_some(until) => {}
                _ = deadline.changed() => {}
            }
        }
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

/// Sleeps until `until`, or forever without one.
async fn sleep_until_some(until: Option<Instant>) {
    match until {
        Some(until) => sleep_until(until).await,
        None => std::future::pending().await,
    }
}

impl fmt::Debug for WorkGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkGuard").field("key", &self.key).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;

    fn key() -> ObjectKey {
        "ns/x".parse().unwrap()
    }

    /// A gate owning everything for `seconds` from now, and now.
    fn owned_for(seconds: u64) -> (KeyGate, Instant) {
        let gate = KeyGate::new(Ownership::nothing());
        let start = Instant::now();
        gate.grant(
            Ownership::everything(),
            Some(start + Duration::from_secs(seconds)),
        );
        (gate, start)
    }

    // S3: the deadline holds by itself, with no membership task running.
    #[tokio::test(start_paused = true)]
    async fn s3_nothing_is_admitted_from_the_deadline_on() {
        let gate = KeyGate::new(Ownership::nothing());
        let deadline = Instant::now() + Duration::from_secs(2);
        assert!(!gate.grant(Ownership::everything(), Some(deadline)));
        let mut guard = gate.begin(&key()).expect("owned before the deadline");
        assert!(guard.lost().now_or_never().is_none());

        tokio::time::sleep_until(deadline - Duration::from_millis(1)).await;
        assert!(gate.owns(&key()));
        tokio::time::sleep_until(deadline).await;
        assert!(!gate.owns(&key()));
        assert!(gate.begin(&key()).is_none());
        assert!(gate.ownership().is_nothing());
        assert!(!guard.is_owned());
        assert!(
            gate.released_busy(),
            "the guard's work is on a key not owned"
        );
        // `lost` wakes at the deadline on its own.
        guard.lost().now_or_never().expect("lost at the deadline");
    }

    // S3: a guard waiting in `lost` wakes at the deadline, not later.
    #[tokio::test(start_paused = true)]
    async fn s3_lost_resolves_at_the_deadline_while_waiting() {
        let (gate, start) = owned_for(2);
        let mut guard = gate.begin(&key()).unwrap();
        guard.lost().await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    // S3: a renewal moves the deadline; the guard stays owned.
    #[tokio::test(start_paused = true)]
    async fn s3_a_later_deadline_extends_the_ownership() {
        let (gate, start) = owned_for(2);
        let mut guard = gate.begin(&key()).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        gate.grant(
            Ownership::everything(),
            Some(start + Duration::from_secs(3)),
        );
        let lost = guard.lost();
        tokio::pin!(lost);
        tokio::select! {
            biased;
            () = &mut lost => panic!("lost before the new deadline"),
            () = tokio::time::sleep_until(start + Duration::from_millis(2_999)) => {}
        }
        lost.await;
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }

    // S3: a grant whose deadline already passed grants nothing.
    #[tokio::test(start_paused = true)]
    async fn s3_a_grant_past_its_deadline_grants_nothing() {
        let gate = KeyGate::new(Ownership::nothing());
        gate.grant(Ownership::everything(), Some(Instant::now()));
        assert!(!gate.owns(&key()));
        assert!(gate.watch().borrow().is_nothing());
    }

    // S3: watchers hear of the loss at the deadline when the expiry task runs.
    #[tokio::test(start_paused = true)]
    async fn s3_watchers_see_nothing_owned_at_the_deadline() {
        let (gate, start) = owned_for(2);
        let mut watch = gate.watch();
        assert!(!watch.borrow_and_update().is_nothing());
        let expiry = tokio::spawn({
            let gate = gate.clone();
            async move { gate.expire_at_deadlines().await }
        });
        watch.changed().await.unwrap();
        assert!(watch.borrow().is_nothing());
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        // Granted, then expired: two changes of ownership.
        assert_eq!(gate.inner.state.lock().changes, 2);
        expiry.abort();
    }
}
