//! Leader election for work that must run on one replica at a time
//! (feature `leader-election`): replicas compete for one
//! `coordination.k8s.io/v1` Lease, as client-go's leader election does, and
//! the holder acts through the same [`KeyGate`] a ring member does.
//!
//! [`Leadership`] turns "am I the leader?" into that gate: while leading it
//! owns every key, otherwise none. So a subscription gated on leadership
//! (`leadership.gate().filter(..)`, [`KeyGate::filter`]) yields nothing while a follower, the whole store
//! replayed as `Added` on becoming leader, `Lost` for every key when it ends; a
//! [`Runner`](crate::runner::Runner) or `Controller` takes the gate as it
//! takes a ring member's, and a future runs under
//! [`Leadership::run_while_leader`].
//!
//! # The design: one Lease, client-go's record
//!
//! Every replica reads the Lease each retry period; the holder renews it
//! instead, with a replace conditional on the version it wrote last. This is
//! client-go's election, not a ring with one owner (one fixed key of a
//! [`Shard`](super::Shard) ring, which would inherit S2–S5): a ring gives a
//! key to the member with the highest rendezvous weight, so a replica that
//! joins would take leadership from a healthy leader whenever it weighs
//! more, where users of an election expect the incumbent to stay; people
//! and `kubectl` expect one Lease, named after the election, whose
//! `holderIdentity` is the leader; and a ring's informer, acknowledgements
//! and confirming lists are many requests and moving parts for one key. What
//! the ring built for safety is used as it is: the [`KeyGate`]'s deadline
//! (S3), the ring's Lease requests with their deadline, the
//! observedTime rule of the ring's membership view, the timing rules of
//! [`LeaseConfig`], which configures a ring member and an election alike.
//!
//! The election is not built on the `kube-lease-manager` crate: its
//! renewals are strategic-merge patches carrying no resourceVersion, so a
//! renewal held up in the network lands on whoever holds the Lease when it
//! arrives, setting that holder's `renewTime` back; and leadership there is
//! a `watch` value its own task updates, with no deadline of its own while
//! that task waits on a request.
//!
//! # Rules
//!
//! - **LE1 Take only a free Lease.** A replica writes itself into the Lease
//!   only when the Lease is absent (a create), has no holder (released),
//!   names this replica already, or went a Lease duration without a new
//!   resourceVersion as *observed by this replica's clock* (client-go's
//!   `observedTime` rule; the duration is the longer of the one written in
//!   the Lease and this replica's own). `renewTime` is never read: it was
//!   written with another machine's clock. So a leader that keeps renewing
//!   is never displaced by a replica that joins.
//! - **LE2 Conditional writes.** Every write is a create, or a replace
//!   carrying the resourceVersion this replica last read or wrote; nothing
//!   is written over a Lease whose version is not known. A write built on a
//!   stale read conflicts and changes nothing, so a write that lands late
//!   (after its sender gave up on it and another replica took the Lease)
//!   can never move another holder's Lease.
//! - **LE3 Stop before expiring.** A replica acts only while less than the
//!   renew deadline has passed since it *sent* its last successful claim
//!   (create, takeover or renewal). The gate enforces that instant itself,
//!   as a ring member's does (S3): [`Leadership::is_leader`], every read of
//!   [`Leadership::gate`], [`WorkGuard::lost`](super::WorkGuard::lost) and
//!   work under [`Leadership::run_while_leader`] end there, whatever the
//!   election task is waiting on. Every Lease request is abandoned after a
//!   retry period without an answer, and an abandoned write never counts as
//!   successful, however late its answer.
//! - **LE4 Stop on sight.** A read showing another holder, no holder or no
//!   Lease, and a write answered "not found", end leadership at once.
//! - **LE5 The Lease's fields, as client-go writes them.** `holderIdentity`
//!   is the replica's identity and `leaseDurationSeconds` its Lease
//!   duration. A create sets `acquireTime` and `renewTime` and counts no
//!   transition; a renewal moves only `renewTime`; a takeover (from another
//!   holder, or from none) sets `acquireTime` anew and adds one to
//!   `leaseTransitions`; a release empties `holderIdentity` and clears both
//!   times, keeping the count. Whatever else the Lease holds (labels,
//!   annotations) is kept.
//! - **LE6 Graceful release.** On [`Leadership::stop`] nothing is handed out
//!   any more, work under `run_while_leader` is dropped, and the election
//!   waits for the work in flight (at most a renew deadline). With none
//!   left it releases the Lease (conditional on the version it wrote last),
//!   and the next replica takes it at its next read, within about a retry
//!   period. With work still in flight it leaves the Lease to expire.
//! - **LE7 Work under leadership.** `run_while_leader` starts its work only
//!   while leading, counts it as work in flight (so a release waits for
//!   it), and drops it at the instant leadership ends.
//! - **LE8 One election per `Leadership`.** [`Leadership::run`] on a
//!   leadership whose election runs or has run returns
//!   [`Error::AlreadyRunning`]: two loops
//!   writing one identity's claims would each count the other's writes as
//!   their own.
//!
//! # The guarantee
//!
//! At no instant do two replicas act as leader, if the API server's writes
//! are linearizable (etcd's are), each identity runs in one process at a
//! time, and clocks tick at rates whose difference over a Lease duration
//! stays within `lease_duration - renew_deadline`. Why: let a leader's last
//! successful claim be sent at `s`; it acts until `s + renew_deadline`
//! (LE3). Another replica can take the Lease only with a write conditional
//! on a version it read (LE2); a read at `t` that returned a version at
//! least as new as that claim makes `t ≥ s`, and an older one makes the
//! takeover conflict. It writes only once that version went unchanged
//! for a Lease duration from `t` (LE1), at `t + lease_duration >
//! s + renew_deadline`, and acts only once its write is answered. A
//! killed leader's Lease is taken over `lease_duration` after the others
//! last saw it renewed: between about `lease_duration - retry_period` and
//! `lease_duration + 2 × retry_period` after the kill, plus round trips.
//! Work that runs on after leadership ended is outside the guarantee:
//! work that can outlast the gap must watch its guard's
//! [`lost`](super::WorkGuard::lost), or run under `run_while_leader`,
//! which drops it.

mod election;
mod run;

use std::{fmt, future::Future, pin::pin, sync::Arc};

use futures::{FutureExt, future::BoxFuture};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::LeaseConfig;

use super::{Error, KeyGate, Ownership, lease::LeaseApi};
use crate::ObjectKey;

/// One replica's part in the election of a Lease, and leadership as a gate:
/// every key while leading, none otherwise.
///
/// Make one per replica, poll [`run`](Self::run) (usually
/// `tokio::spawn(leadership.run())`), and gate work on it: a future with
/// [`run_while_leader`](Self::run_while_leader), a notification stream with
/// the gate's [`filter`](KeyGate::filter), a runner or controller with
/// [`gate`](Self::gate). [`stop`](Self::stop) releases the Lease. See the
/// [module docs](self) for the rules and the guarantee.
///
/// Cheap to clone; every clone is the same replica.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::coordination::v1::Lease;
/// use kube::Api;
/// use kube_informer::shard::{LeaseConfig, leader::Leadership};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = kube_informer_testing::FakeApiServer::start().await;
/// # server.register(&kube_informer_testing::ResourceType::of::<Lease>());
/// # let client = server.client();
/// // `client` would be `kube::Client::try_default().await?`.
/// let leadership = Leadership::new(
///     Api::<Lease>::namespaced(client, "operators"),
///     LeaseConfig::new("garbage-collector", "pod-0"),
/// )?;
/// let election = tokio::spawn(leadership.run());
///
/// let swept = leadership.run_while_leader(async { "swept once" }).await;
/// assert_eq!(swept, Some("swept once"));
/// assert!(leadership.is_leader());
///
/// leadership.stop();
/// election.await??;
/// assert!(!leadership.is_leader());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Leadership {
    inner: Arc<Inner>,
}

struct Inner {
    config: LeaseConfig,
    gate: KeyGate,
    stop: CancellationToken,
    /// Cancelled once the election has ended (stopped, or its task dropped).
    ended: CancellationToken,
    task: Mutex<Option<BoxFuture<'static, ()>>>,
}

impl Leadership {
    /// A replica of the election `config` describes, over the Lease of that
    /// name in `api`'s namespace. Fails if the timings are unsafe or the
    /// identity is empty ([`LeaseConfig::validate`]).
    ///
    /// ```no_run
    /// use k8s_openapi::api::coordination::v1::Lease;
    /// use kube::{Api, Client};
    /// use kube_informer::shard::{LeaseConfig, leader::Leadership};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::try_default().await?;
    /// let leadership = Leadership::new(
    ///     Api::<Lease>::namespaced(client, "operators"),
    ///     LeaseConfig::new("garbage-collector", std::env::var("POD_NAME")?),
    /// )?;
    /// tokio::spawn(leadership.run());
    /// # Ok(()) }
    /// ```
    pub fn new(api: Api<Lease>, config: LeaseConfig) -> Result<Self, Error> {
        Self::with_api(api, config)
    }

    /// A replica that reads and writes the Lease through `api`, any
    /// `unstable::shard::LeaseApi`: for the crate's own tests, outside the
    /// semver promise. The election calls only `get`, `create` and
    /// `replace`, each with a deadline of its own.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::coordination::v1::Lease;
    /// use kube::Api;
    /// use kube_informer::shard::{LeaseConfig, leader::Leadership};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kube_informer_testing::FakeApiServer::start().await;
    /// # let client = server.client();
    /// // One `Api` shared with the rest of the program.
    /// let leases = Arc::new(Api::<Lease>::namespaced(client, "operators"));
    /// let leadership = Leadership::with_api(
    ///     Arc::clone(&leases),
    ///     LeaseConfig::new("garbage-collector", "pod-0"),
    /// )?;
    /// # drop(leadership);
    /// # Ok(()) }
    /// ```
    #[doc(hidden)]
    pub fn with_api<A: LeaseApi>(api: A, config: LeaseConfig) -> Result<Self, Error> {
        config.validate()?;
        let gate = KeyGate::new(Ownership::nothing());
        let stop = CancellationToken::new();
        let ended = CancellationToken::new();
        let election = run::elect(api, config.clone(), gate.clone(), stop.clone());
        let expiry = gate.clone();
        let ended_on_drop = ended.clone().drop_guard();
        let task = async move {
            let _ended = ended_on_drop;
            let mut election = pin!(election);
            // The deadline is announced beside the loop, so a loop waiting
            // on a request does not delay it (LE3). It never ends first: it
            // holds the gate.
            tokio::select! {
                biased;
                () = &mut election => {}
                () = expiry.expire_at_deadlines() => election.await,
            }
        }
        .boxed();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                gate,
                stop,
                ended,
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// Runs the election until [`stop`](Self::stop): reads the Lease every
    /// retry period, takes it when it is free (LE1), renews it while
    /// leading, keeps the gate in step, and on stop releases it once the
    /// work in flight ended (LE6).
    ///
    /// Runs once: a second call resolves to [`Error::AlreadyRunning`].
    /// Dropping the future ends the election without a release: the Lease
    /// expires, and leadership ends at its deadline.
    pub fn run(&self) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let task = self.inner.task.lock().take();
        async move {
            match task {
                Some(task) => {
                    task.await;
                    Ok(())
                }
                None => Err(Error::AlreadyRunning),
            }
        }
    }

    /// Asks the election to release the Lease and end (LE6); `run`
    /// resolves once it has.
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }

    /// Whether this replica leads now: it holds the Lease and less than the
    /// renew deadline has passed since it sent its last successful renewal
    /// (LE3).
    ///
    /// ```
    /// # use k8s_openapi::api::coordination::v1::Lease;
    /// # use kube::Api;
    /// # use kube_informer::shard::{LeaseConfig, leader::Leadership};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kube_informer_testing::FakeApiServer::start().await;
    /// # server.register(&kube_informer_testing::ResourceType::of::<Lease>());
    /// let leadership = Leadership::new(
    ///     Api::<Lease>::namespaced(server.client(), "operators"),
    ///     LeaseConfig::new("garbage-collector", "pod-0"),
    /// )?;
    /// assert!(!leadership.is_leader(), "not before the election ran");
    /// # Ok(()) }
    /// ```
    pub fn is_leader(&self) -> bool {
        !self.inner.gate.ownership().is_nothing()
    }

    /// The gate: every key while leading, none otherwise. Hand it to a
    /// [`Runner`](crate::runner::Runner) or a controller as a ring member's
    /// gate is handed, or pass a subscription through it
    /// ([`KeyGate::filter`]) to see it only while leading.
    ///
    /// ```
    /// # use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap};
    /// # use kube::Api;
    /// # use kube_informer::{Informer, SubscribeOptions, shard::{LeaseConfig, leader::Leadership}};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kube_informer_testing::FakeApiServer::start().await;
    /// # server.register(&kube_informer_testing::ResourceType::of::<Lease>());
    /// # let client = server.client();
    /// let leadership = Leadership::new(
    ///     Api::<Lease>::namespaced(client.clone(), "operators"),
    ///     LeaseConfig::new("garbage-collector", "pod-0"),
    /// )?;
    /// let gate = leadership.gate();
    /// assert!(gate.begin(&"default/web".parse()?).is_none(), "a follower works on nothing");
    ///
    /// let informer = Informer::builder(Api::<ConfigMap>::all(client)).build();
    /// let while_leading = gate.filter(
    ///     informer.subscribe(SubscribeOptions::default())?,
    ///     informer.store(),
    /// );
    /// # drop(while_leading);
    /// # Ok(()) }
    /// ```
    pub fn gate(&self) -> KeyGate {
        self.inner.gate.clone()
    }

    /// Waits until this replica leads, then runs `work` until it finishes
    /// (`Some(output)`) or leadership ends (`None`: `work` is dropped, so it
    /// stops at its next await, and is not polled again after that instant).
    /// `None` without running `work` once the election is stopped or has
    /// ended. The work counts as work in
    /// flight, so a graceful stop releases the Lease only after it ended
    /// (LE7).
    ///
    /// ```
    /// # use k8s_openapi::api::coordination::v1::Lease;
    /// # use kube::Api;
    /// # use kube_informer::shard::{LeaseConfig, leader::Leadership};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kube_informer_testing::FakeApiServer::start().await;
    /// # server.register(&kube_informer_testing::ResourceType::of::<Lease>());
    /// let leadership = Leadership::new(
    ///     Api::<Lease>::namespaced(server.client(), "operators"),
    ///     LeaseConfig::new("garbage-collector", "pod-0"),
    /// )?;
    /// tokio::spawn(leadership.run());
    /// let sweep = leadership.run_while_leader(async {
    ///     // work that must not run on two replicas at once
    ///     3
    /// });
    /// assert_eq!(sweep.await, Some(3));
    /// # Ok(()) }
    /// ```
    pub async fn run_while_leader<F: Future>(&self, work: F) -> Option<F::Output> {
        let gate = &self.inner.gate;
        let mut ownership = gate.watch();
        let mut guard = loop {
            ownership.borrow_and_update();
            if let Some(guard) = gate.begin(&work_key()) {
                break guard;
            }
            tokio::select! {
                biased;
                () = self.inner.stop.cancelled() => return None,
                () = self.inner.ended.cancelled() => return None,
                changed = ownership.changed() => changed.ok()?,
            }
        };
        let work = pin!(work);
        // The end of leadership first: work is not polled past it.
        tokio::select! {
            biased;
            () = guard.lost() => None,
            output = work => Some(output),
        }
    }
}

/// The key the gate counts work under `run_while_leader` by. A leader owns
/// every key, so sharing it with an object's key changes nothing but the
/// count.
fn work_key() -> ObjectKey {
    ObjectKey::new(None, "kube-informer.rs-leader-work").expect("a name without '/' is a key")
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("lease", &self.inner.config.name)
            .field("identity", &self.inner.config.identity)
            .field("is_leader", &self.is_leader())
            .finish()
    }
}
