//! [`Shard`]: the membership task of one replica. It keeps this replica's
//! Lease, watches the ring's Leases with an [`Informer`], drives the
//! [`Handover`] state machine and installs what it decides in the
//! [`KeyGate`] that consumers work through.

use std::{fmt, future::Future, pin::pin, sync::Arc, time::Duration};

use futures::{
    FutureExt,
    future::{BoxFuture, Either},
};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use parking_lot::Mutex;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::{
    assign::MemberId,
    config::LeaseConfig,
    error::Error,
    gate::KeyGate,
    handover::Handover,
    intake::Intake,
    lease::{LeaseApi, lease_record},
    ownership::Ownership,
    view::LeaseRecord,
    writer::{LeaseWriter, WriteTimes},
};
use crate::{informer::Informer, source};

/// One replica's membership in a ring: its Lease, its view of the others,
/// and the keys it may act on now.
///
/// Make one per replica, poll [`run`](Self::run) (usually
/// `tokio::spawn(shard.run())`), and consume notifications through its
/// [`gate`](Self::gate)'s [`filter`](KeyGate::filter) (or check keys with
/// the gate). See the [module docs](super) for the protocol and its
/// guarantee.
///
/// # Examples
///
/// ```no_run
/// use futures::StreamExt;
/// use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap};
/// use kube::{Api, Client};
/// use kube_informer::{Informer, SubscribeOptions, shard::{Shard, LeaseConfig, ShardEvent}};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let shard = Shard::new(
///     Api::<Lease>::namespaced(client.clone(), "operators"),
///     LeaseConfig::new("configmap-workers", std::env::var("POD_NAME")?),
/// )?;
/// tokio::spawn(shard.run());
///
/// let informer = Informer::builder(Api::<ConfigMap>::all(client)).build();
/// let mut mine = shard.gate().filter(informer.subscribe(SubscribeOptions::default())?, informer.store());
/// tokio::spawn(informer.run());
/// while let Some(event) = mine.next().await {
///     match event {
///         ShardEvent::Change { notification, guard } => {
///             // reconcile guard.key() ...
///             drop(guard);
///         }
///         ShardEvent::Lost { key } => { /* drop per-key state */ }
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Shard {
    inner: Arc<Inner>,
}

struct Inner {
    member: MemberId,
    gate: KeyGate,
    stop: CancellationToken,
    task: Mutex<Option<BoxFuture<'static, Result<(), Error>>>>,
}

impl Shard {
    /// A member of `config`'s ring whose Leases live in `api`'s namespace;
    /// watches them with an informer of its own.
    pub fn new(api: Api<Lease>, config: LeaseConfig) -> Result<Self, Error> {
        let informer = Informer::builder(api.clone())
            .source_config(source::Config::default().label_selector(config.selector()))
            .build();
        Self::with_parts(api, informer, config)
    }

    /// A member that writes through `api` and learns about the ring from
    /// `informer`, which must watch exactly the ring's Leases (label
    /// [`RING_LABEL`](super::RING_LABEL)`=<ring>` in one namespace). `run`
    /// drives the informer too. `api` is any `unstable::shard::LeaseApi`:
    /// for the crate's own tests, outside the semver promise.
    #[doc(hidden)]
    pub fn with_parts<A: LeaseApi>(
        api: A,
        informer: Informer<Lease>,
        config: LeaseConfig,
    ) -> Result<Self, Error> {
        config.validate()?;
        let member = MemberId::new(config.member_lease_name());
        let gate = KeyGate::new(Ownership::nothing());
        let stop = CancellationToken::new();
        let expiry = gate.clone();
        let membership = run_loop(api, informer, config, gate.clone(), stop.clone());
        // The gate's deadlines are announced beside the membership loop, so
        // a loop waiting on a request does not delay them (S3).
        let task = async move {
            match futures::future::select(pin!(membership), pin!(expiry.expire_at_deadlines()))
                .await
            {
                Either::Left((result, _)) => result,
                Either::Right(((), membership)) => membership.await,
            }
        }
        .boxed();
        Ok(Self {
            inner: Arc::new(Inner {
                member,
                gate,
                stop,
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// The gate through which work on keys starts.
    pub fn gate(&self) -> KeyGate {
        self.inner.gate.clone()
    }

    /// Runs the membership until [`stop`](Self::stop): renews the Lease,
    /// follows the ring, hands keys over, and tells the gate's watchers the
    /// moment its ownership runs out (S3), even while a Lease request is
    /// still unanswered. On stop it lets go of every key,
    /// waits for the work in flight (at most the renew deadline), and
    /// deletes its Lease so the others take over at once.
    ///
    /// Runs once: a second call resolves to [`Error::AlreadyRunning`].
    pub fn run(&self) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let task = self.inner.task.lock().take();
        async move {
            match task {
                Some(task) => task.await,
                None => Err(Error::AlreadyRunning),
            }
        }
    }

    /// Asks the membership to leave the ring and stop.
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }
}

impl fmt::Debug for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard")
            .field("member", &self.inner.member)
            .field("gate", &self.inner.gate)
            .finish()
    }
}

/// The Lease calls of the membership task, each abandoned when no answer
/// came within `timeout` (a retry period, shorter than the renew deadline by
/// [`LeaseConfig::validate`]). An abandoned write is never taken as a
/// success, so its late answer cannot extend the time this member acts;
/// if the server applied it anyway, the next write, conditional on the old
/// resourceVersion, conflicts and re-reads the Lease.
struct Bounded<A> {
    api: A,
    timeout: Duration,
}

impl<A> Bounded<A> {
    async fn call<T>(&self, request: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        tokio::time::timeout(self.timeout, request)
            .await
            .unwrap_or(Err(Error::LeaseTimedOut(self.timeout)))
    }
}

impl<A: LeaseApi> LeaseApi for Bounded<A> {
    async fn create(&self, lease: Lease) -> Result<Lease, Error> {
        self.call(self.api.create(lease)).await
    }
    async fn replace(&self, lease: Lease) -> Result<Lease, Error> {
        self.call(self.api.replace(lease)).await
    }
    async fn get(&self, name: &str) -> Result<Option<Lease>, Error> {
        self.call(self.api.get(name)).await
    }
    async fn delete_if(&self, name: &str, resource_version: &str) -> Result<(), Error> {
        self.call(self.api.delete_if(name, resource_version)).await
    }
    async fn list(&self, selector: &str) -> Result<Vec<Lease>, Error> {
        self.call(self.api.list(selector)).await
    }
}

async fn run_loop<A: LeaseApi>(
    api: A,
    informer: Informer<Lease>,
    config: LeaseConfig,
    gate: KeyGate,
    stop: CancellationToken,
) -> Result<(), Error> {
    let api = Bounded {
        api,
        timeout: config.retry_period,
    };
    let name = config.member_lease_name();
    let mut core = Handover::new(
        MemberId::new(name.as_str()),
        config.renew_deadline,
        config.retry_period,
    );
    let mut writer = LeaseWriter::new(name);
    let mut intake = Intake::start(&informer)?;
    let selector = config.selector();
    let mut writes = WriteTimes::new(Instant::now());
    let mut next_confirm = Instant::now();

    loop {
        // S8: what the informer delivered, also while a request was out,
        // is in the view before anything is decided on it.
        intake.apply(&mut core);
        if let Some(ended) = intake.take_end() {
            ended?;
            break;
        }
        if stop.is_cancelled() {
            break;
        }
        let now = Instant::now();
        // Registered before the in-flight check, so a guard dropped after
        // it wakes this loop.
        let mut released = pin!(gate.released_notify().notified());
        released.as_mut().enable();
        let busy = gate.grant(core.update(now), core.active_until());
        let plan = core.plan(now, busy);

        // Every plan's fences are acted on: planning records them as sent.
        if !plan.fence.is_empty() {
            intake.during(fence(&api, &mut core, &plan.fence)).await;
        }
        let write_at = writes.due(plan.write_now);
        if now >= write_at {
            let next = intake
                .during(writer.write(&api, &config, &mut core, plan.ack))
                .await;
            writes.after(next, Instant::now(), config.retry_period);
            continue;
        }
        if let Some(set) = &plan.confirm
            && now >= next_confirm
        {
            let listed = intake.during(api.list(&selector)).await;
            let read_at = Instant::now();
            // Counted from the answer, so however slow lists are, the loop
            // waits (and hears a stop) between two of them.
            next_confirm = read_at + config.retry_period / 4;
            match listed {
                Ok(list) => {
                    let records = list.iter().filter_map(lease_record).collect();
                    if core.confirm(set, records, read_at) {
                        tracing::info!(members = set.len(), fingerprint = %set.fingerprint(), "acquired keys");
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot list the ring's leases"),
            }
            continue;
        }
        let mut wake = plan.wake_at.map_or(write_at, |at| at.min(write_at));
        if plan.confirm.is_some() {
            wake = wake.min(next_confirm);
        }
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = intake.next() => {}
            () = &mut released => {}
            () = sleep_until(wake) => {}
        }
    }
    leave(&api, &mut core, &gate, config.renew_deadline).await;
    informer.stop();
    Ok(())
}

/// Deletes each expired Lease of `records`, conditional on the version
/// seen expiring (S5), and forgets the ones that are gone.
async fn fence<A: LeaseApi>(api: &A, core: &mut Handover, records: &[LeaseRecord]) {
    for record in records {
        tracing::info!(member = %record.member.id, "lease expired: fencing it");
        match api
            .delete_if(record.member.id.as_str(), &record.resource_version)
            .await
        {
            Ok(()) | Err(Error::LeaseNotFound) => core.remove(&record.member),
            Err(Error::LeaseConflict) => {}
            Err(error) => tracing::warn!(member = %record.member.id, %error, "cannot fence"),
        }
    }
}

/// A graceful leave: nothing handed out any more, the work in flight
/// finishes (or the renew deadline passes), then the Lease goes so the
/// others need not wait for it to expire.
async fn leave<A: LeaseApi>(
    api: &A,
    core: &mut Handover,
    gate: &KeyGate,
    deadline: std::time::Duration,
) {
    gate.set_ownership(Ownership::nothing());
    if !gate.wait_idle(Instant::now() + deadline).await {
        // Work still running: deleting the Lease now would let another
        // replica start on the same keys. Leave it to expire.
        return;
    }
    if let Some(own) = core.own_lease() {
        let name = core.me().as_str().to_owned();
        if let Err(error) = api.delete_if(&name, &own.resource_version).await {
            tracing::warn!(lease = %name, %error, "cannot delete own lease on leave");
        }
    }
    core.lease_lost();
}
