//! The informer against a real kube-apiserver on a real etcd, under faults:
//! kube-apiserver killed and restarted while writes go on, a forced 410
//! after an etcd compaction, and an identity that gets 403.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.
//! Every wait is bounded, so a stuck informer fails the test instead of
//! hanging CI.

use crate::e2e_support;

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use e2e_support::informer::{
    WAIT, about, quick_retries, reported, rv_of, set_value, spawn_run, status_code, stop, synced,
};
use e2e_support::{
    Access, PausableProxy, Recorder, Scene, configmap, create_configmaps, describe, post_params,
    server_state, store_state, within,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube_informer::dispatch::{Lag, SubscribeOptions};
use kube_informer::informer;
use kube_informer::source;
use kube_informer::{Informer, Notification};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Keeps writing ConfigMaps `w-00`…`w-29` (server-side apply creates or
/// updates; every 7th write deletes) until `stop`; returns how many writes
/// succeeded and failed.
async fn keep_writing(
    api: Api<ConfigMap>,
    stop: CancellationToken,
    done: watch::Sender<usize>,
) -> (usize, usize) {
    let (mut ok, mut failed) = (0, 0);
    let apply = PatchParams::apply("kube-informer-e2e").force();
    let mut i = 0usize;
    let mut pace = tokio::time::interval(Duration::from_millis(20));
    while !stop.is_cancelled() {
        pace.tick().await;
        let name = format!("w-{:02}", i % 30);
        let result = if i % 7 == 6 {
            api.delete(&name, &DeleteParams::default()).await.map(drop)
        } else {
            let body = serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": { "name": name },
                "data": { "value": i.to_string() },
            });
            api.patch(&name, &apply, &Patch::Apply(&body))
                .await
                .map(drop)
        };
        match result {
            // A delete of a name deleted before is a 404: still a write.
            Ok(()) => ok += 1,
            Err(kube::Error::Api(status)) if status.code == 404 => ok += 1,
            Err(_) => failed += 1,
        }
        done.send_replace(ok);
        i += 1;
    }
    (ok, failed)
}

async fn wait_for_writes(done: &watch::Receiver<usize>, at_least: usize) -> Result<()> {
    within(WAIT, "writes", async {
        done.clone().wait_for(|ok| *ok >= at_least).await?;
        Ok(())
    })
    .await
}

/// R3, R4, R9: the main kube-apiserver is killed and restarted while writes
/// go on through the other one; afterwards every subscriber (one per lag
/// policy) folds to exactly the server's state, so no key's final state was
/// missed, and the store agrees.
#[tokio::test]
async fn e2e_r4_apiserver_killed_and_restarted_under_writes() -> Result<()> {
    let Some(Scene {
        cluster, ns, _hold, ..
    }) = Scene::start(
        "e2e_r4_apiserver_killed_and_restarted_under_writes",
        Access::Exclusive,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    // Writes through the apiserver that stays up keep going during the
    // restart; without it they fail while the main one is down.
    let writer_api = match cluster.nocache_client().await? {
        Some(nocache) => Api::namespaced(nocache, &ns.name),
        None => api.clone(),
    };
    create_configmaps(&api, "w", 10, 10).await?;

    let informer = Informer::builder(api.clone())
        .cache_from_env()
        .source_config(quick_retries())
        .build();
    let mut errors = informer.errors();
    let recorders = [Lag::Unbounded, Lag::Coalesce, Lag::Bounded(8)]
        .map(|lag| informer.subscribe(SubscribeOptions::default().lag(lag)))
        .into_iter()
        .map(|s| s.map(Recorder::start))
        .collect::<Result<Vec<_>, _>>()?;
    let run = spawn_run(&informer);
    synced(&informer).await?;

    let stop_writing = CancellationToken::new();
    let (done, writes) = watch::channel(0);
    let writer = tokio::spawn(keep_writing(writer_api, stop_writing.clone(), done));
    wait_for_writes(&writes, 40).await?;
    cluster
        .restart_apiserver(true, Duration::from_secs(1))
        .await?;
    let after_restart = *writes.borrow();
    wait_for_writes(&writes, after_restart + 40).await?;
    stop_writing.cancel();
    let (ok, failed) = within(WAIT, "writer end", async { Ok(writer.await?) }).await?;
    eprintln!(
        "writes during the restart scenario: {ok} ok, {failed} failed (from {after_restart} at restart)"
    );

    let expected = server_state(&api).await?;
    for (i, recorder) in recorders.iter().enumerate() {
        recorder
            .wait_for_state(WAIT, &format!("subscriber {i}"), &expected)
            .await?;
    }
    ensure!(
        store_state(&informer.store()) == expected,
        "store differs from the server"
    );
    let errors = reported(&mut errors);
    ensure!(!errors.is_empty(), "the broken watch was reported (R9)");
    eprintln!(
        "errors reported across the restart: {}",
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    ensure!(!run.is_finished(), "the informer kept running");
    stop(&informer, run).await?;
    ns.delete().await
}

/// Whether a source error came from a watch (its start or an ERROR event).
fn is_watch_error(error: &informer::Error) -> bool {
    match error {
        informer::Error::Source(cause) => matches!(
            **cause,
            source::Error::WatchStart { .. } | source::Error::WatchEvent { .. }
        ),
        _ => false,
    }
}

/// R1, R3, R4, F6, I2: a forced 410. The informer watches the kube-apiserver
/// without a watch cache through a [`PausableProxy`], with 2 s watches. The
/// proxy is paused: the open watch runs to its end and the informer's
/// re-watch from its last resourceVersion is held, while the server stays
/// up. Objects are then deleted, updated and created through the other
/// apiserver, etcd is compacted past everything the informer saw, and the
/// proxy resumes. The held watch reaches etcd at a compacted revision and
/// gets 410, the informer relists, and what was deleted meanwhile comes out
/// as tombstones (final_state_unknown).
#[tokio::test]
async fn e2e_r4_forced_410_relists_and_tombstones_deletions() -> Result<()> {
    let Some(Scene {
        cluster, ns, _hold, ..
    }) = Scene::start(
        "e2e_r4_forced_410_relists_and_tombstones_deletions",
        Access::Exclusive,
    )
    .await?
    else {
        return Ok(());
    };
    let Some(upstream) = cluster.nocache_address()? else {
        eprintln!("SKIPPED: the harness runs without the watch-cache-less kube-apiserver");
        return ns.delete().await;
    };
    let proxy = PausableProxy::start(upstream).await?;
    let nocache = cluster
        .nocache_client_via(&proxy.url())
        .await?
        .context("a client of the watch-cache-less apiserver")?;
    let api = ns.configmaps();
    let created = create_configmaps(&api, "cm", 10, 10).await?;

    // An explicit page size makes relists from a known resourceVersion
    // read that exact revision from etcd, so a relist is refused too, and
    // the source falls back to a consistent list (R1).
    let informer = Informer::builder(Api::<ConfigMap>::namespaced(nocache, &ns.name))
        .cache_from_env()
        .source_config(
            quick_retries()
                .page_size(100)
                .watch_timeout(Duration::from_secs(2), Duration::from_secs(2)),
        )
        .build();
    let mut errors = informer.errors();
    let recorder = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;
    recorder
        .wait_for_state(WAIT, "initial list", &server_state(&api).await?)
        .await?;
    let listed = recorder.len();
    let synced_rv: u64 = informer
        .last_sync_resource_version()
        .context("synced")?
        .parse()?;

    // The open watch ends within 2 s; its successor waits in the proxy.
    proxy.pause();
    proxy.wait_for_held(WAIT).await?;
    let outcome = async {
        let deleted: Vec<String> = created[..4].iter().map(ResourceExt::name_any).collect();
        for name in &deleted {
            api.delete(name, &DeleteParams::default()).await?;
        }
        let updated = set_value(&api, &created[4].name_any(), "changed").await?;
        let born = api
            .create(&post_params(), &configmap("born-meanwhile", "new"))
            .await?;
        let compacted = cluster.compact_etcd().await?;
        ensure!(
            compacted > synced_rv + 1,
            "compaction at {compacted} must remove the start of a watch from {synced_rv}"
        );
        Ok((deleted, updated, born))
    }
    .await;
    proxy.resume();
    let (deleted, updated, born) = outcome?;

    let expected = server_state(&api).await?;
    recorder
        .wait_for_state(WAIT, "after the relist", &expected)
        .await?;
    ensure!(store_state(&informer.store()) == expected);

    let after: Vec<_> = recorder.notifications().split_off(listed);
    for name in &deleted {
        let original = created.iter().find(|c| c.name_any() == *name).unwrap();
        let notes = about(&after, name);
        ensure!(
            matches!(
                notes.as_slice(),
                [Notification::Deleted { object, final_state_unknown: true }]
                    if rv_of(object.as_ref()) == rv_of(original)
            ),
            "{name}: expected one tombstone with the last known state, got {}",
            describe(notes.iter().copied())
        );
    }
    let changed = about(&after, &updated.name_any());
    ensure!(
        matches!(
            changed.as_slice(),
            [Notification::Updated { new, resync: false, .. }] if rv_of(new.as_ref()) == rv_of(&updated)
        ),
        "updated object: {}",
        describe(changed.iter().copied())
    );
    let new = about(&after, "born-meanwhile");
    ensure!(
        matches!(
            new.as_slice(),
            [Notification::Added { object, in_initial_list: false }] if rv_of(object.as_ref()) == rv_of(&born)
        ),
        "object created meanwhile: {}",
        describe(new.iter().copied())
    );
    let errors = reported(&mut errors);
    for error in &errors {
        eprintln!("forced 410 scenario reported: {error}");
    }
    ensure!(
        errors
            .iter()
            .any(|e| status_code(e) == Some(410) && is_watch_error(e)),
        "the re-watch from the compacted resourceVersion got 410 Gone: {errors:?}"
    );
    stop(&informer, run).await?;
    ns.delete().await
}

/// R9: an identity without rights gets 403 on every list; each one reaches
/// the informer's error stream with its status, and the informer keeps
/// retrying (unsynced, running) until stopped, without a panic.
#[tokio::test]
async fn e2e_r9_forbidden_reaches_the_error_stream_and_retries() -> Result<()> {
    let Some(Scene {
        cluster, ns, _hold, ..
    }) = Scene::start(
        "e2e_r9_forbidden_reaches_the_error_stream_and_retries",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let denied: Api<ConfigMap> = Api::namespaced(cluster.norights_client().await?, &ns.name);

    let informer = Informer::builder(denied)
        .cache_from_env()
        .source_config(quick_retries())
        .build();
    let errors = informer.errors();
    let run = spawn_run(&informer);
    let first: Vec<informer::Error> = within(WAIT, "three 403 errors", async {
        Ok(errors.take(3).collect().await)
    })
    .await?;
    ensure!(first.len() == 3, "errors: {first:?}");
    for error in &first {
        ensure!(status_code(error) == Some(403), "expected 403, got {error}");
        // The error's own text says what failed; the server's message is
        // further down the source chain, once.
        let chain = format!("{:#}", anyhow::Error::from(error.clone()));
        ensure!(chain.matches("is forbidden").count() == 1, "chain: {chain}");
    }
    eprintln!("403 as reported: {}", first[0]);
    ensure!(!informer.has_synced());
    ensure!(
        !run.is_finished() && !informer.is_stopped(),
        "still retrying"
    );
    ensure!(informer.metrics().errors >= 3);
    stop(&informer, run).await?;
    ns.delete().await
}
