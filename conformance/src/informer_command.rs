//! `conformance informer`: informer scripts through client-go's
//! `sharedIndexInformer` (the Go `informer-trace` harness) and through our
//! `Informer` ([`informer_runner`]), compared line by line.

use std::path::Path;

use kube_informer_conformance::{
    compare::compare, corpus, go_runner::GoHarness, informer_runner, informer_script,
};
use serde_json::Value;

use super::{Args, client_go_label, default_go_dir, print_lines, time_seed};

/// One script to check.
struct Job {
    name: String,
    text: String,
    /// Random scripts have no recording and rerun by seed and index.
    random: Option<(u64, u64)>,
}

/// Each script runs `--repeat` times (default 3) through `informer-trace`:
/// client-go's runs must agree with each other and, for named scripts, with
/// the recording under `informer-traces/expected/`; then the script runs
/// through kube-informer, whose output must equal client-go's. `--random N`
/// adds N generated scripts; `--seed S --trace N` shows one of them with
/// both outputs (`--print-trace`: only the script).
pub(crate) fn run_informer(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let dir = args
        .corpus
        .clone()
        .unwrap_or_else(corpus::default_informer_dir);
    let seed = args.seed.unwrap_or_else(time_seed);
    if let (Some(index), true) = (args.trace, args.print_trace) {
        print!("{}", informer_script::random(seed, index));
        return Ok(true);
    }
    let go_dir = args.go_dir.clone().unwrap_or_else(default_go_dir);
    let binary = match args.client_go.as_str() {
        "v034" => "informer-trace".to_owned(),
        tag => format!("informer-trace-{tag}"),
    };
    let mut go = GoHarness::start(&go_dir.join(binary))?;
    let repeat = args.repeat.unwrap_or(3).max(1);
    let label = client_go_label(&args.client_go).to_owned();
    let backoff = informer_runner::relist_backoff(&args.client_go);
    let (mut passed, mut failed, mut compared) = (0u64, 0u64, 0u64);

    let jobs = jobs(&args, &dir, seed)?;
    if args.random > 0 {
        println!("seed: {seed} ({label})");
    }
    for job in jobs {
        let first = go.run_text(&job.text)?;
        let mut problems = Vec::new();
        if let Some(error) = first.iter().find_map(|l| l.get("harness_error")) {
            problems.push(format!("client-go harness error: {error}"));
        }
        for _ in 1..repeat {
            if let Some(d) = compare(&first, &go.run_text(&job.text)?) {
                problems.push(format!(
                    "client-go runs differ\n{}",
                    d.labelled("first run", "later run")
                ));
                break;
            }
        }
        if job.random.is_none() {
            problems.extend(check_recording(&dir, &job.name, &first, args.record)?);
        }
        let ours = (!informer_runner::client_go_only(&job.text)).then(|| {
            compared += 1;
            informer_runner::run(&job.text, backoff)
        });
        if let Some(ours) = &ours
            && let Some(d) = compare(&first, ours)
        {
            problems.push(format!("kube-informer differs from {label}\n{d}"));
        }
        let verbose = args.only.is_some() || args.trace.is_some();
        if !problems.is_empty() || verbose {
            println!(
                "{} {}",
                if problems.is_empty() { "ok" } else { "FAIL" },
                job.name
            );
            for problem in &problems {
                println!("{problem}");
            }
            println!("  script:");
            for line in job.text.lines() {
                println!("    {line}");
            }
            print_lines(&format!("{label} output"), &first);
            match &ours {
                Some(ours) => print_lines("kube-informer output", ours),
                None => println!("  kube-informer: not run (inOrderInformers is client-go only)"),
            }
            if !problems.is_empty() {
                println!("  rerun: {}", rerun(&job, &args.client_go));
            }
        }
        if problems.is_empty() {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    println!(
        "informer: {label} run {repeat}x per script; {compared} scripts compared with kube-informer"
    );
    println!("conformance informer: {passed} passed, {failed} failed");
    Ok(failed == 0)
}

fn jobs(args: &Args, dir: &Path, seed: u64) -> Result<Vec<Job>, Box<dyn std::error::Error>> {
    let random = |index| Job {
        name: format!("random seed={seed} script={index}"),
        text: informer_script::random(seed, index),
        random: Some((seed, index)),
    };
    if let Some(index) = args.trace {
        return Ok(vec![random(index)]);
    }
    let mut jobs = Vec::new();
    if !args.no_corpus {
        for script in corpus::load_texts(dir)? {
            if args.only.as_ref().is_none_or(|o| *o == script.name) {
                jobs.push(Job {
                    name: script.name,
                    text: script.text,
                    random: None,
                });
            }
        }
    }
    jobs.extend((0..args.random).map(random));
    Ok(jobs)
}

fn rerun(job: &Job, client_go: &str) -> String {
    let which = match job.random {
        Some((seed, index)) => format!("--seed {seed} --trace {index}"),
        None => format!("--only {}", job.name),
    };
    format!("cargo run -p kube-informer-conformance -- informer {which} --client-go {client_go}")
}

/// Saves (`record`) or checks a named script's recorded client-go output.
fn check_recording(
    dir: &Path,
    name: &str,
    live: &[Value],
    record: bool,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    if record {
        corpus::save_recording(dir, name, live)?;
        return Ok(None);
    }
    Ok(match corpus::load_recording(dir, name)? {
        None => Some("no recording (run with --record)".to_owned()),
        Some(recorded) => compare(&recorded, live).map(|d| {
            format!(
                "recorded client-go output is stale (rerun with --record)\n{}",
                d.labelled("recorded", "live")
            )
        }),
    })
}
