//! One replica of a sharded ConfigMap reconciler: run several with
//! different identities and they share out the ConfigMaps of a namespace,
//! coordinated through Leases in the same namespace.
//!
//! ```sh
//! cargo run --example shard_replica -- <namespace> <identity> [ring]
//! ```
//!
//! The timings come from the environment (defaults in brackets):
//! `SHARD_LEASE_DURATION_SECS` [15], `SHARD_RENEW_DEADLINE_MS` [10000],
//! `SHARD_RETRY_PERIOD_MS` [2000], and `SHARD_RECONCILE_MS` [20], how long
//! one reconcile takes.
//!
//! Every reconcile is printed on stdout, so a test can check the handover
//! from the outside:
//!
//! ```text
//! BEGIN <identity> <key> <start-ms>
//! RECONCILE <identity> <key> <resourceVersion> <start-ms> <end-ms>
//! LOST <identity> <key> <ms>
//! OWNS <identity> <ms> <number of owned keys> <key,key,...>
//! ```
//!
//! `OWNS` is printed whenever the set of owned ConfigMaps changes (checked
//! on every ownership change and every second, once the cache is filled).
//! Times are milliseconds since the Unix epoch, by this machine's clock.
//! The ConfigMap's resourceVersion in the cache when the reconcile starts is
//! the state it reconciles.

use std::{
    io::Write,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use futures::StreamExt;
use k8s_openapi::api::{coordination::v1::Lease, core::v1::ConfigMap};
use kube::{Api, Client};
use kube_informer::{
    Informer, SubscribeOptions,
    shard::{Shard, ShardConfig, ShardEvent},
};

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A duration from the environment variable `name`, in `unit`s, or `default`.
fn setting(name: &str, unit: Duration, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(default, |n| unit * n)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(namespace), Some(identity)) = (args.next(), args.next()) else {
        eprintln!("usage: shard_replica <namespace> <identity> [ring]");
        std::process::exit(2);
    };
    let ring = args.next().unwrap_or_else(|| "configmaps".into());
    let second = Duration::from_secs(1);
    let milli = Duration::from_millis(1);
    let config = ShardConfig::new(ring, identity.as_str())
        .lease_duration(setting("SHARD_LEASE_DURATION_SECS", second, 15 * second))
        .renew_deadline(setting("SHARD_RENEW_DEADLINE_MS", milli, 10 * second))
        .retry_period(setting("SHARD_RETRY_PERIOD_MS", milli, 2 * second));
    let reconcile = setting("SHARD_RECONCILE_MS", milli, 20 * milli);
    let client = Client::try_default().await?;

    let shard = Shard::new(Api::<Lease>::namespaced(client.clone(), &namespace), config)?;
    let membership = tokio::spawn(shard.run());

    let informer = Informer::builder(Api::<ConfigMap>::namespaced(client, &namespace)).build();
    let store = informer.store();
    let mut mine = shard.filter(
        informer.subscribe(SubscribeOptions::default())?,
        store.clone(),
    );
    tokio::spawn(informer.run());

    // Report the owned ConfigMaps whenever they change.
    let gate = shard.gate();
    let reporter_store = store.clone();
    let reporter_identity = identity.clone();
    tokio::spawn(async move {
        let mut changes = gate.watch();
        reporter_store.wait_until_synced().await;
        let mut last = None;
        loop {
            let mut owned: Vec<String> = reporter_store
                .list_keys()
                .iter()
                .filter(|k| gate.owns(k))
                .map(ToString::to_string)
                .collect();
            owned.sort();
            if last.as_ref() != Some(&owned) {
                say(format!(
                    "OWNS {reporter_identity} {} {} {}",
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
    });

    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let event = tokio::select! {
            _ = &mut stop => break,
            event = mine.next() => match event { Some(event) => event, None => break },
        };
        match event {
            ShardEvent::Change { guard, .. } => {
                // Level-based: reconcile the newest state in the store.
                let start = now_ms();
                say(format!("BEGIN {identity} {} {start}", guard.key()));
                let version = store
                    .get(guard.key())
                    .and_then(|cm| cm.metadata.resource_version.clone())
                    .unwrap_or_else(|| "deleted".into());
                tokio::time::sleep(reconcile).await;
                say(format!(
                    "RECONCILE {identity} {} {version} {start} {}",
                    guard.key(),
                    now_ms()
                ));
                drop(guard);
            }
            ShardEvent::Lost { key } => say(format!("LOST {identity} {key} {}", now_ms())),
        }
    }
    shard.stop();
    membership.await??;
    Ok(())
}
