//! A mirror operator on WorkQueue and Runner: every ConfigMap labelled
//! `mirror=true` is copied into every namespace labelled
//! `mirror-target=true`, and the copies follow their source: updated when it
//! changes, removed when it is deleted or loses its label, or when a
//! namespace loses its target label.
//!
//! ```sh
//! cargo run --example operator            # the cluster of your KUBECONFIG; Ctrl-C stops
//! cargo run --example operator -- --fake  # an in-process fake API server, no cluster
//! # one of several replicas sharing the sources through Leases:
//! cargo run --example operator -- --shard mirror --identity "$POD_NAME" --lease-namespace operators
//! ```
//!
//! - `mirror.rs`: what a source's copies should be, and the writes that make
//!   them so (the reconciler);
//! - `controller.rs`: three informers feeding one queue of source keys, and
//!   why deletions are swept by relisting rather than held by a finalizer;
//! - `demo.rs`: the `--fake` run: changes made while the operator runs, and
//!   the copies printed after each one;
//! - `sharding.rs`: the sharded mode (`--shard RING --identity ID
//!   --lease-namespace NS`): replicas share out the sources, each
//!   reconciling only the ones it owns, and record every reconcile on
//!   stdout; `tests/e2e_shard.rs` runs them on a real kube-apiserver;
//! - `metrics_http.rs`: the `/metrics` endpoint that `--metrics-addr ADDR`
//!   turns on (with the `prometheus` feature:
//!   `cargo run --features prometheus --example operator -- --fake --metrics-addr 127.0.0.1:9090`);
//!   sharded, it serves the shard's metrics too.

mod controller;
mod demo;
#[cfg(feature = "prometheus")]
mod metrics_http;
mod mirror;
mod sharding;

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use futures::StreamExt;
use kube::Client;
use kube_informer::runner::{OnCancel, Runner};
use kube_informer_testing::FakeApiServer;
use tokio_util::sync::CancellationToken;

use controller::{Operator, Settings};
use sharding::{ReconcileLog, ShardArgs};

/// Reconciles at most this many sources at once.
const CONCURRENCY: usize = 4;

/// What the command line asks for.
#[derive(Debug, Default)]
struct Args {
    fake: bool,
    metrics_addr: Option<SocketAddr>,
    shard: Option<ShardArgs>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let (mut ring, mut identity, mut lease_namespace) = (None, None, None);
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut value = |slot: &mut Option<String>| {
            *slot = Some(words.next().ok_or(format!("{word} needs a value"))?);
            Ok::<_, String>(())
        };
        match word.as_str() {
            "--fake" => args.fake = true,
            "--shard" => value(&mut ring)?,
            "--identity" => value(&mut identity)?,
            "--lease-namespace" => value(&mut lease_namespace)?,
            "--metrics-addr" => {
                let value = words.next().ok_or("--metrics-addr needs an address")?;
                args.metrics_addr = Some(
                    value
                        .parse()
                        .map_err(|e| format!("--metrics-addr {value:?}: {e}"))?,
                );
            }
            other => return Err(format!("unknown argument {other:?} (try --fake)")),
        }
    }
    args.shard = ShardArgs::from_flags(ring, identity, lease_namespace)?;
    if args.fake && args.shard.is_some() {
        return Err("--shard needs a cluster: it cannot run with --fake".into());
    }
    Ok(args)
}

/// Counts of reconcile outcomes, for the log.
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconciles that succeeded.
    pub reconciled: AtomicU64,
    /// Reconciles that failed (each retried with backoff).
    pub failed: AtomicU64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("operator: {message}");
            std::process::exit(2);
        }
    };
    let server = if args.fake {
        Some(Arc::new(FakeApiServer::start().await))
    } else {
        None
    };
    let client = match &server {
        Some(server) => server.client(),
        None => match Client::try_default().await {
            Ok(client) => client,
            Err(error) => {
                eprintln!("no cluster configuration found ({error}); try `--fake`");
                std::process::exit(2);
            }
        },
    };
    let settings = Settings::default();
    if let Some(server) = &server {
        // Left from "before": an orphan the start-up sweep must remove.
        demo::before_start(server, &settings.labels)?;
    }

    // Sharded: join the ring before the informers start, so the sources'
    // feed is filtered from the first list on.
    let shard = match &args.shard {
        Some(shard_args) => match sharding::join(client.clone(), shard_args) {
            Ok(joined) => Some(joined),
            Err(message) => {
                eprintln!("operator: {message}");
                std::process::exit(2);
            }
        },
        None => None,
    };

    let stop = CancellationToken::new();
    let operator = Operator::start_in(
        client.clone(),
        &settings,
        &stop,
        shard.as_ref().map(|(shard, _)| shard),
    )?;
    let stats = Arc::new(Stats::default());

    // The metrics endpoint, off unless `--metrics-addr` is given: the three
    // informers' and the work queue's metrics on `GET /metrics`.
    let metrics_server = match args.metrics_addr {
        Some(addr) => {
            let gate = shard.as_ref().map(|(shard, _)| shard.gate());
            Some(serve_metrics(addr, &operator, gate, &stop).await?)
        }
        None => None,
    };

    if !operator.synced().await {
        return Err("an informer stopped before its first list".into());
    }
    let mirror = operator.mirror.clone();
    let mut runner = Runner::new(operator.queue.clone())
        .concurrency(CONCURRENCY)
        .cancel_on(stop.clone(), OnCancel::Finish);
    let mut log = None;
    if let (Some((shard, _)), Some(shard_args)) = (&shard, &args.shard) {
        // Only keys this replica owns when their reconcile starts.
        runner = runner.gate(shard.gate());
        log = Some(ReconcileLog::new(&shard_args.identity));
        sharding::report_owned(
            shard_args.identity.clone(),
            shard.gate(),
            operator.sources.clone(),
        );
    }
    let mut outcomes = runner.run_with_store(operator.sources.clone(), move |key, source| {
        let (mirror, log) = (mirror.clone(), log.clone());
        async move {
            match log {
                None => mirror.reconcile(&key, source).await,
                Some(log) => {
                    let version = source
                        .as_ref()
                        .and_then(|s| s.metadata.resource_version.clone());
                    log.record(&key, version.as_deref(), mirror.reconcile(&key, source))
                        .await
                }
            }
        }
    });
    let counts = stats.clone();
    let runner = tokio::spawn(async move {
        while let Some(outcome) = outcomes.next().await {
            match outcome {
                Ok(_) => counts.reconciled.fetch_add(1, Ordering::Relaxed),
                Err(failure) => {
                    eprintln!(
                        "reconcile of {} failed, retrying: {}",
                        failure.key, failure.error
                    );
                    counts.failed.fetch_add(1, Ordering::Relaxed)
                }
            };
        }
    });

    let result = match &server {
        Some(server) => {
            let result = demo::run(server, &client, &settings.labels).await;
            stop.cancel();
            result
        }
        None => {
            // Sharded, stdout is the record of the work.
            match &args.shard {
                None => println!("mirroring; Ctrl-C stops"),
                Some(s) => eprintln!(
                    "mirroring as {} of ring {}; Ctrl-C stops",
                    s.identity, s.ring
                ),
            }
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
            Ok(())
        }
    };
    runner.await?;
    if let Some((shard, membership)) = shard {
        // Leave the ring: hand the keys over and delete the Lease.
        shard.stop();
        membership.await??;
    }
    if let Some(server) = metrics_server {
        server.await??;
    }
    let list_watch_errors = operator.informer_errors();
    operator.stop().await?;
    let summary = format!(
        "stopped after {} reconciles ({} failed and retried), {list_watch_errors} list/watch errors",
        stats.reconciled.load(Ordering::Relaxed),
        stats.failed.load(Ordering::Relaxed)
    );
    match args.shard {
        None => println!("{summary}"),
        Some(_) => eprintln!("{summary}"),
    }
    result
}

/// Serves the informers' and the queue's metrics on `addr` until `stop`,
/// and the shard's (`kube_informer_shard_*`) when sharded.
#[cfg(feature = "prometheus")]
async fn serve_metrics(
    addr: SocketAddr,
    operator: &Operator,
    gate: Option<kube_informer::shard::KeyGate>,
    stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    use kube_informer::metrics;
    use prometheus_client::registry::Registry;

    let mut registry = Registry::default();
    for (name, reader) in operator.metrics_readers() {
        metrics::register_informer(&mut registry, name, reader);
    }
    metrics::register_work_queue(&mut registry, "mirror", operator.queue.metrics_reader());
    if let Some(gate) = gate {
        metrics::register_shard(
            &mut registry,
            "mirror",
            gate.metrics_reader(operator.sources.clone()),
        );
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "operator: serving /metrics on http://{}/metrics",
        listener.local_addr()?
    );
    Ok(tokio::spawn(metrics_http::serve(
        listener,
        Arc::new(registry),
        stop.clone(),
    )))
}

/// Without the `prometheus` feature there is no endpoint to serve.
#[cfg(not(feature = "prometheus"))]
async fn serve_metrics(
    _addr: SocketAddr,
    _operator: &Operator,
    _gate: Option<kube_informer::shard::KeyGate>,
    _stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    Err(std::io::Error::other(
        "--metrics-addr needs the example built with `--features prometheus`",
    ))
}
