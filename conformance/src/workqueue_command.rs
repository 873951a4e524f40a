//! `conformance workqueue`: work queue traces through client-go's
//! `TypedRateLimitingQueue` (the Go `workqueue-trace` harness) and through our
//! `WorkQueue` ([`workqueue_runner`]), compared line by line.

use std::path::{Path, PathBuf};

use kube_informer_conformance::{
    compare::compare, corpus, go_runner::GoHarness, workqueue_generate, workqueue_runner,
    workqueue_trace::WqTrace,
};
use serde_json::Value;

use super::{Args, default_go_dir, print_lines, time_seed};

/// The named work queue traces in this source tree.
pub(crate) fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workqueue-traces")
}

/// Runs the named corpus (checked against its recordings, or recorded with
/// `--record`) and `--random N` generated traces; `--seed S --trace N` shows
/// one generated trace with both outputs (`--print-trace`: only the trace).
pub(crate) fn run_workqueue(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let seed = args.seed.unwrap_or_else(time_seed);
    if let (Some(index), true) = (args.trace, args.print_trace) {
        print!("{}", workqueue_generate::trace(seed, index).to_jsonl());
        return Ok(true);
    }
    let dir = args.corpus.clone().unwrap_or_else(default_dir);
    let go_dir = args.go_dir.clone().unwrap_or_else(default_go_dir);
    let mut go = GoHarness::start(&go_dir.join("workqueue-trace"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut check = |trace: &WqTrace, rerun: &str, verbose: bool, recorded: Option<&[Value]>| {
        let go_out = go.run_text(&trace.to_jsonl())?;
        let mut ok = true;
        if let Some(d) = recorded.and_then(|r| compare(r, &go_out)) {
            println!(
                "FAIL {}: the recorded client-go output is stale (rerun with --record)",
                trace.header.workqueue
            );
            println!("{}", d.labelled("recorded", "live"));
            ok = false;
        }
        let rust_out = workqueue_runner::run(trace);
        let difference = compare(&go_out, &rust_out);
        if difference.is_some() || verbose {
            let verdict = if difference.is_some() { "FAIL" } else { "ok" };
            println!("{verdict} {}", trace.header.workqueue);
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
        ok &= difference.is_none();
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
        Ok::<_, Box<dyn std::error::Error>>(go_out)
    };

    if let Some(index) = args.trace {
        println!("seed: {seed}");
        let trace = workqueue_generate::trace(seed, index);
        check(&trace, &rerun_random(seed, index), true, None)?;
    } else {
        if !args.no_corpus {
            for file in corpus::load_texts(&dir)? {
                if args.only.as_ref().is_some_and(|o| *o != file.name) {
                    continue;
                }
                let mut trace = WqTrace::parse(&file.text)
                    .map_err(|e| format!("{}: {e}", file.path.display()))?;
                trace.header.workqueue = file.name.clone();
                let recorded = if args.record {
                    None
                } else {
                    corpus::load_recording(&dir, &file.name)?
                };
                let rerun = format!(
                    "cargo run -p kube-informer-conformance -- workqueue --only {}",
                    file.name
                );
                let go_out = check(&trace, &rerun, args.only.is_some(), recorded.as_deref())?;
                if args.record {
                    corpus::save_recording(&dir, &file.name, &go_out)?;
                }
            }
        }
        if args.random > 0 {
            println!("seed: {seed} (client-go v0.34.13 workqueue)");
            for index in 0..args.random {
                let trace = workqueue_generate::trace(seed, index);
                check(&trace, &rerun_random(seed, index), false, None)?;
            }
        }
    }
    if args.trace.is_none() && !args.no_corpus {
        let (ok, bad) = run_backoff_holds(&mut go, &dir.join("backoff-holds"), &args)?;
        passed += ok;
        failed += bad;
    }
    println!("workqueue conformance: {passed} passed, {failed} failed");
    Ok(failed == 0)
}

/// The traces of W13 (`backoff_holds`), which differ from client-go on
/// purpose: our output must equal the written expectation in `expected/`,
/// client-go's must equal its recording in `client-go/expected/` (recorded
/// with `--record`), and the two must differ, or the trace shows nothing.
fn run_backoff_holds(
    go: &mut GoHarness,
    dir: &Path,
    args: &Args,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let (mut passed, mut failed) = (0u64, 0u64);
    let client_go_dir = dir.join("client-go");
    for file in corpus::load_texts(dir)? {
        if args.only.as_ref().is_some_and(|o| *o != file.name) {
            continue;
        }
        let trace =
            WqTrace::parse(&file.text).map_err(|e| format!("{}: {e}", file.path.display()))?;
        let go_out = go.run_text(&trace.to_jsonl())?;
        let mut problems = Vec::new();
        if args.record {
            corpus::save_recording(&client_go_dir, &file.name, &go_out)?;
        } else {
            match corpus::load_recording(&client_go_dir, &file.name)? {
                Some(recorded) => {
                    if let Some(d) = compare(&recorded, &go_out) {
                        problems.push(format!(
                            "the recorded client-go output is stale (rerun with --record)\n{}",
                            d.labelled("recorded", "live")
                        ));
                    }
                }
                None => problems.push("no client-go recording (rerun with --record)".into()),
            }
        }
        let expected = corpus::load_recording(dir, &file.name)?
            .ok_or_else(|| format!("{}: no written expectation", file.path.display()))?;
        let rust_out = workqueue_runner::run(&trace);
        if let Some(d) = compare(&expected, &rust_out) {
            problems.push(d.labelled("expected", "kube-informer"));
        }
        if compare(&go_out, &rust_out).is_none() {
            problems.push("client-go gives the same output: the trace shows no difference".into());
        }
        if problems.is_empty() {
            passed += 1;
            if args.only.is_some() {
                println!("ok {} (W13, differs from client-go as written)", file.name);
                print_lines("client-go output", &go_out);
                print_lines("kube-informer output", &rust_out);
            }
        } else {
            failed += 1;
            println!("FAIL {} (W13)", file.name);
            for problem in problems {
                println!("  {problem}");
            }
        }
    }
    Ok((passed, failed))
}

fn rerun_random(seed: u64, index: u64) -> String {
    format!("cargo run -p kube-informer-conformance -- workqueue --seed {seed} --trace {index}")
}
