//! `conformance`: runs DeltaFifo traces through kube-informer and client-go
//! and fails on the first line where they disagree.
//!
//! ```text
//! conformance fifo [--random N] [--seed S] [--trace N] [--only NAME]
//!                  [--corpus DIR] [--no-corpus] [--go-dir DIR] [--print-trace]
//!                  [--record] [--client-go v034|v036]
//! conformance informer [--random N] [--seed S] [--trace N] [--only NAME]
//!                      [--corpus DIR] [--no-corpus] [--go-dir DIR] [--print-trace]
//!                      [--repeat N] [--record] [--client-go v034|v036]
//! conformance workqueue [--random N] [--seed S] [--trace N] [--only NAME]
//!                       [--corpus DIR] [--no-corpus] [--go-dir DIR] [--print-trace] [--record]
//! ```
//!
//! `--seed S --trace N` reruns random trace N of seed S alone and prints it
//! with both outputs; `--print-trace` prints only the trace (to save it in
//! the corpus). `--client-go v036` compares with client-go v0.36.6 instead
//! of the default v0.34.13 (requeue traces always use v0.32.13). `--record` saves client-go's output of each corpus trace
//! under `traces/expected/`, which `cargo test` compares kube-informer with
//! on machines without Go; a normal run fails when a recording no longer
//! matches client-go. The Go harness binaries (`fifo-trace-v034`,
//! `fifo-trace-v036`, `fifo-trace-v032`, `informer-trace`,
//! `informer-trace-v036`) are looked up in `--go-dir`, `$CONFORMANCE_GO_DIR`, or
//! `target/conformance/` of this workspace (`scripts/suites/conformance.sh`
//! builds them there).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::{SystemTime, UNIX_EPOCH},
};

use kube_informer_conformance::{
    compare::compare,
    corpus,
    coverage::{Coverage, EDGE_CASES},
    generate,
    go_runner::{GoError, GoHarness},
    rust_runner,
    trace::Trace,
};
use serde_json::Value;

const USAGE: &str = "usage: conformance fifo [--random N] [--seed S] [--trace N] [--only NAME] \
[--corpus DIR] [--no-corpus] [--go-dir DIR] [--print-trace] [--record] [--client-go v034|v036]
       conformance informer [--random N] [--seed S] [--trace N] [--only NAME] [--corpus DIR] \
[--no-corpus] [--go-dir DIR] [--print-trace] [--repeat N] [--record] [--client-go v034|v036]
       conformance workqueue [--random N] [--seed S] [--trace N] [--only NAME] [--corpus DIR] \
[--no-corpus] [--go-dir DIR] [--print-trace] [--record]";

#[derive(Debug, Default)]
struct Args {
    informer: bool,
    workqueue: bool,
    client_go: String,
    repeat: Option<u64>,
    random: u64,
    seed: Option<u64>,
    trace: Option<u64>,
    only: Option<String>,
    corpus: Option<PathBuf>,
    no_corpus: bool,
    go_dir: Option<PathBuf>,
    print_trace: bool,
    record: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        client_go: CLIENT_GO[0].0.to_owned(),
        ..Args::default()
    };
    match args.next().as_deref() {
        Some("fifo") => {}
        Some("informer") => parsed.informer = true,
        Some("workqueue") => parsed.workqueue = true,
        _ => return Err(USAGE.to_owned()),
    }
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        let number = |s: String| s.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--random" => parsed.random = number(value()?)?,
            "--seed" => parsed.seed = Some(number(value()?)?),
            "--trace" => parsed.trace = Some(number(value()?)?),
            "--repeat" => parsed.repeat = Some(number(value()?)?),
            "--client-go" => {
                parsed.client_go = value()?;
                if !CLIENT_GO.iter().any(|(t, _)| *t == parsed.client_go) {
                    return Err(format!("--client-go must be one of {CLIENT_GO:?}"));
                }
            }
            "--only" => parsed.only = Some(value()?),
            "--corpus" => parsed.corpus = Some(value()?.into()),
            "--go-dir" => parsed.go_dir = Some(value()?.into()),
            "--no-corpus" => parsed.no_corpus = true,
            "--print-trace" => parsed.print_trace = true,
            "--record" => parsed.record = true,
            _ => return Err(format!("unknown argument {flag}\n{USAGE}")),
        }
    }
    if parsed.trace.is_some() && parsed.seed.is_none() {
        return Err("--trace N needs --seed S".to_owned());
    }
    Ok(parsed)
}

/// The client-go builds of the Go harnesses, by `--client-go` tag.
const CLIENT_GO: &[(&str, &str)] = &[
    ("v034", "client-go v0.34.13"),
    ("v036", "client-go v0.36.6"),
];
/// Requeue traces need client-go's AddIfNotPresent, gone after v0.32.
const REQUEUE_CLIENT_GO: &str = "client-go v0.32.13";

fn client_go_label(tag: &str) -> &str {
    CLIENT_GO
        .iter()
        .find(|(t, _)| *t == tag)
        .map_or(tag, |(_, label)| label)
}

/// The two Go harness processes: the chosen client-go, and v0.32 for
/// requeue traces.
struct Harnesses {
    dir: PathBuf,
    tag: String,
    current: Option<GoHarness>,
    v032: Option<GoHarness>,
}

impl Harnesses {
    fn run(&mut self, trace: &Trace) -> Result<Vec<Value>, GoError> {
        let (slot, file) = if trace.uses_requeue() {
            (&mut self.v032, "fifo-trace-v032".to_owned())
        } else {
            (&mut self.current, format!("fifo-trace-{}", self.tag))
        };
        if slot.is_none() {
            *slot = Some(GoHarness::start(&self.dir.join(file))?);
        }
        let result = slot.as_mut().expect("started above").run(trace);
        if result.is_err() {
            // A dead process is restarted for the next trace.
            *slot = None;
        }
        result
    }
}

fn default_go_dir() -> PathBuf {
    std::env::var_os("CONFORMANCE_GO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance"))
}

fn print_lines(label: &str, lines: &[Value]) {
    println!("  {label}:");
    for line in lines {
        println!("    {line}");
    }
}

/// Runs one trace both ways; true when they agree. `verbose` prints the
/// outputs even when they agree.
fn check(
    go: &mut Harnesses,
    coverage: &mut Coverage,
    trace: &Trace,
    rerun: &str,
    verbose: bool,
    recorded: Option<&[Value]>,
) -> Result<(bool, Vec<Value>), GoError> {
    let go_out = go.run(trace)?;
    if let Some(recorded) = recorded
        && let Some(d) = compare(recorded, &go_out)
    {
        println!(
            "FAIL {}: the recorded client-go output is stale (rerun with --record)",
            trace.header.trace
        );
        println!("{}", d.labelled("recorded", "live"));
        return Ok((false, go_out));
    }
    let rust_out = rust_runner::run_with_coverage(trace, coverage);
    let difference = compare(&go_out, &rust_out);
    if difference.is_some() || verbose {
        let verdict = if difference.is_some() { "FAIL" } else { "ok" };
        println!(
            "{verdict} {} ({})",
            trace.header.trace,
            trace_versions(go, trace)
        );
        println!("  trace:");
        for line in trace.to_jsonl().lines() {
            println!("    {line}");
        }
        print_lines("client-go output", &go_out);
        print_lines("kube-informer output", &rust_out);
        if let Some(d) = &difference {
            println!("{d}");
            println!("  rerun: {rerun}");
        }
    }
    Ok((difference.is_none(), go_out))
}

fn trace_versions<'a>(go: &'a Harnesses, trace: &Trace) -> &'a str {
    if trace.uses_requeue() {
        REQUEUE_CLIENT_GO
    } else {
        client_go_label(&go.tag)
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let result = if args.informer {
        informer_command::run_informer(args)
    } else if args.workqueue {
        workqueue_command::run_workqueue(args)
    } else {
        run(args)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let seed = args.seed.unwrap_or_else(time_seed);

    if let (Some(index), true) = (args.trace, args.print_trace) {
        print!("{}", generate::trace(seed, index).to_jsonl());
        return Ok(true);
    }

    let mut go = Harnesses {
        dir: args.go_dir.clone().unwrap_or_else(default_go_dir),
        tag: args.client_go.clone(),
        current: None,
        v032: None,
    };
    let mut coverage = Coverage::new();
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut tally = |ok: bool| if ok { passed += 1 } else { failed += 1 };

    if let Some(index) = args.trace {
        println!("seed: {seed}");
        let trace = generate::trace(seed, index);
        let rerun = rerun_random(seed, index, &args.client_go);
        tally(check(&mut go, &mut coverage, &trace, &rerun, true, None)?.0);
    } else {
        if !args.no_corpus {
            let dir = args.corpus.clone().unwrap_or_else(corpus::default_dir);
            for trace in corpus::load(&dir)? {
                if args.only.as_ref().is_some_and(|o| *o != trace.header.trace) {
                    continue;
                }
                let rerun = format!(
                    "cargo run -p kube-informer-conformance -- fifo --only {} --client-go {}",
                    trace.header.trace, args.client_go
                );
                let verbose = args.only.is_some();
                let name = trace.header.trace.clone();
                let recorded = if args.record {
                    None
                } else {
                    corpus::load_recording(&dir, &name)?
                };
                let (ok, go_out) = check(
                    &mut go,
                    &mut coverage,
                    &trace,
                    &rerun,
                    verbose,
                    recorded.as_deref(),
                )?;
                if args.record {
                    corpus::save_recording(&dir, &name, &go_out)?;
                }
                tally(ok);
            }
        }
        if args.random > 0 {
            println!("seed: {seed} ({})", client_go_label(&go.tag));
            for index in 0..args.random {
                let trace = generate::trace(seed, index);
                let rerun = rerun_random(seed, index, &args.client_go);
                tally(check(&mut go, &mut coverage, &trace, &rerun, false, None)?.0);
            }
        }
    }
    let missing: Vec<_> = EDGE_CASES
        .iter()
        .filter(|c| !coverage.contains_key(*c))
        .collect();
    println!(
        "coverage: {} of {} edge cases reached{}",
        EDGE_CASES.len() - missing.len(),
        EDGE_CASES.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (missing: {missing:?})")
        }
    );
    println!("conformance: {passed} passed, {failed} failed");
    Ok(failed == 0)
}

fn time_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn rerun_random(seed: u64, index: u64, client_go: &str) -> String {
    format!(
        "cargo run -p kube-informer-conformance -- fifo --seed {seed} --trace {index} --client-go {client_go}"
    )
}

mod informer_command;
mod workqueue_command;
