//! Write conformance: the same write scripts against the real
//! kube-apiserver and the fake one, answers and watch events compared
//! after normalising what two servers cannot share.
//!
//! Rules:
//! - WC1: a script runs in a namespace of its own (on the fake side, on a
//!   fresh `FakeApiServer`), with a watch open on each resource it names
//!   from before its first step; every answer (status, body) and every
//!   watch event up to a sentinel object created after the last step is
//!   recorded.
//! - WC2: recordings are normalised before they are compared: uids,
//!   resourceVersions, times, the namespace's name and `generateName`
//!   suffixes become placeholders (`normalise.rs`).
//! - WC3: any other difference, leaf by leaf, is a failure unless an
//!   entry of `conformance/writes/DIFFERENCES.md` excuses it; each is
//!   printed under the step it belongs to.
//! - WC4: DIFFERENCES.md entries name the scripts and places they excuse
//!   (patterns), and which side has the value.
//! - WC5: the named scripts of `conformance/writes/scripts/` and at least
//!   200 random ones (a printed seed, `WRITE_CONFORMANCE_SEED` to repeat
//!   it) run on each test run.
//! - WC6: on the fake server alone, the corpus gives the same recording
//!   twice (resourceVersions and uids included; only times may differ).
//! - WC7: on the fake server alone, no random step is answered with a 5xx
//!   or a broken connection: bad input gets 400, 404, 409, 415 or 422.

// Each test binary uses a part of the harness.
#![allow(dead_code)]

pub mod compare;
pub mod generate;
pub mod normalise;
pub mod resources;
pub mod run;
pub mod script;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::Client;
use kube_informer_testing::FakeApiServer;
use serde_json::{Value, json};

use compare::{Allowed, Difference};
use resources::Kind;
use run::{Recording, describe, run_script};
use script::Script;

/// The variable that sets the random scripts' seed.
pub const SEED_VAR: &str = "WRITE_CONFORMANCE_SEED";
/// The variable that sets how many random scripts run (default 200).
pub const COUNT_VAR: &str = "WRITE_CONFORMANCE_RANDOM";
/// The variable naming a file to write the differences found to, grouped.
pub const GAPS_VAR: &str = "WRITE_CONFORMANCE_GAPS";

/// The seed from [`SEED_VAR`], or one from the clock; printed either way.
pub fn seed() -> u64 {
    let seed = std::env::var(SEED_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
    eprintln!("write conformance: random scripts from seed {seed} (repeat with {SEED_VAR}={seed})");
    seed
}

/// How many random scripts to run.
pub fn random_count() -> usize {
    std::env::var(COUNT_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

/// The named scripts.
pub fn corpus() -> Result<Vec<Script>> {
    script::load_corpus(&script::corpus_dir())
}

/// The variable that, set to 1, also excuses the differences
/// KNOWN_GAPS.md lists: the run then fails only on differences nobody has
/// seen yet (for merging work on the fake server before every gap is
/// closed).
pub const KNOWN_GAPS_VAR: &str = "WRITE_CONFORMANCE_EXCUSE_KNOWN_GAPS";

/// The deliberate differences, and the known gaps too when
/// [`KNOWN_GAPS_VAR`] is 1.
pub fn allowed() -> Result<Vec<Allowed>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/writes");
    let mut allowed = compare::load_allowed(&dir.join("DIFFERENCES.md"))?;
    if std::env::var(KNOWN_GAPS_VAR).is_ok_and(|v| v == "1") {
        eprintln!(
            "write conformance: {KNOWN_GAPS_VAR}=1: the gaps of KNOWN_GAPS.md are excused too"
        );
        allowed.extend(known_gaps()?);
    }
    Ok(allowed)
}

/// The open gaps of KNOWN_GAPS.md.
pub fn known_gaps() -> Result<Vec<Allowed>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/writes");
    compare::load_blocks(&dir.join("KNOWN_GAPS.md"), "```wc-gap")
}

/// Every difference DIFFERENCES.md does not excuse, counted by the first
/// KNOWN_GAPS.md cause that matches it (`(no listed cause)` for the rest):
/// the per-cause count of a run, whether or not the gaps are excused.
pub fn count_by_gap(outcomes: &[Outcome], gaps: &[Allowed]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for outcome in outcomes {
        let unexcused = outcome.unexcused.iter();
        let by_gap = outcome
            .excused
            .iter()
            .filter(|(id, _)| gaps.iter().any(|g| &g.id == id))
            .map(|(_, d)| d);
        for difference in unexcused.chain(by_gap) {
            let cause = gaps
                .iter()
                .find(|g| g.excuses(&outcome.script.name, difference))
                .map_or_else(|| "(no listed cause)".to_owned(), |g| g.id.clone());
            *counts.entry(cause).or_default() += 1;
        }
    }
    counts
}

/// A namespace name unique in this process: `kiwc-<pid>-<n>`.
pub fn namespace_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!(
        "kiwc-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

async fn post(client: &Client, path: &str, body: &Value) -> Result<(u16, Value)> {
    let request = http::Request::post(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body)?))?;
    let response = tokio::time::timeout(Duration::from_secs(30), client.send(request))
        .await
        .with_context(|| format!("POST {path}: no answer"))??;
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

async fn create_namespace(client: &Client, name: &str) -> Result<()> {
    let (status, body) = post(
        client,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": name}}),
    )
    .await?;
    if status != 201 {
        bail!("creating namespace {name}: {status} {body}");
    }
    Ok(())
}

/// Registers the Widget CRD on the real server and waits until Widgets
/// are served.
pub async fn register_crd_on_real(client: &Client) -> Result<()> {
    let (status, body) = post(
        client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &resources::widget_crd(),
    )
    .await?;
    if status != 201 && status != 409 {
        bail!("creating the Widget CRD: {status} {body}");
    }
    let probe = Kind::Widgets.collection_path("default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let request = http::Request::get(&probe).body(Vec::new())?;
        if client.request_text(request).await.is_ok() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("Widgets were not served within 60 s of creating their CRD");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Registers the Widget CRD on a fake server as a user would: the same
/// definition ([`resources::widget_crd`]) the real server is given, through
/// `FakeApiServer::register_crd_value`, so Widgets get its status
/// subresource and the CRD is stored and established.
pub fn register_crd_on_fake(server: &FakeApiServer) -> Result<()> {
    server
        .register_crd_value(resources::widget_crd())
        .map_err(|status| {
            anyhow::anyhow!("registering the Widget CRD on the fake server: {status:?}")
        })?;
    Ok(())
}

/// Runs `script` on the real server in a new namespace.
pub async fn run_on_real(client: &Client, script: &Script) -> Result<Recording> {
    let ns = namespace_name();
    create_namespace(client, &ns).await?;
    run_script(client, &ns, script)
        .await
        .with_context(|| format!("script {} on the real server", script.name))
}

/// Runs `script` on a fresh fake server in a new namespace.
pub async fn run_on_fake(script: &Script) -> Result<Recording> {
    let server = FakeApiServer::start().await;
    register_crd_on_fake(&server)?;
    let client = server.client();
    let ns = namespace_name();
    create_namespace(&client, &ns).await?;
    run_script(&client, &ns, script)
        .await
        .with_context(|| format!("script {} on the fake server", script.name))
}

/// What one script's comparison found.
#[derive(Debug)]
pub struct Outcome {
    /// The script.
    pub script: Script,
    /// Differences no DIFFERENCES.md entry excuses.
    pub unexcused: Vec<Difference>,
    /// Differences excused, with the id of the entry that did.
    pub excused: Vec<(String, Difference)>,
}

/// Compares the two recordings of `script`.
pub fn compare(
    script: &Script,
    real: &Recording,
    fake: &Recording,
    allowed: &[Allowed],
) -> Outcome {
    let real = normalise::normalise(real);
    let fake = normalise::normalise(fake);
    let mut outcome = Outcome {
        script: script.clone(),
        unexcused: Vec::new(),
        excused: Vec::new(),
    };
    for difference in compare::differences(&real, &fake) {
        match allowed
            .iter()
            .find(|a| a.excuses(&script.name, &difference))
        {
            Some(entry) => outcome.excused.push((entry.id.clone(), difference)),
            None => outcome.unexcused.push(difference),
        }
    }
    outcome
}

/// The unexcused differences of one script, under the steps they are in.
pub fn render(outcome: &Outcome) -> String {
    let mut out = format!(
        "=== script {} ({} differences)\n",
        outcome.script.name,
        outcome.unexcused.len()
    );
    let mut by_step: BTreeMap<Option<usize>, Vec<&Difference>> = BTreeMap::new();
    for difference in &outcome.unexcused {
        by_step
            .entry(difference.step())
            .or_default()
            .push(difference);
    }
    for (step, differences) in by_step {
        match step.and_then(|i| outcome.script.steps.get(i).map(|s| (i, s))) {
            Some((i, s)) => {
                let _ = writeln!(out, "  step {i}: {}", describe(s));
            }
            None => out.push_str("  watch events:\n"),
        }
        for d in differences {
            let _ = writeln!(
                out,
                "    {}\n      real: {}\n      fake: {}",
                d.path,
                compare::show(&d.real),
                compare::show(&d.fake)
            );
        }
    }
    out
}

/// The place of a difference without indexes and step numbers (`answer.…`
/// or `event.<plural>.…`) and which side has a value: what groups
/// differences by cause.
pub fn place(difference: &Difference) -> String {
    let mut place = String::new();
    let mut in_index = false;
    for c in difference.path.chars() {
        match c {
            '[' => {
                in_index = true;
                place.push_str("[*]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            c => place.push(c),
        }
    }
    let place = match place.strip_prefix("steps[*]") {
        Some("") => "answer status code".to_owned(),
        Some(rest) => format!("answer{}", rest.trim_start_matches(".body")),
        None => place.replacen("events.", "event.", 1),
    };
    let presence = match (&difference.real, &difference.fake) {
        (Some(_), None) => " (real only)",
        (None, Some(_)) => " (fake only)",
        _ => "",
    };
    format!("{place}{presence}")
}

/// The kind of request a difference answered (`PATCH configmaps
/// merge-patch+json`), or `watch`.
pub fn request_kind(outcome: &Outcome, difference: &Difference) -> String {
    difference
        .step()
        .and_then(|i| outcome.script.steps.get(i))
        .map(|s| {
            let sub = s
                .subresource
                .as_deref()
                .map_or(String::new(), |s| format!("/{s}"));
            let patch = match s.content_type() {
                ct if s.method == "PATCH" => format!(" {}", ct.trim_start_matches("application/")),
                _ => String::new(),
            };
            format!("{} {}{sub}{patch}", s.method, s.resource.plural())
        })
        .unwrap_or_else(|| "watch".to_owned())
}

/// The differences of all outcomes grouped by [`place`], as Markdown: each
/// group with its count, the requests and scripts it shows in, and one
/// example.
pub fn gap_report(outcomes: &[Outcome]) -> String {
    #[derive(Default)]
    struct Group {
        count: usize,
        requests: std::collections::BTreeSet<String>,
        scripts: Vec<String>,
        example: String,
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for outcome in outcomes {
        for difference in &outcome.unexcused {
            let group = groups.entry(place(difference)).or_default();
            group.count += 1;
            group.requests.insert(request_kind(outcome, difference));
            if !group.scripts.contains(&outcome.script.name) {
                group.scripts.push(outcome.script.name.clone());
            }
            if group.example.is_empty() {
                group.example = format!(
                    "{} {}: real {} / fake {}",
                    outcome.script.name,
                    difference.path,
                    compare::show(&difference.real),
                    compare::show(&difference.fake)
                );
            }
        }
    }
    let mut out = String::new();
    for (place, group) in groups {
        let shown: Vec<&str> = group.scripts.iter().take(5).map(String::as_str).collect();
        let more = group.scripts.len().saturating_sub(shown.len());
        let requests: Vec<&str> = group.requests.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "- `{place}`: {} times in {} scripts ({}{}); requests: {}\n  e.g. {}",
            group.count,
            group.scripts.len(),
            shown.join(", "),
            if more > 0 {
                format!(", +{more}")
            } else {
                String::new()
            },
            requests.join("; "),
            group.example,
        );
    }
    out
}

/// Writes the gap report to the file [`GAPS_VAR`] names, if any.
pub fn write_gaps(outcomes: &[Outcome]) -> Result<Option<PathBuf>> {
    let Some(path) = std::env::var_os(GAPS_VAR).map(PathBuf::from) else {
        return Ok(None);
    };
    std::fs::write(&path, gap_report(outcomes))?;
    Ok(Some(path))
}
