//! A mirror operator on WorkQueue and Runner: every ConfigMap labelled
//! `mirror=true` is copied into every namespace labelled
//! `mirror-target=true`, and the copies follow their source: updated when it
//! changes, removed when it is deleted or loses its label, or when a
//! namespace loses its target label.
//!
//! ```sh
//! cargo run --example operator            # the cluster of your KUBECONFIG; Ctrl-C stops
//! cargo run --example operator -- --fake  # an in-process fake API server, no cluster
//! ```
//!
//! - `mirror.rs`: what a source's copies should be, and the writes that make
//!   them so (the reconciler);
//! - `controller.rs`: three informers feeding one queue of source keys, and
//!   why deletions are swept by relisting rather than held by a finalizer;
//! - `demo.rs`: the `--fake` run: changes made while the operator runs, and
//!   the copies printed after each one;
//! - `metrics_http.rs`: the `/metrics` endpoint that `--metrics-addr ADDR`
//!   turns on (with the `prometheus` feature:
//!   `cargo run --features prometheus --example operator -- --fake --metrics-addr 127.0.0.1:9090`).

mod controller;
mod demo;
#[cfg(feature = "prometheus")]
mod metrics_http;
mod mirror;

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

/// Reconciles at most this many sources at once.
const CONCURRENCY: usize = 4;

/// What the command line asks for.
#[derive(Debug, Default)]
struct Args {
    fake: bool,
    metrics_addr: Option<SocketAddr>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "--fake" => args.fake = true,
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

    let stop = CancellationToken::new();
    let operator = Operator::start(client.clone(), &settings, &stop)?;
    let stats = Arc::new(Stats::default());

    // The metrics endpoint, off unless `--metrics-addr` is given: the three
    // informers' and the work queue's metrics on `GET /metrics`.
    let metrics_server = match args.metrics_addr {
        Some(addr) => Some(serve_metrics(addr, &operator, &stop).await?),
        None => None,
    };

    if !operator.synced().await {
        return Err("an informer stopped before its first list".into());
    }
    let mirror = operator.mirror.clone();
    let mut outcomes = Runner::new(operator.queue.clone())
        .concurrency(CONCURRENCY)
        .cancel_on(stop.clone(), OnCancel::Finish)
        .run_with_store(operator.sources.clone(), move |key, source| {
            let mirror = mirror.clone();
            async move { mirror.reconcile(&key, source).await }
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
            println!("mirroring; Ctrl-C stops");
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
            Ok(())
        }
    };
    runner.await?;
    if let Some(server) = metrics_server {
        server.await??;
    }
    let list_watch_errors = operator.informer_errors();
    operator.stop().await?;
    println!(
        "stopped after {} reconciles ({} failed and retried), {list_watch_errors} list/watch errors",
        stats.reconciled.load(Ordering::Relaxed),
        stats.failed.load(Ordering::Relaxed)
    );
    result
}

/// Serves the informers' and the queue's metrics on `addr` until `stop`.
#[cfg(feature = "prometheus")]
async fn serve_metrics(
    addr: SocketAddr,
    operator: &Operator,
    stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    use kube_informer::metrics;
    use prometheus_client::registry::Registry;

    let mut registry = Registry::default();
    for (name, reader) in operator.metrics_readers() {
        metrics::register_informer(&mut registry, name, reader);
    }
    metrics::register_work_queue(&mut registry, "mirror", &operator.queue);
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
    _stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    Err(std::io::Error::other(
        "--metrics-addr needs the example built with `--features prometheus`",
    ))
}
