//! Leader election for work that must run on one replica only, on top of
//! the `kube-lease-manager` crate (feature `leader-election`).
//!
//! [`Leadership`] turns "am I the leader?" into the same [`KeyGate`] the
//! ring uses: while leader it owns every key, otherwise none. So a
//! subscription gated on leadership is a [`ShardedStream`]: nothing while a
//! follower, the whole store replayed as `Added` on becoming leader, `Lost`
//! for every key on losing it. A future is gated with
//! [`Leadership::run_while_leader`].
//!
//! Unlike the ring's handover, a leader change does not wait for work in
//! flight: `kube-lease-manager` decides alone when leadership ends (it
//! renews `grace` seconds before its Lease expires, and reports the loss when
//! it cannot). Work must watch [`WorkGuard::lost`](super::WorkGuard::lost),
//! or be dropped, which is what [`run_while_leader`](Leadership::run_while_leader)
//! does.

use std::fmt;

use futures::Stream;
use kube::Resource;
use tokio::sync::watch;

use super::{gate::KeyGate, ownership::Ownership, stream::ShardedStream};
use crate::{Notification, Store};

/// Leadership as a gate: every key while leader, none otherwise.
///
/// Made from any `watch::Receiver<bool>` that says whether this replica
/// leads, usually the one `kube_lease_manager::LeaseManager::watch` returns
/// ([`Leadership::from_manager`]). [`run`](Self::run) copies each change into
/// the gate; spawn it.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use kube_informer::shard::leader::Leadership;
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (elected, is_leader) = watch::channel(false);
/// let leadership = Leadership::new(is_leader);
/// tokio::spawn(leadership.run());
///
/// let work = tokio::spawn({
///     let leadership = leadership.clone();
///     async move { leadership.run_while_leader(async { 42 }).await }
/// });
/// elected.send(true).unwrap();
/// assert_eq!(work.await.unwrap(), Some(42));
/// # }
/// ```
#[derive(Clone)]
pub struct Leadership {
    is_leader: watch::Receiver<bool>,
    gate: KeyGate,
}

impl Leadership {
    /// Leadership as `is_leader` reports it.
    pub fn new(is_leader: watch::Receiver<bool>) -> Self {
        let ownership = if *is_leader.borrow() {
            Ownership::everything()
        } else {
            Ownership::nothing()
        };
        Self {
            is_leader,
            gate: KeyGate::new(ownership),
        }
    }

    /// Starts `manager`'s election loop (it spawns its own task, which
    /// releases the Lease once every receiver is gone) and follows it.
    ///
    /// ```no_run
    /// use kube::Client;
    /// use kube_informer::shard::leader::Leadership;
    /// use kube_lease_manager::LeaseManagerBuilder;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let manager = LeaseManagerBuilder::new(Client::try_default().await?, "garbage-collector")
    ///     .with_namespace("operators")
    ///     .with_duration(15)
    ///     .with_grace(5)
    ///     .build()
    ///     .await?;
    /// let (leadership, _election) = Leadership::from_manager(manager).await;
    /// tokio::spawn(leadership.run());
    /// leadership.run_while_leader(async { /* the work that must run once */ }).await;
    /// # Ok(()) }
    /// ```
    pub async fn from_manager(
        manager: kube_lease_manager::LeaseManager,
    ) -> (
        Self,
        tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    ) {
        let (is_leader, election) = manager.watch().await;
        (Self::new(is_leader), election)
    }

    /// Whether this replica leads now.
    pub fn is_leader(&self) -> bool {
        *self.is_leader.borrow()
    }

    /// The gate: every key while leader, none otherwise.
    pub fn gate(&self) -> KeyGate {
        self.gate.clone()
    }

    /// `stream` passed through only while leader; see [`ShardedStream`].
    pub fn filter<S, K>(&self, stream: S, store: Store<K>) -> ShardedStream<S, K>
    where
        S: Stream<Item = Notification<K>>,
        K: Resource + Send + Sync + 'static,
    {
        ShardedStream::new(stream, store, self.gate())
    }

    /// Copies every leadership change into the gate, until the election
    /// ends (then nothing is owned).
    pub fn run(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut is_leader = self.is_leader.clone();
        let gate = self.gate.clone();
        async move {
            loop {
                let leader = *is_leader.borrow_and_update();
                gate.set_ownership(if leader {
                    Ownership::everything()
                } else {
                    Ownership::nothing()
                });
                if is_leader.changed().await.is_err() {
                    gate.set_ownership(Ownership::nothing());
                    return;
                }
            }
        }
    }

    /// Waits until this replica leads, then runs `work` until it finishes
    /// (`Some(output)`) or leadership is lost (`None`: `work` is dropped,
    /// so it stops at its next await). Also `None` if the election ends.
    pub async fn run_while_leader<F: Future>(&self, work: F) -> Option<F::Output> {
        let mut is_leader = self.is_leader.clone();
        is_leader.wait_for(|leader| *leader).await.ok()?;
        tokio::select! {
            biased;
            output = work => Some(output),
            _ = is_leader.wait_for(|leader| !*leader) => None,
        }
    }
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("is_leader", &self.is_leader())
            .field("gate", &self.gate)
            .finish()
    }
}
