//! kube-runtime's `configmapgen_controller` as a user ports it: a
//! generator custom resource (with a status subresource) that owns a
//! ConfigMap, a finalizer that deletes the ConfigMap before the generator
//! goes, a status write of what was applied, and the controller filtered
//! by `changed::generation()`; through seeded simulations of the fake
//! API server under the default [`FaultMix`].
//!
//! Rules:
//! - Z9: the finalizer's addition bumps no generation, so the predicate
//!   drops its echo; every generator is applied all the same (the run
//!   converges: each live generator has the finalizer, its ConfigMap and
//!   its status).
//! - Z10, Z11: the helper writes through the `RecordedApi` of the log the
//!   controller reads its own writes from, and each generator that was
//!   applied and then deleted is cleaned up exactly once, on every one of
//!   [`SEEDS`] seeds, while requests fail, writes conflict and watches
//!   break and lag. A cleanup here retries its own delete until it lands,
//!   so it always succeeds: a second `Cleanup` event could only come from
//!   a removal that failed after it, or from a cache that still showed the
//!   finalizer after the removal. No hold of the gate waits out its
//!   deadline: the removal that let a generator go is recorded as its
//!   deletion (RW9), which the cache does come to show.

use crate::simulation_common;

use crate::cache_mode_common::CacheModeExt;
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, CustomResource, Resource, ResourceExt,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams},
};
use kube_informer::metrics::{ControllerMetrics, MetricsReader};
use kube_informer::{
    Informer, ObjectKey,
    controller::Controller,
    ext::changed,
    finalizer::{self, Event, finalizer},
    own_writes::{RecordedApi, WriteLog},
    runner::Action,
};
use kube_informer_testing::{FaultMix, ResourceType, SimContext, Simulation};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use simulation_common::{gone_or_ok, retry, set_content, source_config};
use tokio_util::sync::CancellationToken;

/// How many seeds the cleanup count is checked on.
const SEEDS: u64 = 100;
const NS: &str = "apps";
const FINALIZER: &str = "configmapgen.kube-informer.dev/cleanup";
const MANAGER: &str = "configmapgen.kube-informer.dev";
const STEPS: u64 = 12;
/// How long the controller may take to converge once faults stop: its
/// requeue is 5 minutes, and nothing here needs it.
const CONVERGE_WITHIN: Duration = Duration::from_secs(120);

/// What a generator asks for: a ConfigMap holding `content`.
#[derive(CustomResource, Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "nullable.se",
    version = "v1",
    kind = "ConfigMapGenerator",
    namespaced,
    status = "GeneratorStatus",
    derive = "PartialEq"
)]
pub struct ConfigMapGeneratorSpec {
    /// The value of the ConfigMap's `content` key.
    pub content: String,
}

/// What the controller last applied.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratorStatus {
    /// The content the ConfigMap was last given.
    pub applied_content: Option<String>,
}

/// What the reconciler did, by generator uid.
#[derive(Debug, Default)]
struct Tally {
    applied: BTreeSet<String>,
    cleanups: BTreeMap<String, u32>,
}

struct Context {
    client: Client,
    writes: WriteLog,
    tally: Mutex<Tally>,
}

type ReconcileError = finalizer::Error<kube::Error>;

async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let key = ObjectKey::from_object(&*generator).expect("cached objects have keys");
    let namespace = key.namespace().unwrap_or_default().to_owned();
    let generators = ctx.writes.api(
        Api::<ConfigMapGenerator>::namespaced(ctx.client.clone(), &namespace),
        key.clone(),
    );
    let config_maps = ctx.writes.api(
        Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace),
        key,
    );
    finalizer(&generators, FINALIZER, generator, |event| async {
        match event {
            Event::Apply(generator) => apply(&generator, &generators, &config_maps, &ctx).await,
            Event::Cleanup(generator) => cleanup(&generator, &config_maps, &ctx).await,
        }
    })
    .await
}

/// Applies the ConfigMap, then records what was applied in the status.
async fn apply(
    generator: &ConfigMapGenerator,
    generators: &RecordedApi<ConfigMapGenerator>,
    config_maps: &RecordedApi<ConfigMap>,
    ctx: &Context,
) -> Result<Action, kube::Error> {
    let uid = generator.uid().expect("served objects have uids");
    ctx.tally.lock().applied.insert(uid);
    let content = generator.spec.content.clone();
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(generator.name_any()),
            owner_references: generator.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([("content".to_owned(), content.clone())].into()),
        ..ConfigMap::default()
    };
    config_maps
        .patch(
            &generator.name_any(),
            &PatchParams::apply(MANAGER),
            &Patch::Apply(&config_map),
        )
        .await?;
    let applied = generator
        .status
        .as_ref()
        .and_then(|s| s.applied_content.as_ref());
    if applied != Some(&content) {
        let status = json!({"status": {"appliedContent": content}});
        generators
            .patch_status(
                &generator.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Deletes the ConfigMap, retrying until the delete lands, so that every
/// cleanup succeeds.
async fn cleanup(
    generator: &ConfigMapGenerator,
    config_maps: &RecordedApi<ConfigMap>,
    ctx: &Context,
) -> Result<Action, kube::Error> {
    let uid = generator.uid().expect("served objects have uids");
    *ctx.tally.lock().cleanups.entry(uid).or_default() += 1;
    loop {
        match config_maps
            .delete(&generator.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => return Ok(Action::AwaitChange),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Action::AwaitChange),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn error_policy(_: Arc<ConfigMapGenerator>, _: &ReconcileError, _: Arc<Context>) -> Action {
    Action::backoff()
}

fn generator(name: &str, content: &str) -> ConfigMapGenerator {
    let mut generator = ConfigMapGenerator::new(
        name,
        ConfigMapGeneratorSpec {
            content: content.into(),
        },
    );
    generator.metadata.namespace = Some(NS.into());
    generator
}

/// The user: creates, edits and deletes generators at random.
async fn user(sim: SimContext) {
    let generators: Api<ConfigMapGenerator> = Api::namespaced(sim.client(), NS);
    for step in 0..STEPS {
        tokio::time::sleep(Duration::from_millis(sim.random_below(1500))).await;
        let name = format!("g{}", sim.random_below(4));
        let content = format!("v{step}");
        if sim.random_below(3) == 0 {
            retry(|| async {
                gone_or_ok(generators.delete(&name, &DeleteParams::background()).await)
            })
            .await;
            continue;
        }
        retry(|| set_content(&generators, &name, &content, || generator(&name, &content))).await;
    }
}

/// What is wrong with the server's state, if anything: a generator still
/// being deleted, one without the finalizer, its ConfigMap or its status,
/// or a ConfigMap without a generator.
fn unconverged(sim: &SimContext) -> Option<String> {
    let generators = sim.server().objects::<ConfigMapGenerator>();
    let config_maps: BTreeMap<String, ConfigMap> = sim
        .server()
        .objects::<ConfigMap>()
        .into_iter()
        .filter(|cm| cm.namespace().as_deref() == Some(NS))
        .map(|cm| (cm.name_any(), cm))
        .collect();
    for g in &generators {
        let name = g.name_any();
        if g.meta().deletion_timestamp.is_some() {
            return Some(format!(
                "{name} is still being deleted: {:?}",
                g.finalizers()
            ));
        }
        if g.finalizers() != [FINALIZER] {
            return Some(format!("{name} has finalizers {:?}", g.finalizers()));
        }
        let content = config_maps
            .get(&name)
            .and_then(|cm| cm.data.as_ref()?.get("content"));
        if content != Some(&g.spec.content) {
            return Some(format!(
                "{name}'s ConfigMap holds {content:?}, not {:?}",
                g.spec.content
            ));
        }
        let applied = g.status.as_ref().and_then(|s| s.applied_content.as_ref());
        if applied != Some(&g.spec.content) {
            return Some(format!("{name}'s status says {applied:?}"));
        }
    }
    let live: BTreeSet<String> = generators.iter().map(|g| g.name_any()).collect();
    config_maps
        .keys()
        .find(|name| !live.contains(*name))
        .map(|name| format!("ConfigMap {name} outlived its generator"))
}

/// Runs the scenario; adds the number of deletions checked to `checked`.
async fn each_deletion_is_cleaned_up_once(
    sim: SimContext,
    checked: Arc<AtomicUsize>,
) -> Result<(), String> {
    sim.server().register(
        &ResourceType::new(
            "nullable.se",
            "v1",
            "configmapgenerators",
            "ConfigMapGenerator",
            true,
        )
        .with_status_subresource(true),
    );
    let client = sim.client();
    let writes = WriteLog::new();
    let ctx = Arc::new(Context {
        client: client.clone(),
        writes: writes.clone(),
        tally: Mutex::default(),
    });
    let informer = Informer::builder(Api::<ConfigMapGenerator>::all(client.clone()))
        .cache_from_env()
        .source_config(source_config())
        .decode_threads(1)
        .build();
    let stop = CancellationToken::new();
    let controller = Controller::for_informer(&informer)
        .owns_configured(Api::<ConfigMap>::all(client.clone()), |b| {
            b.source_config(source_config()).decode_threads(1)
        })
        .filter_changes(changed::generation())
        .read_own_writes(writes, Duration::from_secs(60))
        .with_config(kube_informer::controller::Config {
            concurrency: 2,
            ..Default::default()
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let metrics = MetricsReader::<ControllerMetrics>::from(&controller);
    let outcomes = controller.run(reconcile, error_policy, ctx.clone());
    let informer_run = tokio::spawn(informer.clone().run());
    let runner = tokio::spawn(outcomes.count());

    tokio::spawn(user(sim.clone()))
        .await
        .map_err(|e| format!("user task: {e}"))?;
    sim.stop_faults();

    let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
    while let Some(wrong) = unconverged(&sim) {
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "not converged {CONVERGE_WITHIN:?} after faults stopped: {wrong}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    sim.record("converged");
    // Late events of the deletions reach the controller.
    tokio::time::sleep(Duration::from_secs(30)).await;
    stop.cancel();
    let reconciles = runner.await.map_err(|e| format!("runner: {e}"))?;
    informer.stop();
    informer_run
        .await
        .map_err(|e| format!("informer task: {e}"))?
        .map_err(|e| format!("informer: {e}"))?;

    // RW9: every write recorded, the removals that let a generator go
    // among them, is one the caches come to show.
    let expiries = metrics
        .read()
        .map(|m| m.own_write_expiries)
        .unwrap_or_default();
    if expiries != 0 {
        return Err(format!("{expiries} holds waited out their deadline"));
    }
    let live: BTreeSet<String> = sim
        .server()
        .objects::<ConfigMapGenerator>()
        .iter()
        .filter_map(|g| g.uid())
        .collect();
    let tally = ctx.tally.lock();
    let deleted: Vec<&String> = tally
        .applied
        .iter()
        .filter(|uid| !live.contains(*uid))
        .collect();
    for uid in &deleted {
        let cleanups = tally.cleanups.get(*uid).copied().unwrap_or(0);
        if cleanups != 1 {
            return Err(format!(
                "generator {uid} was applied and deleted, and cleaned up {cleanups} times"
            ));
        }
    }
    if let Some((uid, n)) = tally.cleanups.iter().find(|(uid, _)| live.contains(*uid)) {
        return Err(format!("live generator {uid} was cleaned up {n} times"));
    }
    sim.record(format!(
        "{reconciles} reconciles, {} deletions cleaned up once",
        deleted.len()
    ));
    checked.fetch_add(deleted.len(), Ordering::Relaxed);
    Ok(())
}

#[test]
fn z9_z10_z11_each_deletion_is_cleaned_up_once_under_faults() {
    let started = std::time::Instant::now();
    let checked = Arc::new(AtomicUsize::new(0));
    let traces = Simulation::seeds(0..SEEDS)
        .faults(FaultMix::default())
        .run(|sim| each_deletion_is_cleaned_up_once(sim, checked.clone()));
    let deletions = checked.load(Ordering::Relaxed);
    eprintln!(
        "Z11: {} seeds, {deletions} deletions, each cleaned up once, in {:?}",
        traces.len(),
        started.elapsed()
    );
    // The scenario deletes: a run without any deletion would check nothing.
    assert!(
        deletions >= traces.len(),
        "{deletions} deletions in {} seeds",
        traces.len()
    );
}
