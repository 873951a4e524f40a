//! The finalizer helper (Z1–Z5, Z9, `kube_informer::finalizer`) against a
//! real kube-apiserver on a real etcd: the finalizer goes on before Apply,
//! which runs on the server's answer,
//! a deleted object is cleaned up and then disappears, a failed cleanup
//! keeps it, and a concurrent change to the finalizers makes the JSON
//! patch's `test` fail instead of writing over it.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.
//! Every wait is bounded.

use crate::e2e_support;

use crate::cache_mode_common::CacheModeExt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use e2e_support::informer::{WAIT, spawn_run, stop, synced};
use e2e_support::{Access, Scene, api_error_code, configmap, post_params, within};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube_informer::ext::NotificationStreamExt;
use kube_informer::finalizer::{self, Event, finalizer};
use kube_informer::queue::WorkQueue;
use kube_informer::runner::{Action, Runner};
use kube_informer::{Informer, SubscribeOptions};
use parking_lot::Mutex;
use serde_json::json;

const OURS: &str = "e2e.kube-informer.io/cleanup";
const OTHER: &str = "e2e.kube-informer.io/other";
const THIRD: &str = "e2e.kube-informer.io/third";
const STEP: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
#[error("cleanup failed on purpose")]
struct Failed;

type Outcome = Result<Action, finalizer::Error<Failed>>;

/// Runs `finalizer` on `object` with a reconcile that records what it was
/// handed and answers `answer`.
async fn run(
    api: &Api<ConfigMap>,
    object: ConfigMap,
    answer: Result<Action, Failed>,
) -> Result<(Outcome, Vec<&'static str>)> {
    let events = Mutex::new(Vec::new());
    let outcome = within(STEP, "finalizer", async {
        Ok(finalizer(api, OURS, Arc::new(object), |event| {
            events.lock().push(match event {
                Event::Apply(_) => "apply",
                Event::Cleanup(_) => "cleanup",
            });
            async move { answer }
        })
        .await)
    })
    .await?;
    Ok((outcome, events.into_inner()))
}

async fn get(api: &Api<ConfigMap>, name: &str) -> Result<Option<ConfigMap>> {
    within(STEP, "get", async {
        api.get_opt(name)
            .await
            .with_context(|| format!("reading {name}"))
    })
    .await
}

/// Creates `name` carrying `finalizers`.
async fn create(api: &Api<ConfigMap>, name: &str, finalizers: &[&str]) -> Result<ConfigMap> {
    let mut cm = configmap(name, "0");
    cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    within(STEP, "create", async {
        Ok(api.create(&post_params(), &cm).await?)
    })
    .await
}

/// Deletes `name`, which its finalizers keep: returns it as the server
/// holds it then, with its `deletionTimestamp`.
async fn delete_held(api: &Api<ConfigMap>, name: &str) -> Result<ConfigMap> {
    within(STEP, "delete", async {
        api.delete(name, &DeleteParams::default()).await?;
        Ok(())
    })
    .await?;
    let held = get(api, name).await?.context("the finalizers keep it")?;
    ensure!(
        held.metadata.deletion_timestamp.is_some(),
        "{name} is marked deleted"
    );
    Ok(held)
}

/// Sets `name`'s finalizers as another writer would (a merge patch replaces
/// the list).
async fn set_finalizers(api: &Api<ConfigMap>, name: &str, finalizers: &[&str]) -> Result<()> {
    within(STEP, "set finalizers", async {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
        )
        .await?;
        Ok(())
    })
    .await
}

/// The API status of a failed patch, for the assertions and the log.
fn refusal(error: &kube::Error) -> Result<(u16, String, String)> {
    match error {
        kube::Error::Api(status) => {
            Ok((status.code, status.reason.clone(), status.message.clone()))
        }
        other => bail!("expected an API refusal, got {other}"),
    }
}

/// Z1, Z9, Z2: the first call puts the finalizer on, then runs Apply; the
/// next, on the object as the server then holds it, runs Apply again.
#[tokio::test]
async fn e2e_z1_z9_z2_finalizer_goes_on_before_apply() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) = Scene::start(
        "e2e_z1_z9_z2_finalizer_goes_on_before_apply",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    for (name, before, after) in [
        ("bare", &[][..], &[OURS][..]),
        ("other", &[OTHER][..], &[OTHER, OURS][..]),
    ] {
        let created = create(&api, name, before).await?;
        let (outcome, events) = run(&api, created, Ok(Action::requeue(STEP))).await?;
        ensure!(
            outcome? == Action::requeue(STEP) && events == ["apply"],
            "{name}: {events:?}"
        );
        let now = get(&api, name).await?.context("still there")?;
        ensure!(now.finalizers() == after, "{name}: {:?}", now.finalizers());

        let (outcome, events) = run(&api, now, Ok(Action::requeue(STEP))).await?;
        ensure!(
            outcome? == Action::requeue(STEP) && events == ["apply"],
            "{name}: {events:?}"
        );
        set_finalizers(&api, name, &[]).await?;
    }
    ns.delete().await
}

/// Z3: a deleted object is cleaned up, loses our finalizer, and the API
/// server removes it; with another finalizer left, it stays for that one.
#[tokio::test]
async fn e2e_z3_cleanup_then_the_object_disappears() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_z3_cleanup_then_the_object_disappears", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();

    create(&api, "alone", &[OURS]).await?;
    let held = delete_held(&api, "alone").await?;
    let (outcome, events) = run(&api, held, Ok(Action::AwaitChange)).await?;
    ensure!(
        outcome? == Action::AwaitChange && events == ["cleanup"],
        "{events:?}"
    );
    ensure!(
        get(&api, "alone").await?.is_none(),
        "gone once its last finalizer went"
    );

    create(&api, "shared", &[OTHER, OURS]).await?;
    let held = delete_held(&api, "shared").await?;
    let (outcome, events) = run(&api, held, Ok(Action::AwaitChange)).await?;
    ensure!(
        outcome? == Action::AwaitChange && events == ["cleanup"],
        "{events:?}"
    );
    let left = get(&api, "shared")
        .await?
        .context("kept by the other finalizer")?;
    ensure!(left.finalizers() == [OTHER], "{:?}", left.finalizers());
    set_finalizers(&api, "shared", &[]).await?;
    ensure!(get(&api, "shared").await?.is_none());
    ns.delete().await
}

/// Z3: a failed cleanup writes nothing: the object stays, marked deleted,
/// with our finalizer; the next successful cleanup lets it go.
#[tokio::test]
async fn e2e_z3_a_failed_cleanup_keeps_the_object() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_z3_a_failed_cleanup_keeps_the_object", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    create(&api, "app", &[OURS]).await?;
    let held = delete_held(&api, "app").await?;

    let (outcome, events) = run(&api, held.clone(), Err(Failed)).await?;
    ensure!(
        matches!(outcome, Err(finalizer::Error::CleanupFailed(Failed))) && events == ["cleanup"],
        "{outcome:?} {events:?}"
    );
    let still = get(&api, "app").await?.context("the finalizer keeps it")?;
    ensure!(still.finalizers() == [OURS] && still.resource_version() == held.resource_version());

    let (outcome, events) = run(&api, still, Ok(Action::AwaitChange)).await?;
    ensure!(
        outcome? == Action::AwaitChange && events == ["cleanup"],
        "{events:?}"
    );
    ensure!(get(&api, "app").await?.is_none());
    ns.delete().await
}

/// Z5: another writer changes the finalizers between our read and our
/// patch: the API server refuses the patch (a failed `test`), and nothing
/// of theirs is overwritten or removed.
#[tokio::test]
async fn e2e_z5_a_concurrent_change_makes_the_patch_fail() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) = Scene::start(
        "e2e_z5_a_concurrent_change_makes_the_patch_fail",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();

    // The addition: read without finalizers, another one written meanwhile.
    let stale = create(&api, "add", &[]).await?;
    set_finalizers(&api, "add", &[OTHER]).await?;
    let (outcome, events) = run(&api, stale, Ok(Action::AwaitChange)).await?;
    let Err(finalizer::Error::AddFinalizer(error)) = outcome else {
        bail!("the addition went through: {outcome:?}");
    };
    let (code, reason, message) = refusal(&error)?;
    eprintln!("failed test on addition: {code} {reason}: {message}");
    ensure!((code, reason.as_str()) == (422, "Invalid") && events.is_empty());
    let now = get(&api, "add").await?.context("still there")?;
    ensure!(now.finalizers() == [OTHER], "{:?}", now.finalizers());

    // The removal: our finalizer moved to index 0 when another writer
    // removed theirs; the patch computed for index 1 would have removed
    // the third writer's.
    create(&api, "remove", &[OTHER, OURS, THIRD]).await?;
    let stale = delete_held(&api, "remove").await?;
    set_finalizers(&api, "remove", &[OURS, THIRD]).await?;
    let (outcome, events) = run(&api, stale, Ok(Action::AwaitChange)).await?;
    let Err(finalizer::Error::RemoveFinalizer(error)) = outcome else {
        bail!("the removal went through: {outcome:?}");
    };
    let (code, reason, message) = refusal(&error)?;
    eprintln!("failed test on removal: {code} {reason}: {message}");
    ensure!((code, reason.as_str()) == (422, "Invalid") && events == ["cleanup"]);
    let now = get(&api, "remove").await?.context("still there")?;
    ensure!(now.finalizers() == [OURS, THIRD], "{:?}", now.finalizers());

    // The retry, on the object as it is now, removes ours only.
    let (outcome, _) = run(&api, now, Ok(Action::AwaitChange)).await?;
    outcome?;
    let now = get(&api, "remove").await?.context("kept by the third")?;
    ensure!(now.finalizers() == [THIRD], "{:?}", now.finalizers());
    set_finalizers(&api, "remove", &[]).await?;
    set_finalizers(&api, "add", &[]).await?;
    ns.delete().await
}

/// Z5: the object read was deleted (someone stripped our finalizer) and a
/// new one created under its name with our finalizer: the removal computed
/// from the old one fails on its uid instead of stripping the new one's.
#[tokio::test]
async fn e2e_z5_a_recreated_object_is_not_patched() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_z5_a_recreated_object_is_not_patched", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    create(&api, "app", &[OURS]).await?;
    let old = delete_held(&api, "app").await?;
    set_finalizers(&api, "app", &[]).await?;
    ensure!(get(&api, "app").await?.is_none());
    let new = create(&api, "app", &[OURS]).await?;

    let (outcome, _) = run(&api, old, Ok(Action::AwaitChange)).await?;
    let Err(finalizer::Error::RemoveFinalizer(error)) = outcome else {
        bail!("the removal went through: {outcome:?}");
    };
    ensure!(refusal(&error)?.0 == 422);
    let now = get(&api, "app").await?.context("the new one")?;
    ensure!(now.uid() == new.uid() && now.finalizers() == [OURS]);
    set_finalizers(&api, "app", &[]).await?;
    ns.delete().await
}

/// Z1, Z9, Z2, Z3 as a controller runs them: an informer feeds a runner
/// whose reconcile calls the helper. A new object gets the finalizer and is
/// applied, comes back through the watch and is applied again; deleted, it
/// is cleaned up once and leaves the API server and then the cache.
#[tokio::test]
async fn e2e_z1_z3_informer_and_runner_through_create_and_delete() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) = Scene::start(
        "e2e_z1_z3_informer_and_runner_through_create_and_delete",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    let informer = Informer::builder(api.clone()).cache_from_env().build();
    let queue = WorkQueue::new();
    tokio::spawn(queue.feed_results(
        informer.subscribe(SubscribeOptions::default())?.keys(),
        |error| eprintln!("notification without a key: {error}"),
    ));
    let store = informer.store();
    let run_handle = spawn_run(&informer);
    synced(&informer).await?;

    let events: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let reconciles = Runner::new(queue.clone()).run_with_store(
        store.clone(),
        {
            let (api, events) = (api.clone(), events.clone());
            move |_key, object: Option<Arc<ConfigMap>>| {
                let (api, events) = (api.clone(), events.clone());
                async move {
                    let Some(object) = object else {
                        return Ok(Action::AwaitChange);
                    };
                    finalizer(&api, OURS, object, |event| {
                        events.lock().push(match event {
                            Event::Apply(_) => "apply",
                            Event::Cleanup(_) => "cleanup",
                        });
                        async { Ok::<_, Failed>(Action::AwaitChange) }
                    })
                    .await
                }
            }
        },
        |_, _| Action::backoff(),
    );
    let failures = Arc::new(Mutex::new(Vec::new()));
    let driver = tokio::spawn({
        let failures = failures.clone();
        reconciles.for_each(move |outcome| {
            if let Err(error) = outcome {
                failures.lock().push(error.to_string());
            }
            async {}
        })
    });

    let wait_for = |want: &'static [&'static str]| {
        let events = events.clone();
        within(WAIT, "reconciles", async move {
            while *events.lock() != want {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        })
    };
    within(STEP, "create", async {
        Ok(api.create(&post_params(), &configmap("app", "1")).await?)
    })
    .await?;
    wait_for(&["apply", "apply"]).await?;
    let live = get(&api, "app").await?.context("live")?;
    ensure!(live.finalizers() == [OURS], "{:?}", live.finalizers());

    within(STEP, "delete", async {
        api.delete("app", &DeleteParams::default()).await?;
        Ok(())
    })
    .await?;
    wait_for(&["apply", "apply", "cleanup"]).await?;
    let key = format!("{}/app", ns.name).parse()?;
    within(WAIT, "the object leaves the server and the cache", async {
        while get(&api, "app").await?.is_some() || store.get(&key).is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    })
    .await?;
    ensure!(failures.lock().is_empty(), "{:?}", failures.lock());
    ensure!(
        api_error_code(&api.get("app").await) == Some(404),
        "gone from the server"
    );

    queue.shutdown();
    within(WAIT, "runner end", async { Ok(driver.await?) }).await?;
    stop(&informer, run_handle).await?;
    ns.delete().await
}
