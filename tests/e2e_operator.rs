//! The mirror operator of `examples/operator/` against a real kube-apiserver:
//! 200 sources, 5 target namespaces, sources and namespaces changed while it
//! runs, the apiserver killed and restarted mid-way, and some keys failing on
//! purpose in the reconciler. At the end the copies on the server are exactly
//! the desired ones; no key was reconciled by two workers at once (every
//! reconcile's interval is recorded); the keys that failed were retried with
//! growing delays.
//!
//! The operator's code is the example's own (its modules are compiled into
//! this test); only the reconcile function is wrapped, to record and to fail.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.

use crate::e2e_support;

#[allow(dead_code)] // the example's helpers this test does not call
#[path = "../examples/operator/controller.rs"]
mod controller;
#[allow(dead_code)]
#[path = "../examples/operator/mirror.rs"]
mod mirror;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use e2e_support::informer::WAIT;
use e2e_support::{Access, Scene, TestNamespace, configmap, post_params, within};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use kube_informer::ObjectKey;
use kube_informer::informer::Defaults;
use kube_informer::metrics::{ControllerMetrics, MetricsReader};
use kube_informer::runner::Action;
use kube_informer::source::{self, BackoffConfig};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use controller::Operator;
use mirror::Labels;

const SOURCES: usize = 200;
const TARGETS: usize = 5;
const WORKERS: usize = 8;
/// Every `FAIL_EVERY`th source fails its first `FAILURES` reconciles.
const FAIL_EVERY: usize = 20;
const FAILURES: usize = 6;
/// The default rate limiter's first per-item delay (W8).
const BASE_DELAY: Duration = Duration::from_millis(5);

/// What the wrapped reconciler saw.
#[derive(Default)]
struct Log {
    /// Keys being reconciled right now.
    in_flight: HashSet<ObjectKey>,
    /// Reconciles that began while their key was already in flight.
    overlaps: Vec<ObjectKey>,
    /// Every reconcile: key, start, end.
    intervals: Vec<(ObjectKey, Instant, Instant)>,
    /// Start of every attempt of the keys meant to fail, and whether it failed.
    attempts: HashMap<ObjectKey, Vec<(Instant, bool)>>,
}

/// The labels of this run only, so nothing else in the cluster is mirrored.
fn run_labels() -> Labels {
    let id = std::process::id();
    Labels {
        source: format!("e2e-mirror-{id}"),
        target: format!("e2e-mirror-target-{id}"),
        copy_of: format!("mirror.kube-informer.dev/source-{id}"),
    }
}

fn source_name(i: usize) -> String {
    format!("src-{i:03}")
}

/// The copies the cluster should hold, computed from the server's objects
/// apart from the operator's code: `namespace/name` → data.
async fn desired(
    client: &Client,
    labels: &Labels,
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    let targets: Vec<String> = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default().labels(&labels.targets()))
        .await?
        .items
        .into_iter()
        .filter(|ns| ns.metadata.deletion_timestamp.is_none())
        .map(|ns| ns.name_any())
        .collect();
    let sources = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default().labels(&labels.sources()))
        .await?;
    let mut want = BTreeMap::new();
    for source in sources.items {
        let home = source.namespace().unwrap_or_default();
        for ns in targets.iter().filter(|ns| **ns != home) {
            want.insert(
                format!("{ns}/{home}.{}", source.name_any()),
                source.data.clone().unwrap_or_default(),
            );
        }
    }
    Ok(want)
}

/// The copies the cluster holds: `namespace/name` → data.
async fn actual(
    client: &Client,
    labels: &Labels,
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    Ok(Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default().labels(&labels.copies()))
        .await?
        .items
        .into_iter()
        .map(|cm| {
            (
                format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any()),
                cm.data.unwrap_or_default(),
            )
        })
        .collect())
}

/// Waits (bounded) until the copies are the desired ones.
async fn converged(client: &Client, labels: &Labels, what: &str) -> Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let (want, have) = (
            desired(client, labels).await?,
            actual(client, labels).await?,
        );
        if want == have {
            return Ok(have.len());
        }
        if Instant::now() > deadline {
            let missing: Vec<_> = want
                .keys()
                .filter(|k| !have.contains_key(*k))
                .take(5)
                .collect();
            let extra: Vec<_> = have
                .keys()
                .filter(|k| !want.contains_key(*k))
                .take(5)
                .collect();
            let stale: Vec<_> = want
                .iter()
                .filter(|(k, v)| have.get(*k).is_some_and(|h| h != *v))
                .map(|(k, _)| k)
                .take(5)
                .collect();
            return Err(anyhow!(
                "{what}: copies differ from the desired state after 180 s ({} wanted, {} held); \
                 missing {missing:?}, extra {extra:?}, stale {stale:?}",
                want.len(),
                have.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn set_ns_label(client: &Client, ns: &str, key: &str, value: Option<&str>) -> Result<()> {
    Api::<Namespace>::all(client.clone())
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {key: value}}})),
        )
        .await
        .with_context(|| format!("labelling namespace {ns}"))?;
    Ok(())
}

/// Runs `patch` on each named source, ten at a time.
async fn patch_sources(
    api: &Api<ConfigMap>,
    names: Vec<String>,
    patch: serde_json::Value,
) -> Result<()> {
    stream::iter(names)
        .map(|name| {
            let (api, patch) = (api.clone(), patch.clone());
            async move {
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .with_context(|| format!("patching {name}"))
            }
        })
        .buffer_unordered(10)
        .try_collect::<Vec<_>>()
        .await
        .map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn e2e_operator_mirror() -> Result<()> {
    let Some(Scene {
        cluster,
        client,
        ns: home,
        _hold,
    }) = Scene::start("e2e_operator_mirror", Access::Exclusive).await?
    else {
        return Ok(());
    };
    let labels = run_labels();
    let sources = home.configmaps();

    // 5 target namespaces, one more that becomes a target later, and 200
    // sources (every 10th without the label: not mirrored).
    let mut targets = Vec::new();
    for _ in 0..TARGETS {
        let ns = TestNamespace::create(&client, "op-target").await?;
        set_ns_label(&client, &ns.name, &labels.target, Some("true")).await?;
        targets.push(ns);
    }
    let late = TestNamespace::create(&client, "op-late").await?;
    stream::iter(0..SOURCES)
        .map(|i| {
            let api = sources.clone();
            let label = labels.source.clone();
            async move {
                let mut cm = configmap(&source_name(i), &format!("v1-{i}"));
                if i % 10 != 9 {
                    cm.metadata.labels = Some([(label, "true".to_owned())].into());
                }
                api.create(&post_params(), &cm).await
            }
        })
        .buffer_unordered(20)
        .try_collect::<Vec<_>>()
        .await
        .context("creating the sources")?;
    let failing: HashSet<ObjectKey> = (0..SOURCES)
        .step_by(FAIL_EVERY)
        .map(|i| ObjectKey::new(Some(&home.name), &source_name(i)).expect("valid key"))
        .collect();

    // The operator, with its reconcile wrapped to record and to fail.
    let stop = CancellationToken::new();
    // No periodic resync during the test: it would re-add every key and
    // blur the retry delays measured below. The sweep still runs on every
    // relist (the restart forces some).
    let resync = Duration::from_secs(3600);
    // Quick list/watch retries, so the restart is not waited out.
    let defaults = Defaults {
        source_config: Some(source::Config::default().backoff(BackoffConfig {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(2),
            factor: 2.0,
            jitter: 0.5,
            reset_after: Duration::from_secs(120),
        })),
        ..Defaults::default()
    };
    let operator = within(WAIT, "operator sync", async {
        Operator::start(client.clone(), labels.clone(), resync, defaults)
            .await
            .map_err(|e| anyhow!(e))
    })
    .await?;
    let log = Arc::new(Mutex::new(Log::default()));
    let mirror = Arc::new(operator.mirror);
    let recorder = log.clone();
    // Woken whenever a reconcile starts or ends, for the waits below.
    let activity = Arc::new(Notify::new());
    let reconciling = activity.clone();
    let failing_keys = Arc::new(failing.clone());
    let armed = Arc::new(AtomicBool::new(false));
    let arm = armed.clone();
    let reconciles = MetricsReader::<ControllerMetrics>::from(&operator.controller);
    let outcomes = operator
        .controller
        .with_config(kube_informer::controller::Config {
            concurrency: WORKERS,
            ..Default::default()
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run_by_key(
            move |key: ObjectKey, source, _ctx: Arc<()>| {
                let (mirror, log) = (mirror.clone(), recorder.clone());
                let activity = reconciling.clone();
                let failing = failing_keys.clone();
                let armed = arm.load(Ordering::SeqCst);
                async move {
                    let start = Instant::now();
                    let fail = {
                        let mut log = log.lock();
                        if !log.in_flight.insert(key.clone()) {
                            log.overlaps.push(key.clone());
                        }
                        let watched = armed && failing.contains(&key);
                        let fail = watched && log.attempts.get(&key).map_or(0, Vec::len) < FAILURES;
                        if watched {
                            log.attempts
                                .entry(key.clone())
                                .or_default()
                                .push((start, fail));
                        }
                        fail
                    };
                    activity.notify_waiters();
                    let result = if fail {
                        Err(anyhow!("failing on purpose"))
                    } else {
                        // Hold the key a little so an overlap would show.
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        mirror
                            .reconcile(&key, source)
                            .await
                            .map_err(anyhow::Error::from)
                    };
                    {
                        let mut log = log.lock();
                        log.in_flight.remove(&key);
                        log.intervals.push((key, start, Instant::now()));
                    }
                    activity.notify_waiters();
                    result
                }
            },
            |_, _, _| Action::backoff(),
            Arc::new(()),
        );
    let runner = tokio::spawn(async move {
        outcomes
            .fold(0usize, |failed, outcome| async move {
                failed + usize::from(outcome.is_err())
            })
            .await
    });

    // Phase 1: everything mirrored.
    let copies = converged(&client, &labels, "initial mirror").await?;
    ensure!(
        copies == 180 * TARGETS,
        "{copies} copies, expected {}",
        180 * TARGETS
    );

    // Phase 2, quiet: the failing keys are edited once each and fail their
    // next reconciles; nothing else adds them meanwhile (they write no
    // copies, nothing else changes), so each retry is the rate limiter's.
    // The server converged above, but the operator's informers may still
    // be delivering the last copies' events (on a busy machine they came
    // late, and one added a failing key between its retries): phase 2
    // starts once no reconcile has started or ended for a second.
    within(WAIT, "a quiet operator", async {
        loop {
            let changed = activity.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !log.lock().in_flight.is_empty() {
                changed.await;
            } else if tokio::time::timeout(Duration::from_secs(1), changed)
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    })
    .await?;
    armed.store(true, Ordering::SeqCst);
    let failing_names: Vec<String> = failing.iter().map(|k| k.name().to_owned()).collect();
    patch_sources(
        &sources,
        failing_names,
        json!({"data": {"value": "edited"}}),
    )
    .await?;
    within(WAIT, "the failing keys' retries", async {
        loop {
            let changed = activity.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let done = {
                let log = log.lock();
                failing
                    .iter()
                    .all(|k| log.attempts.get(k).is_some_and(|a| a.len() > FAILURES))
            };
            if done {
                return Ok(());
            }
            changed.await;
        }
    })
    .await?;
    converged(&client, &labels, "after the failing keys").await?;

    // Phase 3: changes while the operator runs, the apiserver killed
    // between two batches.
    let names = |range: std::ops::Range<usize>| range.map(source_name).collect::<Vec<_>>();
    patch_sources(&sources, names(0..40), json!({"data": {"value": "v2"}})).await?;
    patch_sources(
        &sources,
        names(40..60),
        json!({"metadata": {"labels": {labels.source.clone(): null}}}),
    )
    .await?;
    for name in names(60..80) {
        sources.delete(&name, &DeleteParams::default()).await?;
    }
    set_ns_label(&client, &targets[0].name, &labels.target, None).await?;

    cluster
        .restart_apiserver(true, Duration::from_secs(2))
        .await
        .context("restarting the apiserver")?;

    patch_sources(
        &sources,
        names(80..120),
        json!({"data": {"value": "v3", "extra": "x"}}),
    )
    .await?;
    // Sources that were never labelled become sources.
    patch_sources(
        &sources,
        (0..SOURCES)
            .filter(|i| i % 10 == 9)
            .take(5)
            .map(source_name)
            .collect(),
        json!({"metadata": {"labels": {labels.source.clone(): "true"}}}),
    )
    .await?;
    for i in SOURCES..SOURCES + 10 {
        let mut cm = configmap(&source_name(i), "new");
        cm.metadata.labels = Some([(labels.source.clone(), "true".to_owned())].into());
        sources.create(&post_params(), &cm).await?;
    }
    set_ns_label(&client, &late.name, &labels.target, Some("true")).await?;
    // A target namespace deleted: it stays Terminating (no namespace
    // controller here) and must hold no copies.
    let doomed = targets.pop().expect("five targets");
    let doomed_name = doomed.name.clone();
    doomed.delete().await?;
    // A copy edited by hand and one deleted by hand are repaired.
    let in_target = |ns: &str| Api::<ConfigMap>::namespaced(client.clone(), ns);
    let copy_name = format!("{}.{}", home.name, source_name(150));
    in_target(&targets[1].name)
        .patch(
            &copy_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": "tampered"}})),
        )
        .await?;
    in_target(&targets[2].name)
        .delete(&copy_name, &DeleteParams::default())
        .await?;

    let copies = converged(&client, &labels, "after the changes and the restart").await?;
    let in_doomed = actual(&client, &labels)
        .await?
        .keys()
        .filter(|k| k.starts_with(&format!("{doomed_name}/")))
        .count();
    ensure!(
        in_doomed == 0,
        "{in_doomed} copies left in the terminating namespace"
    );

    stop.cancel();
    let failed = within(WAIT, "runner end", async { Ok(runner.await?) }).await?;
    let (sources, copied, namespaces) = &operator.informers;
    let list_watch_errors =
        sources.metrics().errors + copied.metrics().errors + namespaces.metrics().errors;
    within(WAIT, "operator stop", async {
        operator.factory.shutdown().await;
        Ok(())
    })
    .await?;
    let counted = reconciles.read().map(|m| m.reconciles).unwrap_or_default();
    ensure!(
        counted.error == failed as u64,
        "the controller's metrics count {} failed reconciles, the stream yielded {failed}",
        counted.error
    );

    // No key was ever held by two reconciles.
    let log = Arc::try_unwrap(log)
        .map_err(|_| anyhow!("the runner still holds the log"))?
        .into_inner();
    ensure!(
        log.overlaps.is_empty(),
        "reconciles overlapped for {:?}",
        log.overlaps
    );
    let mut by_key: HashMap<&ObjectKey, Vec<(Instant, Instant)>> = HashMap::new();
    for (key, start, end) in &log.intervals {
        by_key.entry(key).or_default().push((*start, *end));
    }
    for (key, intervals) in &mut by_key {
        intervals.sort();
        for pair in intervals.windows(2) {
            ensure!(
                pair[0].1 <= pair[1].0,
                "two reconciles of {key} overlapped: {pair:?}"
            );
        }
    }

    // The failing keys: each failed FAILURES times, then succeeded; the
    // gaps between attempts are at least the limiter's delays (5 ms
    // doubling), and they grow: the last is more than twice the shortest
    // of the others, which a limiter with one fixed delay never gives. A
    // pause of the machine only lengthens the gaps it falls in, so it
    // would take one in each of the earlier gaps to break this.
    let mut gap_report = Vec::new();
    for key in &failing {
        let attempts = log
            .attempts
            .get(key)
            .with_context(|| format!("{key} was never reconciled"))?;
        ensure!(
            attempts.len() > FAILURES,
            "{key}: {} attempts",
            attempts.len()
        );
        ensure!(
            attempts[..FAILURES].iter().all(|(_, failed)| *failed) && !attempts[FAILURES].1,
            "{key}: {attempts:?}"
        );
        let gaps: Vec<Duration> = attempts[..=FAILURES]
            .windows(2)
            .map(|w| w[1].0 - w[0].0)
            .collect();
        for (n, gap) in gaps.iter().enumerate() {
            let floor = BASE_DELAY * 2u32.pow(n as u32);
            ensure!(
                *gap + Duration::from_millis(2) >= floor,
                "{key}: retry {n} after {gap:?}, under the limiter's {floor:?} (gaps {gaps:?})"
            );
        }
        gap_report.push(format!("{}: {gaps:?}", key.name()));
        let shortest = *gaps[..FAILURES - 1].iter().min().context("gaps")?;
        ensure!(
            gaps[FAILURES - 1] > shortest * 2,
            "{key}: retry delays did not grow: {gaps:?}"
        );
    }
    eprintln!(
        "e2e_operator_mirror: {} copies at the end, {} reconciles ({failed} failed and retried), \
         {list_watch_errors} list/watch errors across the restart",
        copies,
        log.intervals.len()
    );
    gap_report.sort();
    eprintln!(
        "retry gaps of the keys failing on purpose: {}",
        gap_report.join("; ")
    );

    for ns in targets {
        ns.delete().await?;
    }
    late.delete().await?;
    home.delete().await?;
    Ok(())
}
