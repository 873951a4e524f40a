//! Command line of the comparison:
//!
//! ```text
//! kube-informer-compare generate --objects N --updates U [--delete-percent 10] [--seed 1] --out FILE
//! kube-informer-compare run RUNNER --workload FILE --subscribers S [--slow] [--timeout-secs 900]
//! kube-informer-compare apiserver --kubeconfig FILE [--objects 2000] [--subscribers 4] [--timeout-secs 300]
//! kube-informer-compare serve --objects N [--seed 1] [--port 0] [--address-file FILE] [--chunking backlog|event|rate=N] [--protobuf-encoder GO_RUNNER] [--metadata]
//! kube-informer-compare wire (ours|ours-protobuf|ours-projection|ours-compact|ours-projection-compact|kube-runtime|floor|transport) --server URL --subscribers S [--strip] [--relist] [--timeout-secs 900]
//! kube-informer-compare live-writer create --kubeconfig F [--namespace compare-live] --objects N
//! kube-informer-compare live-writer update --kubeconfig F [--namespace compare-live] --objects N --updates U --rate R [--from 0] [--in-flight 32]
//! kube-informer-compare live-writer delete --kubeconfig F [--namespace compare-live] [--timeout-secs 120]
//! kube-informer-compare live (ours|kube-runtime) --kubeconfig F --objects N --updates U [--subscribers 1] [--timeout-secs 900]
//! ```
//!
//! `serve` generates the wire workload (N Pods, U = 2N modifications, D = N/10
//! deletes), then serves it on 127.0.0.1 until killed; it prints its address
//! (and writes it to `--address-file`) once listening. With
//! `--protobuf-encoder` (the Go runner binary, which encodes the Pods with
//! k8s.io/api's own encoder) it also answers in Kubernetes' protobuf, Pods and
//! metadata only; with `--metadata` it also answers metadata-only JSON. Both
//! are prepared before it listens. `wire` runs one wire measurement against
//! it and prints one JSON line.
//!
//! `live-writer` and `live` are the live mode against a real kube-apiserver
//! (see `live.sh` and the `live` module): the writer creates N Pods, updates
//! them at R per second, or deletes them, and prints one JSON line; each
//! `live` runner prints `READY` once synced and one JSON line once it has
//! seen the U updates.
//!
//! RUNNER is `floor`, `kube-runtime`, `ours` or `ours-coalesce` (the slow
//! subscriber on `Lag::Coalesce`). `run` prints one JSON line.
//! Exit status: 0 on success, 1 on a failed run, 2 on bad arguments,
//! 3 when the runner is not built (runner (a) without the `ours` feature).

use kube_informer_compare::{
    drive::{self, Options, Runner},
    flags::Flags,
    generate::{self, Spec},
    runners::{floor::Floor, kube_runtime::KubeRuntime},
};
use std::{io::BufWriter, path::PathBuf, process::ExitCode, time::Duration};

const USAGE: &str = "usage:
  kube-informer-compare generate --objects N --updates U [--delete-percent 10] [--seed 1] --out FILE
  kube-informer-compare run (floor|kube-runtime|ours|ours-coalesce) --workload FILE --subscribers S [--slow] [--timeout-secs 900]
  kube-informer-compare apiserver --kubeconfig FILE [--objects 2000] [--subscribers 4] [--timeout-secs 300]
  kube-informer-compare serve --objects N [--seed 1] [--port 0] [--address-file FILE] [--chunking backlog|event|rate=N] [--protobuf-encoder GO_RUNNER] [--metadata]
  kube-informer-compare wire (ours|ours-protobuf|ours-projection|ours-compact|ours-projection-compact|kube-runtime|floor|transport) --server URL --subscribers S [--strip] [--relist] [--timeout-secs 900]
  kube-informer-compare live-writer create --kubeconfig F [--namespace compare-live] --objects N
  kube-informer-compare live-writer update --kubeconfig F [--namespace compare-live] --objects N --updates U --rate R [--from 0] [--in-flight 32]
  kube-informer-compare live-writer delete --kubeconfig F [--namespace compare-live] [--timeout-secs 120]
  kube-informer-compare live (ours|kube-runtime) --kubeconfig F --objects N --updates U [--subscribers 1] [--timeout-secs 900]";

#[cfg(compare_allocator = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(compare_allocator = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("generate") => generate_command(&args[1..]),
        Some("run") if args.len() >= 2 => run_command(&args[1], &args[2..]),
        Some("apiserver") => apiserver_command(&args[1..]),
        Some("serve") => serve_command(&args[1..]),
        Some("wire") if args.len() >= 2 => wire_command(&args[1], &args[2..]),
        Some("live-writer") if args.len() >= 2 => live_writer_command(&args[1], &args[2..]),
        Some("live") if args.len() >= 2 => live_command(&args[1], &args[2..]),
        _ => usage_error("missing command"),
    }
}

fn generate_command(args: &[String]) -> ExitCode {
    let flags = match Flags::parse(args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let spec = (|| -> Result<(Spec, PathBuf), String> {
        Ok((
            Spec {
                objects: flags.number("objects", None)?,
                updates: flags.number("updates", None)?,
                delete_percent: flags.number("delete-percent", Some(10))?,
                seed: flags.number("seed", Some(1))? as u64,
            },
            PathBuf::from(flags.text("out")?),
        ))
    })();
    let (spec, out) = match spec {
        Ok(parsed) => parsed,
        Err(message) => return usage_error(&message),
    };
    let written = std::fs::File::create(&out)
        .and_then(|file| generate::write_workload(spec, &mut BufWriter::new(file)));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cannot write {}: {error}", out.display());
            ExitCode::FAILURE
        }
    }
}

fn run_command(runner: &str, args: &[String]) -> ExitCode {
    let flags = match Flags::parse(args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let options = (|| -> Result<Options, String> {
        Ok(Options {
            workload: PathBuf::from(flags.text("workload")?),
            subscribers: flags.number("subscribers", None)?,
            slow: flags.switch("slow"),
            timeout: Duration::from_secs(flags.number("timeout-secs", Some(900))? as u64),
        })
    })();
    let options = match options {
        Ok(options) => options,
        Err(message) => return usage_error(&message),
    };
    match runner {
        "floor" => measure::<Floor>(&options),
        "kube-runtime" => measure::<KubeRuntime>(&options),
        "ours" => ours(&options, false),
        "ours-coalesce" => ours(&options, true),
        other => usage_error(&format!("unknown runner {other}")),
    }
}

/// Runner (a) exists only when built with `--features ours`.
#[cfg(feature = "ours")]
fn ours(options: &Options, coalesce: bool) -> ExitCode {
    use kube_informer_compare::runners::ours::{Ours, OursCoalesce};
    if coalesce {
        measure::<OursCoalesce>(options)
    } else {
        measure::<Ours>(options)
    }
}

#[cfg(not(feature = "ours"))]
fn ours(_options: &Options, _coalesce: bool) -> ExitCode {
    eprintln!("runner (a) skipped: built without the `ours` feature");
    ExitCode::from(3)
}

#[cfg(feature = "ours")]
fn apiserver_command(args: &[String]) -> ExitCode {
    use kube_informer_compare::apiserver::{ApiserverOptions, measure};
    let flags = match Flags::parse(args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let options = (|| -> Result<ApiserverOptions, String> {
        Ok(ApiserverOptions {
            kubeconfig: PathBuf::from(flags.text("kubeconfig")?),
            objects: flags.number("objects", Some(2000))?,
            subscribers: flags.number("subscribers", Some(4))?,
            timeout: Duration::from_secs(flags.number("timeout-secs", Some(300))? as u64),
        })
    })();
    let options = match options {
        Ok(options) => options,
        Err(message) => return usage_error(&message),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(measure(&options)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("apiserver run failed: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(feature = "ours"))]
fn apiserver_command(_args: &[String]) -> ExitCode {
    eprintln!("the apiserver command needs the `ours` feature");
    ExitCode::from(3)
}

fn serve_command(args: &[String]) -> ExitCode {
    use kube_informer_compare::wire::{
        pods::{WireSpec, WireWorkload},
        server::{
            Chunking, Encodings, WireServer, metadata::MetadataWorkload, protobuf::ProtobufWorkload,
        },
    };
    let flags = match Flags::parse(args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let parsed = (|| -> Result<(WireSpec, u16, Option<PathBuf>, Chunking), String> {
        let spec = WireSpec::standard(
            flags.number("objects", None)?,
            flags.number("seed", Some(1))? as u64,
        );
        let port = u16::try_from(flags.number("port", Some(0))?)
            .map_err(|_| "--port wants a port number".to_string())?;
        let address_file = flags.text("address-file").ok().map(PathBuf::from);
        let chunking = match flags.text("chunking") {
            Ok(text) => Chunking::parse(text)?,
            Err(_) => Chunking::Backlog,
        };
        Ok((spec, port, address_file, chunking))
    })();
    let (spec, port, address_file, chunking) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return usage_error(&message),
    };
    let workload = WireWorkload::generate(spec);
    let mut encodings = Encodings::default();
    if let Ok(encoder) = flags.text("protobuf-encoder") {
        match ProtobufWorkload::encode_with(
            encoder.as_ref(),
            &workload.items,
            &workload.event_types,
            &workload.event_objects,
        ) {
            Ok(protobuf) => encodings.protobuf = Some(protobuf),
            Err(message) => {
                eprintln!("cannot encode the Pods in protobuf: {message}");
                return ExitCode::FAILURE;
            }
        }
    }
    if flags.switch("metadata") {
        match MetadataWorkload::from_json(
            &workload.items,
            &workload.event_types,
            &workload.event_objects,
        ) {
            Ok(metadata) => encodings.metadata = Some(metadata),
            Err(error) => {
                eprintln!("cannot reduce the Pods to their metadata: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!(
        "serving {} Pods (mean {:.0} bytes of JSON{}), {} watch events{}",
        workload.items.len(),
        workload.mean_item_bytes(),
        encodings
            .protobuf
            .as_ref()
            .map_or(String::new(), |protobuf| format!(
                ", {:.0} of protobuf",
                protobuf.mean_item_bytes
            )),
        workload.events.len(),
        if encodings.metadata.is_some() {
            ", metadata-only JSON too"
        } else {
            ""
        }
    );
    // One thread: the server takes at most one core from the runner.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let (address, serving) = match WireServer::with_encodings(workload, chunking, encodings)
            .bind(port)
            .await
        {
            Ok(bound) => bound,
            Err(error) => {
                eprintln!("cannot listen on 127.0.0.1:{port}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let url = format!("http://{address}");
        if let Some(path) = address_file
            && let Err(error) = std::fs::write(&path, &url)
        {
            eprintln!("cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("{url}");
        serving.await;
        ExitCode::SUCCESS
    })
}

fn wire_command(runner: &str, args: &[String]) -> ExitCode {
    use kube_informer_compare::wire::drive::WireOptions;
    let flags = match Flags::parse(args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let options = (|| -> Result<WireOptions, String> {
        Ok(WireOptions {
            server: flags.text("server")?.to_string(),
            subscribers: flags.number("subscribers", None)?,
            strip: flags.switch("strip"),
            relist: flags.switch("relist"),
            timeout: Duration::from_secs(flags.number("timeout-secs", Some(900))? as u64),
        })
    })();
    let options = match options {
        Ok(options) if options.subscribers > 0 => options,
        Ok(_) => return usage_error("--subscribers must be at least 1"),
        Err(message) => return usage_error(&message),
    };
    with_runner(runner, &options)
}

/// A measurement that runs with any wire runner: the wire burst or the
/// live steady rate.
trait Measurement {
    /// Its name in messages.
    const WHAT: &'static str;
    /// Runs it with runner `R` and prints its report.
    fn run<R: kube_informer_compare::wire::drive::WireRunner>(&self) -> ExitCode;
}

impl Measurement for kube_informer_compare::wire::drive::WireOptions {
    const WHAT: &'static str = "wire";
    fn run<R: kube_informer_compare::wire::drive::WireRunner>(&self) -> ExitCode {
        run_and_print(
            R::NAME,
            Self::WHAT,
            kube_informer_compare::wire::drive::drive::<R>(self),
        )
    }
}

impl Measurement for kube_informer_compare::live::runner::LiveOptions {
    const WHAT: &'static str = "live";
    fn run<R: kube_informer_compare::wire::drive::WireRunner>(&self) -> ExitCode {
        run_and_print(
            R::NAME,
            Self::WHAT,
            kube_informer_compare::live::runner::run::<R>(self),
        )
    }
}

/// Runs `measurement` with the runner named `runner`.
fn with_runner<M: Measurement>(runner: &str, measurement: &M) -> ExitCode {
    match runner {
        "kube-runtime" => {
            measurement.run::<kube_informer_compare::wire::kube_runtime::KubeRuntimeWire>()
        }
        "floor" => measurement.run::<kube_informer_compare::wire::floor::FloorWire>(),
        "transport" => measurement.run::<kube_informer_compare::wire::floor::TransportWire>(),
        "ours" => with_ours(measurement, false),
        "ours-protobuf" => with_ours_protobuf(measurement),
        "ours-projection" => with_ours(measurement, true),
        "ours-compact" => with_ours_compact(measurement, false),
        "ours-projection-compact" => with_ours_compact(measurement, true),
        other => usage_error(&format!("unknown {} runner {other}", M::WHAT)),
    }
}

/// kube-informer caching full Pods, or a projection of them.
#[cfg(feature = "ours")]
fn with_ours<M: Measurement>(measurement: &M, projection: bool) -> ExitCode {
    if projection {
        measurement.run::<kube_informer_compare::wire::ours_projection::OursProjectionWire>()
    } else {
        measurement.run::<kube_informer_compare::wire::ours::OursWire>()
    }
}

/// kube-informer caching full Pods, asking for protobuf.
#[cfg(feature = "ours")]
fn with_ours_protobuf<M: Measurement>(measurement: &M) -> ExitCode {
    measurement.run::<kube_informer_compare::wire::ours::OursProtobufWire>()
}

#[cfg(not(feature = "ours"))]
fn with_ours_protobuf<M: Measurement>(_measurement: &M) -> ExitCode {
    eprintln!("runner (a) skipped: built without the `ours` feature");
    ExitCode::from(3)
}

/// kube-informer with the compact cache, caching full Pods or a projection.
#[cfg(feature = "ours")]
fn with_ours_compact<M: Measurement>(measurement: &M, projection: bool) -> ExitCode {
    if projection {
        measurement.run::<kube_informer_compare::wire::ours_projection::OursProjectionCompactWire>()
    } else {
        measurement.run::<kube_informer_compare::wire::ours_compact::OursCompactWire>()
    }
}

#[cfg(not(feature = "ours"))]
fn with_ours_compact<M: Measurement>(_measurement: &M, _projection: bool) -> ExitCode {
    eprintln!("runner (a) skipped: built without the `ours` feature");
    ExitCode::from(3)
}

#[cfg(not(feature = "ours"))]
fn with_ours<M: Measurement>(_measurement: &M, _projection: bool) -> ExitCode {
    eprintln!("runner (a) skipped: built without the `ours` feature");
    ExitCode::from(3)
}

/// Runs one measurement on a fresh multi-threaded runtime and prints its
/// report as one JSON line; `name` and `what` say which run failed.
fn run_and_print<T, E>(
    name: &str,
    what: &str,
    run: impl std::future::Future<Output = Result<T, E>>,
) -> ExitCode
where
    T: serde::Serialize,
    E: std::fmt::Display,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run);
    // The informer and its watch are still running: do not wait for them.
    runtime.shutdown_background();
    match result {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string(&report).unwrap_or_else(|_| "{}".into())
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{name} {what} run failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn live_writer_command(step: &str, args: &[String]) -> ExitCode {
    use kube_informer_compare::live::writer::{WriterOptions, write};
    let options = match Flags::parse(args).and_then(|flags| WriterOptions::from_flags(step, &flags))
    {
        Ok(options) => options,
        Err(message) => return usage_error(&message),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(write(&options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("live writer ({step}) failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn live_command(runner: &str, args: &[String]) -> ExitCode {
    use kube_informer_compare::live::runner::LiveOptions;
    let options = match Flags::parse(args).and_then(|flags| LiveOptions::from_flags(&flags)) {
        Ok(options) => options,
        Err(message) => return usage_error(&message),
    };
    with_runner(runner, &options)
}

fn measure<R: Runner>(options: &Options) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(drive::drive::<R>(options));
    // The slow subscriber may still be sleeping: do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(report) => {
            println!("{}", report.to_json());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{} run failed: {error}", R::NAME);
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("{message}\n{USAGE}");
    ExitCode::from(2)
}
