//! The write scripts on the fake server alone, no real cluster needed:
//! the corpus and the random scripts give the same recording twice (WC6),
//! and no random step is answered with a 5xx or a broken connection
//! (WC7). The seed is printed; `WRITE_CONFORMANCE_SEED` repeats it.

use crate::write_conformance;

use anyhow::{Result, ensure};
use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;
use write_conformance::run::{Recording, run_script};
use write_conformance::script::Script;
use write_conformance::{corpus, generate, random_count, register_crd_on_fake, seed};

/// Runs `script` on a fresh fake server, in a namespace of the same name
/// every time, so two runs can be compared as they are.
async fn run_fresh(script: &Script) -> Result<Recording> {
    let server = kube_informer_testing::FakeApiServer::start().await;
    register_crd_on_fake(&server)?;
    let client = server.client();
    let ns = "write-conformance";
    let namespace = serde_json::json!({"metadata": {"name": ns}});
    server.create_value(
        &kube_informer_testing::ResourceType::of::<k8s_openapi::api::core::v1::Namespace>(),
        namespace,
    )?;
    run_script(&client, ns, script).await
}

/// The recording with wall-clock times blanked and `managedFields` entries
/// in a fixed order (servers order them by those times first): all that
/// may differ between two runs.
fn without_times(recording: &Recording) -> Value {
    fn blank(value: &mut Value) {
        match value {
            Value::Object(map) => map.iter_mut().for_each(|(k, v)| {
                if matches!(
                    k.as_str(),
                    "creationTimestamp" | "deletionTimestamp" | "time"
                ) {
                    *v = Value::Null;
                } else {
                    blank(v);
                }
            }),
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(recording).expect("recordings are JSON");
    write_conformance::normalise::sort_managed_fields(&mut value);
    blank(&mut value);
    value
}

fn scripts(seed: u64) -> Result<Vec<Script>> {
    let mut scripts = corpus()?;
    scripts.extend(generate::scripts(seed, random_count()));
    Ok(scripts)
}

async fn run_all(scripts: &[Script]) -> Result<Vec<Recording>> {
    stream::iter(scripts)
        .map(run_fresh)
        .buffered(8)
        .try_collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wc6_the_fake_server_answers_every_script_the_same_way_twice() -> Result<()> {
    let seed = seed();
    let scripts = scripts(seed)?;
    let first = run_all(&scripts).await?;
    let second = run_all(&scripts).await?;
    let mut different = Vec::new();
    for ((script, a), b) in scripts.iter().zip(&first).zip(&second) {
        if without_times(a) != without_times(b) {
            different.push(script.name.clone());
        }
    }
    ensure!(
        different.is_empty(),
        "seed {seed}: scripts answered differently on a second run: {different:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wc7_random_scripts_get_no_5xx_and_no_broken_connection_from_the_fake_server() -> Result<()>
{
    let seed = seed();
    let scripts = generate::scripts(seed, random_count());
    let recordings = run_all(&scripts).await?;
    let mut bad = Vec::new();
    for (script, recording) in scripts.iter().zip(&recordings) {
        for (i, step) in recording.steps.iter().enumerate() {
            let skipped = step.status == 0 && step.body.get("skipped").is_some();
            let fine = matches!(step.status, 200 | 201 | 400 | 404 | 409 | 415 | 422);
            if !fine && !skipped {
                bad.push(format!(
                    "{} step {i} ({}): {} {}",
                    script.name,
                    write_conformance::run::describe(&script.steps[i]),
                    step.status,
                    step.body
                ));
            }
        }
    }
    ensure!(
        bad.is_empty(),
        "seed {seed}: {} steps answered outside 2xx/400/404/409/415/422:\n{}",
        bad.len(),
        bad.join("\n")
    );
    Ok(())
}
