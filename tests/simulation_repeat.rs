//! A controller of this crate through seeded simulations, built with the
//! `deterministic` feature: the same seed repeats its run exactly, even
//! though the controller reconciles every key on a tick (`list_keys`, the
//! store's iteration order) and its reconciles write back under faults.
//!
//! - RS8: two runs of a seed give byte-identical traces (requests, events,
//!   faults and the order the reconciler saw keys in); other seeds give
//!   other traces.

use crate::cache_mode_common::CacheModeExt;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use kube_informer::{
    Controller, Informer,
    runner::Action,
    source::{BackoffConfig, Config},
};
use kube_informer_testing::{FaultMix, SimContext, Simulation, Trace};
use serde_json::json;

const OBJECTS: usize = 12;

fn mix() -> FaultMix {
    FaultMix::default()
        .request_errors(0.1)
        .write_conflicts(0.2)
        .watch_breaks(0.2)
        .watch_lag(0.2, Duration::from_secs(1))
        .latency(Duration::from_millis(30))
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

/// Reconciles every ConfigMap on each of a few ticks, stamping the
/// resourceVersion it saw into an annotation with a resourceVersion precondition; records each key
/// it is handed, in order.
async fn controller_run(sim: SimContext) -> Result<(), String> {
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    for i in 0..OBJECTS {
        // Creates are retried: the mix fails some requests.
        while api
            .create(&PostParams::default(), &cm(&format!("cm-{i:02}")))
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let config = Config::default()
        .backoff(BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        })
        .watch_timeout(Duration::from_secs(60), Duration::from_secs(60));
    let informer = Informer::builder(api.clone())
        .cache_from_env()
        .source_config(config)
        .decode_threads(1)
        .build();
    let ticks = futures::stream::iter(0..3).then(|_| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let controller = Controller::for_informer(&informer)
        .with_config(kube_informer::controller::Config {
            concurrency: 2,
            ..Default::default()
        })
        .reconcile_all_on(ticks);
    let run = tokio::spawn(informer.clone().run());
    let reconcile = {
        let sim = sim.clone();
        move |cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>| {
            let sim = sim.clone();
            async move {
                sim.record(format!("reconcile {}", cm.name_any()));
                let patch = Patch::Merge(json!({
                    "metadata": {
                        "resourceVersion": cm.resource_version(),
                        "annotations": {"seen": cm.resource_version()},
                    },
                }));
                api.patch(&cm.name_any(), &PatchParams::default(), &patch)
                    .await
                    .map(|_| Action::await_change())
            }
        }
    };
    let outcomes = controller
        .graceful_shutdown_on(tokio::time::sleep(Duration::from_secs(40)))
        .run(
            reconcile,
            |_, _: &kube::Error, _| Action::backoff(),
            Arc::new(api),
        );
    let count = outcomes.count().await;
    sim.record(format!("{count} outcomes"));
    informer.stop();
    run.await
        .map_err(|e| format!("informer task: {e}"))?
        .map_err(|e| format!("informer: {e}"))
}

fn run(seed: u64) -> Trace {
    Simulation::new(seed).faults(mix()).run(controller_run)
}

#[test]
fn rs8_a_seed_repeats_a_controllers_run_byte_for_byte() {
    let mut fingerprints = Vec::new();
    for seed in 0..8 {
        let first = run(seed);
        let second = run(seed);
        assert!(
            first.lines().iter().any(|l| l.contains("reconcile cm-")),
            "seed {seed}: the controller reconciled nothing:\n{first}"
        );
        if first.to_string() != second.to_string() {
            let at = first
                .lines()
                .iter()
                .zip(second.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(first.lines().len().min(second.lines().len()));
            panic!(
                "seed {seed} ran differently the second time, from line {at}:\n  {:?}\n  {:?}",
                first.lines().get(at),
                second.lines().get(at)
            );
        }
        fingerprints.push(first.fingerprint());
    }
    fingerprints.sort_unstable();
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 8, "every seed is a run of its own");
}
