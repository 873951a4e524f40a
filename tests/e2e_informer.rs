//! The informer against a real kube-apiserver on a real etcd, in normal
//! operation: initial lists (paginated and streamed), several subscribers,
//! a label selector, metadata-only objects, resync, late subscribers, Pods.
//! The faults (apiserver restart, forced 410, 403) are in
//! `e2e_informer_faults.rs`.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.
//! Every wait is bounded, so a stuck informer fails the test instead of
//! hanging CI.

use crate::e2e_support;

use crate::cache_mode_common::CacheModeExt;
use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use e2e_support::informer::{
    WAIT, about, data_value, labelled, reported, rv_of, set_label, set_value, spawn_run, stop,
    synced,
};
use e2e_support::{
    Access, Folded, Recorder, Scene, configmap, create_configmaps, describe, post_params,
    server_state, store_state, wait_until_cached, within,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube_informer::dispatch::{Lag, SubscribeOptions};
use kube_informer::source::{self, ListStrategy};
use kube_informer::{Informer, Notification};

/// R1, R2, R8, F7: 2,000 objects listed in pages (from the watch cache and
/// straight from etcd) and as a streaming list; each time the informer
/// syncs with exactly the server's names and resourceVersions, and a
/// subscriber gets each object once as an initial-list add.
#[tokio::test]
async fn e2e_r2_r8_initial_list_of_2000_paginated_and_streaming() -> Result<()> {
    let Some(Scene {
        cluster,
        client,
        ns,
        _hold,
    }) = Scene::start(
        "e2e_r2_r8_initial_list_of_2000_paginated_and_streaming",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    within(
        Duration::from_secs(240),
        "creating 2000 configmaps",
        create_configmaps(&api, "cm", 2000, 32),
    )
    .await?;
    let expected = server_state(&api).await?;
    ensure!(expected.len() == 2000, "server holds {}", expected.len());
    wait_until_cached(&api, &expected, WAIT).await?;

    let mut runs = vec![
        (
            "paginated (watch cache)",
            client.clone(),
            ListStrategy::Paginated,
        ),
        ("streaming", client.clone(), ListStrategy::Streaming),
    ];
    if let Some(nocache) = cluster.nocache_client().await? {
        // Without a watch cache the server really pages: 4 pages of 500.
        runs.push(("paginated (etcd)", nocache, ListStrategy::Paginated));
    }
    for (label, client, strategy) in runs {
        let informer = Informer::builder(Api::<ConfigMap>::namespaced(client, &ns.name))
            .cache_from_env()
            .source_config(source::Config::default().list_strategy(strategy))
            .build();
        let mut errors = informer.errors();
        let recorder = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
        let run = spawn_run(&informer);
        synced(&informer).await.context(label)?;
        ensure!(
            store_state(&informer.store()) == expected,
            "{label}: the synced store differs from the server"
        );
        recorder
            .wait_for_state(WAIT, label, &expected)
            .await
            .context(label)?;
        let log = recorder.notifications();
        ensure!(log.len() == 2000, "{label}: {} notifications", log.len());
        ensure!(
            log.iter().all(|n| matches!(
                n,
                Notification::Added {
                    in_initial_list: true,
                    ..
                }
            )),
            "{label}: every object arrives as an initial-list add"
        );
        // A streaming list that fell back to pages would have reported why.
        let errors = reported(&mut errors);
        ensure!(errors.is_empty(), "{label}: errors {errors:?}");
        ensure!(informer.last_sync_resource_version().is_some());
        stop(&informer, run).await?;
    }
    ns.delete().await
}

/// I1, I2, I4, L4: a create, an update and a delete reach three subscribers,
/// each with the right old and new objects.
#[tokio::test]
async fn e2e_i1_i2_create_update_delete_seen_by_three_subscribers() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) = Scene::start(
        "e2e_i1_i2_create_update_delete_seen_by_three_subscribers",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    api.create(&post_params(), &configmap("seed", "0")).await?;

    let informer = Informer::builder(api.clone()).cache_from_env().build();
    // Policies that deliver every notification: a Coalesce subscriber may
    // rightly merge the three into nothing when it lags (see the restart
    // test, which checks Coalesce by final state).
    let recorders = [Lag::Unbounded, Lag::Unbounded, Lag::Bounded(4)]
        .map(|lag| informer.subscribe(SubscribeOptions::default().lag(lag)))
        .into_iter()
        .map(|s| s.map(Recorder::start))
        .collect::<Result<Vec<_>, _>>()?;
    let run = spawn_run(&informer);
    synced(&informer).await?;
    for recorder in &recorders {
        recorder
            .wait_for(WAIT, "seed listed", |log| {
                (!about(log, "seed").is_empty()).then_some(())
            })
            .await?;
    }

    let created = api.create(&post_params(), &configmap("x", "1")).await?;
    let updated = set_value(&api, "x", "2").await?;
    api.delete("x", &DeleteParams::default()).await?;

    for (i, recorder) in recorders.iter().enumerate() {
        let seen = recorder
            .wait_for(WAIT, "create, update, delete of x", |log| {
                let x: Vec<_> = about(log, "x").into_iter().cloned().collect();
                (x.len() >= 3).then_some(x)
            })
            .await
            .with_context(|| format!("subscriber {i}"))?;
        ensure!(seen.len() == 3, "subscriber {i}: {}", describe(&seen));
        match &seen[0] {
            Notification::Added {
                object,
                in_initial_list: false,
            } => {
                ensure!(rv_of(object.as_ref()) == rv_of(&created));
                ensure!(data_value(object) == Some("1"));
            }
            other => bail!(
                "subscriber {i}: expected a live Added, got {}",
                describe([other])
            ),
        }
        match &seen[1] {
            Notification::Updated {
                old,
                new,
                resync: false,
            } => {
                ensure!(rv_of(old.as_ref()) == rv_of(&created) && data_value(old) == Some("1"));
                ensure!(rv_of(new.as_ref()) == rv_of(&updated) && data_value(new) == Some("2"));
            }
            other => bail!(
                "subscriber {i}: expected Updated 1 -> 2, got {}",
                describe([other])
            ),
        }
        match &seen[2] {
            Notification::Deleted {
                object,
                final_state_unknown: false,
            } => ensure!(data_value(object) == Some("2")),
            other => bail!(
                "subscriber {i}: expected a watched Deleted, got {}",
                describe([other])
            ),
        }
        let seed = about(&recorder.notifications(), "seed").len();
        ensure!(seed == 1, "subscriber {i}: seed seen {seed} times");
    }
    ensure!(informer.store().len() == 1, "only the seed is left");
    stop(&informer, run).await?;
    ns.delete().await
}

/// A label selector: an object relabelled out of it is reported Deleted
/// (the server's watch says so), one relabelled into it Added; objects
/// outside it are never seen.
#[tokio::test]
async fn e2e_i2_label_selector_relabelled_out_is_deleted() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) = Scene::start(
        "e2e_i2_label_selector_relabelled_out_is_deleted",
        Access::Shared,
    )
    .await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    let inside = api
        .create(&post_params(), &labelled("inside", "app", "in"))
        .await?;
    api.create(&post_params(), &labelled("outside", "app", "out"))
        .await?;
    wait_until_cached(&api, &server_state(&api).await?, WAIT).await?;

    let informer = Informer::builder(api.clone())
        .cache_from_env()
        .source_config(source::Config::default().label_selector("app=in"))
        .build();
    let recorder = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;
    let expected: Folded = [("inside".to_owned(), rv_of(&inside))].into();
    ensure!(store_state(&informer.store()) == expected);

    let relabelled = set_label(&api, "inside", "app", "out").await?;
    let gone = recorder
        .wait_for(WAIT, "inside reported deleted", |log| {
            about(log, "inside")
                .into_iter()
                .find(|n| matches!(n, Notification::Deleted { .. }))
                .cloned()
        })
        .await?;
    match gone {
        Notification::Deleted {
            object,
            final_state_unknown,
        } => {
            ensure!(!final_state_unknown, "the watch reported it, not a relist");
            ensure!(object.name_any() == "inside");
            // The server sends the object as it was when it still matched,
            // stamped with the resourceVersion of the change.
            ensure!(rv_of(object.as_ref()) == rv_of(&relabelled));
        }
        other => bail!("expected Deleted, got {}", describe([&other])),
    }
    ensure!(informer.store().is_empty(), "the store dropped it");

    let joined = set_label(&api, "outside", "app", "in").await?;
    let added = recorder
        .wait_for(WAIT, "outside reported added", |log| {
            about(log, "outside").first().map(|n| (*n).clone())
        })
        .await?;
    ensure!(
        matches!(&added, Notification::Added { object, in_initial_list: false } if rv_of(object.as_ref()) == rv_of(&joined)),
        "expected a live Added of outside, got {}",
        describe([&added])
    );
    let names: BTreeSet<String> = recorder
        .notifications()
        .iter()
        .map(|n| n.object().name_any())
        .collect();
    ensure!(names.len() == 2);
    let inside_seen: Vec<_> = recorder
        .notifications()
        .into_iter()
        .filter(|n| n.object().name_any() == "inside")
        .collect();
    ensure!(
        inside_seen.len() == 2,
        "inside: added then deleted, {}",
        describe(&inside_seen)
    );
    stop(&informer, run).await?;
    ns.delete().await
}

/// A metadata-only informer (`PartialObjectMeta<ConfigMap>`): it syncs with
/// the server's names and resourceVersions, keeps labels, and sees live
/// changes.
#[tokio::test]
async fn e2e_i1_i2_metadata_only_informer() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_i1_i2_metadata_only_informer", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    for i in 0..3 {
        api.create(&post_params(), &labelled(&format!("m-{i}"), "tier", "meta"))
            .await?;
    }

    let listed = server_state(&api).await?;
    wait_until_cached(&api, &listed, WAIT).await?;

    let informer = Informer::metadata_builder(api.clone()).build();
    let recorder = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;
    ensure!(store_state(&informer.store()) == listed);
    for meta in informer.store().list() {
        ensure!(
            meta.labels().get("tier").map(String::as_str) == Some("meta"),
            "labels are kept: {meta:?}"
        );
        ensure!(meta.metadata.namespace.as_deref() == Some(ns.name.as_str()));
    }

    let created = api
        .create(&post_params(), &labelled("m-live", "tier", "meta"))
        .await?;
    let relabelled = set_label(&api, "m-live", "tier", "changed").await?;
    api.delete("m-0", &DeleteParams::default()).await?;
    let expected = server_state(&api).await?;
    recorder
        .wait_for_state(WAIT, "metadata subscriber", &expected)
        .await?;
    let log = recorder.notifications();
    let live = about(&log, "m-live");
    ensure!(
        matches!(
            live.as_slice(),
            [
                Notification::Added { object: added, in_initial_list: false },
                Notification::Updated { old, new, resync: false },
            ] if rv_of(added.as_ref()) == rv_of(&created)
                && old.labels().get("tier").map(String::as_str) == Some("meta")
                && new.labels().get("tier").map(String::as_str) == Some("changed")
                && rv_of(new.as_ref()) == rv_of(&relabelled)
        ),
        "m-live: {}",
        describe(live.iter().copied())
    );
    ensure!(
        matches!(
            about(&log, "m-0").last(),
            Some(Notification::Deleted {
                final_state_unknown: false,
                ..
            })
        ),
        "m-0 deleted"
    );
    stop(&informer, run).await?;
    ns.delete().await
}

/// L3, I3: a subscriber with a 1 s resync period (which lowers the
/// informer's check period before it starts) gets resync updates of every
/// object, with the same resourceVersion on both sides; a subscriber
/// without resync gets none.
#[tokio::test]
async fn e2e_l3_i3_per_subscriber_resync_period() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_l3_i3_per_subscriber_resync_period", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    let created = create_configmaps(&api, "r", 3, 3).await?;

    let informer = Informer::builder(api.clone()).cache_from_env().build();
    let resyncing = Recorder::start(
        informer.subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))?,
    );
    let quiet = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;

    // Two rounds per object: about 2 s with a 1 s period.
    let rounds = resyncing
        .wait_for(Duration::from_secs(60), "two resync rounds", |log| {
            let resyncs: Vec<_> = log.iter().filter(|n| n.is_resync()).cloned().collect();
            let per_object = created
                .iter()
                .map(|c| about(&resyncs, &c.name_any()).len())
                .min()
                .unwrap_or(0);
            (per_object >= 2).then_some(resyncs)
        })
        .await?;
    for n in &rounds {
        match n {
            Notification::Updated {
                old,
                new,
                resync: true,
            } => ensure!(
                rv_of(old.as_ref()) == rv_of(new.as_ref()),
                "a resync carries the same resourceVersion"
            ),
            other => bail!("not a resync update: {}", describe([other])),
        }
    }
    let quiet_log = quiet.notifications();
    ensure!(
        quiet_log.len() == created.len() && !quiet_log.iter().any(Notification::is_resync),
        "the subscriber without resync got only the initial list: {}",
        describe(&quiet_log)
    );
    stop(&informer, run).await?;
    ns.delete().await
}

/// L1, L2: a subscriber that arrives while the informer runs first gets
/// the whole cache (current versions) as initial-list adds, nothing
/// interleaved, then live changes.
#[tokio::test]
async fn e2e_l1_l2_late_subscriber_gets_a_replay() -> Result<()> {
    let Some(Scene { ns, _hold, .. }) =
        Scene::start("e2e_l1_l2_late_subscriber_gets_a_replay", Access::Shared).await?
    else {
        return Ok(());
    };
    let api = ns.configmaps();
    create_configmaps(&api, "l", 5, 5).await?;

    let informer = Informer::builder(api.clone()).cache_from_env().build();
    let early = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;
    // The cache moves past the initial list before the late subscriber comes.
    set_value(&api, "l-00002", "changed").await?;
    let expected = server_state(&api).await?;
    early
        .wait_for_state(WAIT, "early subscriber", &expected)
        .await?;

    let late = informer.subscribe(SubscribeOptions::default())?;
    let late_synced = late.sync_status();
    let late = Recorder::start(late);
    within(WAIT, "late subscriber synced", async {
        late_synced.wait_until_synced().await?;
        Ok(())
    })
    .await?;
    let replay = late
        .wait_for(WAIT, "replay", |log| {
            (log.len() >= expected.len()).then(|| log.to_vec())
        })
        .await?;
    ensure!(
        e2e_support::fold(&replay) == expected,
        "replay is the current cache"
    );
    ensure!(
        replay.iter().all(|n| matches!(
            n,
            Notification::Added {
                in_initial_list: true,
                ..
            }
        )),
        "replay: {}",
        describe(&replay)
    );

    let live = api
        .create(&post_params(), &configmap("l-live", "x"))
        .await?;
    let next = late
        .wait_for(WAIT, "live add after the replay", |log| {
            log.get(expected.len()).cloned()
        })
        .await?;
    ensure!(
        matches!(&next, Notification::Added { object, in_initial_list: false } if rv_of(object.as_ref()) == rv_of(&live)),
        "expected the live add right after the replay, got {}",
        describe([&next])
    );
    stop(&informer, run).await?;
    ns.delete().await
}

/// The Pod informer (Pods are admitted without service accounts here, and
/// an unscheduled Pod goes away without a kubelet): add, relabel, delete.
#[tokio::test]
async fn e2e_i1_i2_pods_add_update_delete() -> Result<()> {
    let Some(Scene {
        client, ns, _hold, ..
    }) = Scene::start("e2e_i1_i2_pods_add_update_delete", Access::Shared).await?
    else {
        return Ok(());
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);

    let informer = Informer::builder(pods.clone()).cache_from_env().build();
    let recorder = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
    let run = spawn_run(&informer);
    synced(&informer).await?;

    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "p" },
        "spec": { "containers": [{ "name": "c", "image": "registry.invalid/none:1" }] },
    }))?;
    let created = pods.create(&post_params(), &pod).await?;
    let patch = serde_json::json!({ "metadata": { "labels": { "seen": "yes" } } });
    let updated = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    pods.delete("p", &DeleteParams::default()).await?;
    let seen = recorder
        .wait_for(WAIT, "pod add, update, delete", |log| {
            let notes = about(log, "p");
            matches!(notes.last(), Some(Notification::Deleted { .. }))
                .then(|| notes.into_iter().cloned().collect::<Vec<_>>())
        })
        .await?;
    // Deleting a Pod first stamps it with a deletionTimestamp (an update the
    // watch reports; kube-apiserver 1.34 does so even for an unscheduled
    // Pod with no kubelet to wait for), then removes it.
    let (marking, changes): (Vec<_>, Vec<_>) = seen.iter().partition(|n| {
        matches!(n, Notification::Updated { new, .. } if new.metadata.deletion_timestamp.is_some())
    });
    ensure!(marking.len() <= 1, "pod notifications: {}", describe(&seen));
    ensure!(
        matches!(
            changes.as_slice(),
            [
                Notification::Added { object, in_initial_list: false },
                Notification::Updated { new, resync: false, .. },
                Notification::Deleted { final_state_unknown: false, .. },
            ] if rv_of(object.as_ref()) == rv_of(&created) && rv_of(new.as_ref()) == rv_of(&updated)
        ),
        "pod notifications: {}",
        describe(&seen)
    );
    ensure!(informer.store().is_empty());
    stop(&informer, run).await?;
    // TestNamespace::delete only empties ConfigMaps; the Pod is gone already.
    ns.delete().await
}
