//! Command line of the comparison:
//!
//! ```text
//! kube-informer-compare generate --objects N --updates U [--delete-percent 10] [--seed 1] --out FILE
//! kube-informer-compare run RUNNER --workload FILE --subscribers S [--slow] [--timeout-secs 900]
//! kube-informer-compare apiserver --kubeconfig FILE [--objects 2000] [--subscribers 4] [--timeout-secs 300]
//! ```
//!
//! RUNNER is `floor`, `kube-runtime`, `ours` or `ours-coalesce` (the slow
//! subscriber on `Lag::Coalesce`). `run` prints one JSON line.
//! Exit status: 0 on success, 1 on a failed run, 2 on bad arguments,
//! 3 when the runner is not built (runner (a) without the `ours` feature).

use kube_informer_compare::{
    drive::{self, Options, Runner},
    generate::{self, Spec},
    runners::{floor::Floor, kube_runtime::KubeRuntime},
};
use std::{collections::HashMap, io::BufWriter, path::PathBuf, process::ExitCode, time::Duration};

const USAGE: &str = "usage:
  kube-informer-compare generate --objects N --updates U [--delete-percent 10] [--seed 1] --out FILE
  kube-informer-compare run (floor|kube-runtime|ours|ours-coalesce) --workload FILE --subscribers S [--slow] [--timeout-secs 900]
  kube-informer-compare apiserver --kubeconfig FILE [--objects 2000] [--subscribers 4] [--timeout-secs 300]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("generate") => generate_command(&args[1..]),
        Some("run") if args.len() >= 2 => run_command(&args[1], &args[2..]),
        Some("apiserver") => apiserver_command(&args[1..]),
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

/// `--name value` pairs and bare `--switch`es.
struct Flags(HashMap<String, Option<String>>);

impl Flags {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut flags = HashMap::new();
        let mut args = args.iter().peekable();
        while let Some(arg) = args.next() {
            let name = arg
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {arg}"))?;
            let value = args.next_if(|next| !next.starts_with("--")).cloned();
            flags.insert(name.to_string(), value);
        }
        Ok(Flags(flags))
    }

    fn text(&self, name: &str) -> Result<&str, String> {
        match self.0.get(name) {
            Some(Some(value)) => Ok(value),
            _ => Err(format!("--{name} VALUE is required")),
        }
    }

    fn number(&self, name: &str, default: Option<usize>) -> Result<usize, String> {
        match (self.0.get(name), default) {
            (None, Some(default)) => Ok(default),
            (None, None) | (Some(None), _) => Err(format!("--{name} NUMBER is required")),
            (Some(Some(value)), _) => value
                .replace('_', "")
                .parse()
                .map_err(|_| format!("--{name} wants a number, got {value}")),
        }
    }

    fn switch(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}
