//! Write conformance against the real kube-apiserver (WC1–WC5): the named
//! write scripts of `conformance/writes/scripts/` and 200 random ones run
//! on the e2e kube-apiserver and on a fresh `FakeApiServer` each; answers
//! and watch events must match after normalisation, except for the
//! differences `conformance/writes/DIFFERENCES.md` lists.
//!
//! `WRITE_CONFORMANCE_SEED` repeats a run's random scripts,
//! `WRITE_CONFORMANCE_RANDOM` sets how many, and `WRITE_CONFORMANCE_GAPS`
//! names a file to write the differences found to, grouped by place.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.

use crate::e2e_support;
use crate::write_conformance;

use anyhow::{Result, ensure};
use e2e_support::Cluster;
use futures::{StreamExt, TryStreamExt, stream};
use write_conformance::{
    allowed, compare, corpus, count_by_gap, generate, known_gaps, random_count,
    register_crd_on_real, render, run_on_fake, run_on_real, seed, write_gaps,
};

/// Scripts in flight at once (each runs on both servers).
const CONCURRENCY: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_write_conformance_wc1_wc5_scripts_answer_as_the_real_apiserver() -> Result<()> {
    let Some(cluster) = Cluster::from_env("e2e_write_conformance") else {
        return Ok(());
    };
    let _hold = cluster.shared().await;
    let client = cluster.admin_client().await?;
    register_crd_on_real(&client).await?;
    let allowed = allowed()?;
    let seed = seed();
    let mut scripts = corpus()?;
    let named = scripts.len();
    scripts.extend(generate::scripts(seed, random_count()));
    let started = std::time::Instant::now();
    let outcomes: Vec<_> = stream::iter(scripts)
        .map(|script| {
            let (client, allowed) = (&client, &allowed);
            async move {
                let real = run_on_real(client, &script).await?;
                let fake = run_on_fake(&script).await?;
                anyhow::Ok(compare(&script, &real, &fake, allowed))
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;
    let failing: Vec<_> = outcomes
        .iter()
        .filter(|o| !o.unexcused.is_empty())
        .collect();
    for outcome in &failing {
        eprintln!("{}", render(outcome));
    }
    let excused: usize = outcomes.iter().map(|o| o.excused.len()).sum();
    let total: usize = failing.iter().map(|o| o.unexcused.len()).sum();
    eprintln!(
        "write conformance: {named} named + {} random scripts (seed {seed}) in {:.1?}; \
         {total} differences in {} scripts, {excused} excused (DIFFERENCES.md, and KNOWN_GAPS.md with WRITE_CONFORMANCE_EXCUSE_KNOWN_GAPS=1)",
        outcomes.len() - named,
        started.elapsed(),
        failing.len(),
    );
    for (cause, count) in count_by_gap(&outcomes, &known_gaps()?) {
        eprintln!("write conformance: {count} differences of cause {cause} (KNOWN_GAPS.md)");
    }
    if let Some(path) = write_gaps(&outcomes)? {
        eprintln!(
            "write conformance: differences grouped in {}",
            path.display()
        );
    }
    ensure!(
        failing.is_empty(),
        "{total} differences from the real kube-apiserver in {} of {} scripts \
         (seed {seed}); see above",
        failing.len(),
        outcomes.len()
    );
    Ok(())
}
