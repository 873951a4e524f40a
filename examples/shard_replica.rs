//! One replica of a sharded ConfigMap reconciler: run several with
//! different identities and they share out the ConfigMaps of a namespace,
//! coordinated through Leases in the same namespace.
//!
//! ```sh
//! cargo run --example shard_replica -- <namespace> <identity> [ring]
//! ```
//!
//! Every reconcile is printed as one line on stdout, so a test can check
//! the handover from the outside:
//!
//! ```text
//! RECONCILE <identity> <key> <resourceVersion> <start-ms> <end-ms>
//! LOST <identity> <key> <ms>
//! OWNED <identity> <number of owned keys> <ms>
//! ```
//!
//! Times are milliseconds since the Unix epoch, by this machine's clock.
//! The ConfigMap's `data.value` is what it reconciles; a reconcile takes
//! 20 ms.

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(namespace), Some(identity)) = (args.next(), args.next()) else {
        eprintln!("usage: shard_replica <namespace> <identity> [ring]");
        std::process::exit(2);
    };
    let ring = args.next().unwrap_or_else(|| "configmaps".into());
    let client = Client::try_default().await?;

    let shard = Shard::new(
        Api::<Lease>::namespaced(client.clone(), &namespace),
        ShardConfig::new(ring, identity.as_str()),
    )?;
    let membership = tokio::spawn(shard.run());

    let informer = Informer::builder(Api::<ConfigMap>::namespaced(client, &namespace)).build();
    let store = informer.store();
    let mut mine = shard.filter(
        informer.subscribe(SubscribeOptions::default())?,
        store.clone(),
    );
    tokio::spawn(informer.run());

    // Report the number of owned keys now and then.
    let gate = shard.gate();
    let reporter_store = store.clone();
    let reporter_identity = identity.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let owned = reporter_store
                .list_keys()
                .iter()
                .filter(|k| gate.owns(k))
                .count();
            say(format!("OWNED {reporter_identity} {owned} {}", now_ms()));
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
                let version = store
                    .get(guard.key())
                    .and_then(|cm| cm.metadata.resource_version.clone())
                    .unwrap_or_else(|| "deleted".into());
                tokio::time::sleep(Duration::from_millis(20)).await;
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
