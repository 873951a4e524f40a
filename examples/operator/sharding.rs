//! Sharded mode: several replicas of the operator share out the sources,
//! each reconciling only the source keys it owns, coordinated through
//! Leases (`kube_informer::shard`).
//!
//! ```sh
//! cargo run --example operator -- --shard mirror --identity "$POD_NAME" --lease-namespace operators
//! ```
//!
//! Each replica holds the Lease `<ring>-<identity>` in the Lease namespace.
//! Its controller is sharded ([`Controller::shard`]): its queue is fed only
//! owned source keys, the keys it acquires are replayed into the queue, a
//! key lost while it waited is dropped, and a handover waits for the
//! reconcile in flight.
//!
//! The Lease timings come from the environment (defaults in brackets):
//! `SHARD_LEASE_DURATION_SECS` [15], `SHARD_RENEW_DEADLINE_MS` [10000],
//! `SHARD_RETRY_PERIOD_MS` [2000].
//!
//! Stdout is a record of the replica's work, one line per event, so a test
//! (`tests/e2e_shard.rs`) can check the handover from the outside; messages
//! for people go to stderr. Times are milliseconds since the Unix epoch.
//!
//! ```text
//! BEGIN <identity> <key> <start-ms>
//! RECONCILE <identity> <key> <resourceVersion> <start-ms> <end-ms> <ok|failed>
//! OWNS <identity> <ms> <number of owned sources> <key,key,...>
//! ```
//!
//! `RECONCILE` carries the source's resourceVersion the reconcile read
//! (`deleted` when the store has none). `OWNS` is printed whenever the set
//! of owned sources changes (checked on every ownership change and every
//! second, once the sources are listed).
//!
//! [`Controller::shard`]: kube_informer::Controller::shard

use std::{
    future::Future,
    io::Write,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap};
use kube::{Api, Client};
use kube_informer::{
    ObjectKey, Store,
    controller::Observed,
    shard::{self, KeyGate, LeaseConfig, Shard},
};
use tokio::task::JoinHandle;

/// The `--shard`, `--identity` and `--lease-namespace` flags.
#[derive(Debug, Clone)]
pub struct ShardArgs {
    /// The ring's name, shared by all replicas.
    pub ring: String,
    /// This replica's name in the ring (e.g. its pod's name).
    pub identity: String,
    /// Where the ring's Leases live.
    pub lease_namespace: String,
}

impl ShardArgs {
    /// Sharded mode when `--shard` is given, which then needs the other two.
    pub fn from_flags(
        ring: Option<String>,
        identity: Option<String>,
        lease_namespace: Option<String>,
    ) -> Result<Option<Self>, String> {
        match (ring, identity, lease_namespace) {
            (None, None, None) => Ok(None),
            (Some(ring), Some(identity), Some(lease_namespace)) => Ok(Some(Self {
                ring,
                identity,
                lease_namespace,
            })),
            _ => Err("--shard, --identity and --lease-namespace go together".into()),
        }
    }

    /// The ring membership's configuration, timings from the environment.
    pub fn config(&self) -> Result<LeaseConfig, String> {
        let (second, milli) = (Duration::from_secs(1), Duration::from_millis(1));
        Ok(LeaseConfig {
            lease_duration: setting("SHARD_LEASE_DURATION_SECS", second, 15)?,
            renew_deadline: setting("SHARD_RENEW_DEADLINE_MS", milli, 10_000)?,
            retry_period: setting("SHARD_RETRY_PERIOD_MS", milli, 2_000)?,
            ..LeaseConfig::new(self.ring.as_str(), self.identity.as_str())
        })
    }
}

/// `default` `unit`s, or as many as the environment variable `name` says.
fn setting(name: &str, unit: Duration, default: u32) -> Result<Duration, String> {
    match std::env::var(name) {
        Err(_) => Ok(unit * default),
        Ok(value) => value
            .parse::<u32>()
            .map(|n| unit * n)
            .map_err(|e| format!("{name}={value:?}: {e}")),
    }
}

/// Joins the ring: the shard, and its membership task (renewing the Lease,
/// handing keys over) until [`Shard::stop`].
pub fn join(
    client: Client,
    args: &ShardArgs,
) -> Result<(Shard, JoinHandle<Result<(), shard::Error>>), String> {
    let api = Api::<Lease>::namespaced(client, &args.lease_namespace);
    let shard = Shard::new(api, args.config()?).map_err(|e| e.to_string())?;
    let membership = tokio::spawn(shard.run());
    Ok((shard, membership))
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// One line on stdout, flushed at once (a SIGKILL loses nothing printed).
fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints `OWNS` whenever the owned sources change, until the gate goes.
pub fn report_owned(identity: String, gate: KeyGate, sources: Store<ConfigMap>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = gate.watch();
        if let Err(error) = sources.wait_until_synced().await {
            eprintln!("{identity}: {error}");
            return;
        }
        let mut last = None;
        loop {
            let mut owned: Vec<String> = sources
                .list_keys()
                .iter()
                .filter(|key| gate.owns(key))
                .map(ToString::to_string)
                .collect();
            owned.sort();
            if last.as_ref() != Some(&owned) {
                say(format!(
                    "OWNS {identity} {} {} {}",
                    now_ms(),
                    owned.len(),
                    owned.join(",")
                ));
                last = Some(owned);
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    })
}

/// Prints `BEGIN` and `RECONCILE` around each reconcile.
#[derive(Debug, Clone)]
pub struct ReconcileLog {
    identity: Arc<str>,
}

impl ReconcileLog {
    /// The log of replica `identity`.
    pub fn new(identity: &str) -> Self {
        Self {
            identity: identity.into(),
        }
    }

    /// Runs `reconcile` of `key`, whose source was `source`, between a
    /// `BEGIN` and a `RECONCILE` line when there is a `log`.
    pub async fn around<T, E>(
        log: Option<&Self>,
        key: &ObjectKey,
        source: Option<&Observed<ConfigMap>>,
        reconcile: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let Some(ReconcileLog { identity }) = log else {
            return reconcile.await;
        };
        let start = now_ms();
        say(format!("BEGIN {identity} {key} {start}"));
        let result = reconcile.await;
        let outcome = if result.is_ok() { "ok" } else { "failed" };
        let version = match source {
            Some(Observed::Present(source)) => source.metadata.resource_version.as_deref(),
            _ => None,
        };
        say(format!(
            "RECONCILE {identity} {key} {} {start} {} {outcome}",
            version.unwrap_or("deleted"),
            now_ms()
        ));
        result
    }
}
