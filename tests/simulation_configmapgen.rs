//! `examples/configmapgen.rs` (its own reconciler and error policy,
//! compiled into this test) through seeded simulations of the fake API
//! server.
//!
//! Rules:
//! - RS4: under the default [`FaultMix`], while a user edits, creates and
//!   deletes generators, deletes generated ConfigMaps by hand and asks for
//!   a reconcile of every generator, the example converges on every one of
//!   1,000 seeds: once faults stop, within a bounded simulated time every
//!   generator has a ConfigMap of its name holding its content, applied by
//!   the example's field manager with a controller owner reference to it;
//!   a deleted generator's ConfigMap is gone (garbage collection); and the
//!   example's periodic re-applies then change nothing (no duplicate
//!   writes).
//!
//! The wiring is the example's `main` (a controller of the generators that
//! owns ConfigMaps, concurrency 2, reconcile of every generator on a
//! tick), with the informers set up to draw nothing at random and to
//! decode on the runtime's thread.

#[allow(dead_code)] // the example's `main`
#[path = "../examples/configmapgen.rs"]
mod configmapgen;
use crate::simulation_common;

use crate::cache_mode_common::CacheModeExt;
use std::{collections::BTreeMap, sync::Arc, time::Duration};

use configmapgen::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use futures::{StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, PostParams},
};
use kube_informer::{Informer, controller::Controller};
use kube_informer_testing::{FaultMix, ResourceType, SimContext, Simulation};
use simulation_common::{gone_or_ok, retry, set_content, source_config};
use tokio_util::sync::CancellationToken;

const NS: &str = "apps";
/// The example's field manager.
const MANAGER: &str = "configmapgen.kube-informer.dev";
const STEPS: u64 = 8;
/// Longer than the example's 5-minute requeue: a ConfigMap deleted by hand
/// that the owned objects' informer never saw (its creation and deletion
/// both fell into a watch break and relist, seed 451) raises no event, and
/// the generator's next requeue is what makes it again.
const CONVERGE_WITHIN: Duration = Duration::from_secs(360);
const SETTLE: Duration = Duration::from_secs(30);
/// Longer than the example's 5-minute requeue.
const QUIET_FOR: Duration = Duration::from_secs(400);

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

/// The user: random edits, creations and deletions of generators, hand
/// deletions of their ConfigMaps, and ticks.
async fn user(sim: SimContext, ticks: mpsc::UnboundedSender<()>) {
    let generators: Api<ConfigMapGenerator> = Api::namespaced(sim.client(), NS);
    let config_maps: Api<ConfigMap> = Api::namespaced(sim.client(), NS);
    for step in 0..STEPS {
        tokio::time::sleep(Duration::from_millis(sim.random_below(1500))).await;
        let name = format!("g{}", sim.random_below(4));
        let content = format!("v{step}");
        match sim.random_below(5) {
            0 | 1 => {
                retry(|| set_content(&generators, &name, &content, || generator(&name, &content)))
                    .await;
            }
            2 => {
                retry(|| async {
                    gone_or_ok(generators.delete(&name, &DeleteParams::background()).await)
                })
                .await;
            }
            3 => {
                retry(|| async {
                    gone_or_ok(config_maps.delete(&name, &DeleteParams::default()).await)
                })
                .await;
            }
            _ => {
                let _ = ticks.unbounded_send(());
            }
        }
    }
}

/// What a ConfigMap is checked for: content, controller owner uid, and
/// whether the example's manager applied it.
type Generated = (Option<String>, Option<String>, bool);

fn wanted(sim: &SimContext) -> BTreeMap<String, Generated> {
    sim.server()
        .objects::<ConfigMapGenerator>()
        .into_iter()
        .filter(|g| g.meta().deletion_timestamp.is_none())
        .map(|g| {
            let generated = (Some(g.spec.content.clone()), g.uid(), true);
            (g.name_any(), generated)
        })
        .collect()
}

fn held(sim: &SimContext) -> BTreeMap<String, Generated> {
    sim.server()
        .objects::<ConfigMap>()
        .into_iter()
        .filter(|cm| cm.namespace().as_deref() == Some(NS))
        .map(|cm| {
            let content = cm.data.as_ref().and_then(|d| d.get("content").cloned());
            let owner = cm
                .owner_references()
                .iter()
                .find(|o| o.controller == Some(true) && o.kind == "ConfigMapGenerator")
                .map(|o| o.uid.clone());
            let applied = cm.managed_fields().iter().any(|m| {
                m.manager.as_deref() == Some(MANAGER) && m.operation.as_deref() == Some("Apply")
            });
            (cm.name_any(), (content, owner, applied))
        })
        .collect()
}

async fn configmapgen_converges(sim: SimContext) -> Result<(), String> {
    sim.server().register(&ResourceType::new(
        "nullable.se",
        "v1",
        "configmapgenerators",
        "ConfigMapGenerator",
        true,
    ));
    let client = sim.client();
    let generators: Api<ConfigMapGenerator> = Api::namespaced(client.clone(), NS);
    for name in ["g0", "g1"] {
        retry(|| async {
            gone_or_ok(
                generators
                    .create(&PostParams::default(), &generator(name, "initial"))
                    .await,
            ) || generators.get_opt(name).await.is_ok_and(|g| g.is_some())
        })
        .await;
    }

    // The example's wiring.
    let informer = Informer::builder(Api::<ConfigMapGenerator>::all(client.clone()))
        .cache_from_env()
        .source_config(source_config())
        .decode_threads(1)
        .build();
    let (tick, ticks) = mpsc::unbounded();
    let stop = CancellationToken::new();
    let outcomes = Controller::for_informer(&informer)
        .owns_configured(Api::<ConfigMap>::all(client.clone()), |b| {
            b.source_config(source_config()).decode_threads(1)
        })
        .with_config(kube_informer::controller::Config {
            concurrency: 2,
            ..Default::default()
        })
        .reconcile_all_on(ticks)
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            configmapgen::reconcile,
            configmapgen::error_policy,
            Arc::new(client.clone()),
        );
    let informer_run = tokio::spawn(informer.clone().run());
    let runner = tokio::spawn(outcomes.count());

    tokio::spawn(user(sim.clone(), tick))
        .await
        .map_err(|e| format!("user task: {e}"))?;
    sim.stop_faults();

    let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
    loop {
        let (want, have) = (wanted(&sim), held(&sim));
        if want == have {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "the ConfigMaps did not converge within {CONVERGE_WITHIN:?} after faults \
                 stopped:\nwant {want:?}\nhave {have:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    sim.record("converged");
    tokio::time::sleep(SETTLE).await;
    let rv = sim.server().resource_version();
    tokio::time::sleep(QUIET_FOR).await;
    if sim.server().resource_version() != rv {
        return Err(format!(
            "the example kept changing objects after it converged (resourceVersion {rv} -> {})",
            sim.server().resource_version()
        ));
    }
    if wanted(&sim) != held(&sim) {
        return Err("the ConfigMaps moved after they converged".into());
    }
    stop.cancel();
    let reconciles = runner.await.map_err(|e| format!("runner: {e}"))?;
    informer.stop();
    informer_run
        .await
        .map_err(|e| format!("informer task: {e}"))?
        .map_err(|e| format!("informer: {e}"))?;
    sim.record(format!("{reconciles} reconciles"));
    Ok(())
}

#[test]
fn rs4_configmapgen_converges_on_1000_seeds() {
    let started = std::time::Instant::now();
    let traces = Simulation::seeds(0..1000)
        .faults(FaultMix::default())
        .run(configmapgen_converges);
    eprintln!(
        "RS4: {} seeds converged in {:?}",
        traces.len(),
        started.elapsed()
    );
}
