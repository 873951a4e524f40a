//! A mirror operator on a `Controller`: every ConfigMap labelled
//! `mirror=true` is copied into every namespace labelled
//! `mirror-target=true`, and the copies follow their source: updated when it
//! changes, removed when it is deleted or loses its label, or when a
//! namespace loses its target label.
//!
//! ```sh
//! cargo run --features shard --example operator            # the cluster of your KUBECONFIG; Ctrl-C stops
//! cargo run --features shard --example operator -- --fake  # an in-process fake API server, no cluster
//! # one of several replicas sharing the sources through Leases:
//! cargo run --features shard --example operator -- --shard mirror --identity "$POD_NAME" --lease-namespace operators
//! # no periodic resync (default: every 300 s): copies follow events and relists alone
//! cargo run --features shard --example operator -- --resync 0
//! ```
//!
//! - `mirror.rs`: what a source's copies should be, and the writes that make
//!   them so (the reconciler);
//! - `controller.rs`: three informers and the controller they trigger, and
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
//!
//! With `RUST_LOG` set (e.g. `RUST_LOG=warn,kube_informer=info`) the
//! crate's log lines go to stderr: the informers' list/watch errors are
//! reported there (and in the metrics), not by the reconciles' error lines.
//! Without it nothing is logged but those lines.

mod controller;
mod demo;
#[cfg(feature = "prometheus")]
mod metrics_http;
mod mirror;
mod sharding;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube_informer::metrics::{ControllerMetrics, MetricsReader};
use kube_informer::{controller::Config, informer::Defaults, prelude::*};
use kube_informer_testing::FakeApiServer;

use controller::{Informers, Operator};
use mirror::{Labels, Mirror, MirrorError};
use sharding::{ReconcileLog, ShardArgs};

/// Reconciles at most this many sources at once.
const CONCURRENCY: usize = 4;
/// How often every source and every copy's source is reconciled again,
/// unless `--resync SECONDS` says otherwise (0: never).
const RESYNC: Duration = Duration::from_secs(300);

/// What the command line asks for.
#[derive(Debug)]
struct Args {
    fake: bool,
    metrics_addr: Option<SocketAddr>,
    shard: Option<ShardArgs>,
    resync: Duration,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            fake: false,
            metrics_addr: None,
            shard: None,
            resync: RESYNC,
        }
    }
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
            // Off, a soak shows whether events alone keep the copies right.
            "--resync" => {
                let value = words.next().ok_or("--resync needs a number of seconds")?;
                let seconds = value
                    .parse()
                    .map_err(|e| format!("--resync {value:?}: {e}"))?;
                args.resync = Duration::from_secs(seconds);
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

/// Sends the crate's log lines to stderr when `RUST_LOG` asks for them.
fn init_logging() {
    use std::io::IsTerminal;
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else {
        return;
    };
    // stderr, as the reconciles' errors: stdout is the sharded mode's record.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    init_logging();
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
    let labels = Labels::default();
    if let Some(server) = &server {
        // Left from "before": an orphan the start-up sweep must remove.
        demo::before_start(server, &labels)?;
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

    let operator = Operator::start(
        client.clone(),
        labels.clone(),
        args.resync,
        Defaults::default(),
    )
    .await?;
    let stop = CancellationToken::new();
    let gate = shard.as_ref().map(|(shard, _)| shard.gate());
    let log = args.shard.as_ref().map(|s| ReconcileLog::new(&s.identity));
    let mut controller = operator
        .controller
        .with_config(Config {
            concurrency: CONCURRENCY,
            ..Default::default()
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    if let (Some(gate), Some(shard_args)) = (&gate, &args.shard) {
        // Only keys this replica owns; stdout records the work.
        controller = controller.shard(gate.clone());
        sharding::report_owned(
            shard_args.identity.clone(),
            gate.clone(),
            controller.store(),
        );
    }
    // The metrics endpoint, off unless `--metrics-addr` is given.
    let metrics_server = match args.metrics_addr {
        Some(addr) => {
            Some(serve_metrics(addr, &operator.informers, &controller, gate, &stop).await?)
        }
        None => None,
    };
    let reconciles = MetricsReader::<ControllerMetrics>::from(&controller);
    let outcomes = controller.run_by_key(
        reconcile,
        |_, _, _| Action::backoff(),
        Arc::new((operator.mirror, log)),
    );
    let runner = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut outcomes = std::pin::pin!(outcomes);
            let mut fatal = None;
            while let Some(outcome) = outcomes.next().await {
                match outcome {
                    // The controller could not start; its stream ends.
                    Err(error) if error.key().is_none() => fatal = Some(error.to_string()),
                    Err(error) => eprintln!("{error}; retrying"),
                    Ok(_) => {}
                }
            }
            // However it ended, there is nothing left to wait for.
            stop.cancel();
            fatal
        }
    });

    let result = match &server {
        Some(server) => {
            let result = demo::run(server, &client, &labels).await;
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
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = stop.cancelled() => {}
            }
            stop.cancel();
            Ok(())
        }
    };
    let fatal = runner.await?;
    if let Some((shard, membership)) = shard {
        // Leave the ring: hand the keys over and delete the Lease.
        shard.stop();
        membership.await??;
    }
    if let Some(server) = metrics_server {
        server.await??;
    }
    let (sources, copies, namespaces) = &operator.informers;
    let list_watch_errors =
        sources.metrics().errors + copies.metrics().errors + namespaces.metrics().errors;
    operator.factory.shutdown().await;
    let counts = reconciles.read().map(|m| m.reconciles).unwrap_or_default();
    let summary = format!(
        "stopped after {} reconciles ({} failed and retried), {list_watch_errors} list/watch errors",
        counts.total() - counts.error,
        counts.error
    );
    match args.shard {
        None => println!("{summary}"),
        Some(_) => eprintln!("{summary}"),
    }
    if let Some(error) = fatal {
        // The controller never ran: say why, and fail.
        eprintln!("operator: {error}");
        std::process::exit(1);
    }
    result
}

/// One reconcile: the mirror's, recorded on stdout when sharded.
async fn reconcile(
    key: ObjectKey,
    source: Option<Observed<ConfigMap>>,
    ctx: Arc<(Mirror, Option<ReconcileLog>)>,
) -> Result<Action, MirrorError> {
    let (mirror, log) = &*ctx;
    ReconcileLog::around(
        log.as_ref(),
        &key,
        source.as_ref(),
        mirror.reconcile(&key, source.clone()),
    )
    .await
}

/// Serves the informers', the queue's and the controller's metrics on
/// `addr` until `stop`, and the shard's (`kube_informer_shard_*`) when
/// sharded.
#[cfg(feature = "prometheus")]
async fn serve_metrics(
    addr: SocketAddr,
    informers: &Informers,
    controller: &Controller<ConfigMap>,
    gate: Option<kube_informer::shard::KeyGate>,
    stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let registry = controller::metrics_registry(informers, controller, gate);
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
    _informers: &Informers,
    _controller: &Controller<ConfigMap>,
    _gate: Option<kube_informer::shard::KeyGate>,
    _stop: &CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    Err(std::io::Error::other(
        "--metrics-addr needs the example built with `--features prometheus`",
    ))
}
