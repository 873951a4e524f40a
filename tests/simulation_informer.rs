//! kube-informer's `Informer` through seeded simulations of the fake API
//! server (SI1–SI7 of kube-informer-testing): under drawn list and watch
//! errors, broken and lagging watches, conflicts and latency, its store
//! converges to the server's objects on every seed, and a seed repeats its
//! run byte for byte.
//!
//! - RS9: the store holds exactly the server's objects within 300 s of
//!   simulated time after the faults stop, on 50 seeds.
//! - SI4 (kube-informer-testing): a seed repeats its trace byte for byte.
//!
//! The informer is set up to use no randomness and no other thread: no
//! backoff jitter, a fixed watch timeout, decoding on the runtime thread.

use crate::cache_mode_common::CacheModeExt;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kube_informer::{
    Informer,
    source::{BackoffConfig, Config},
};
use kube_informer_testing::{FaultMix, SimContext, Simulation, Trace};
use serde_json::json;

const WRITERS: u64 = 3;

fn mix() -> FaultMix {
    FaultMix::default()
        .request_errors(0.15)
        .write_conflicts(0.3)
        .watch_breaks(0.3)
        .watch_lag(0.3, Duration::from_secs(2))
        .latency(Duration::from_millis(40))
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

/// A writer: a few rounds of create, guarded update or delete of its own
/// ConfigMaps, each retried until the server takes it.
async fn writer(sim: SimContext, api: Api<ConfigMap>, writer: u64) {
    for round in 0..6 {
        let name = format!("w{writer}-{}", sim.random_below(3));
        tokio::time::sleep(Duration::from_millis(sim.random_below(300))).await;
        let action = sim.random_below(3);
        for _attempt in 0..50 {
            let done = match (action, api.get_opt(&name).await) {
                (_, Err(_)) => false,
                // Nothing to delete.
                (2, Ok(None)) => true,
                (_, Ok(None)) => api.create(&PostParams::default(), &cm(&name)).await.is_ok(),
                (2, Ok(Some(_))) => api.delete(&name, &DeleteParams::default()).await.is_ok(),
                (_, Ok(Some(current))) => {
                    let patch = Patch::Merge(json!({
                        "metadata": {"resourceVersion": current.resource_version()},
                        "data": {"round": round.to_string(), "by": writer.to_string()},
                    }));
                    api.patch(&name, &PatchParams::default(), &patch)
                        .await
                        .is_ok()
                }
            };
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Keys and resourceVersions, sorted.
fn state(objects: impl IntoIterator<Item = ConfigMap>) -> Vec<(String, String)> {
    let mut state: Vec<_> = objects
        .into_iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect();
    state.sort();
    state
}

/// The informer and writers under faults; then faults stop and the
/// informer's store must reach the server's objects.
async fn informer_converges(sim: SimContext) -> Result<(), String> {
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let config = Config::default()
        .backoff(BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        })
        .watch_timeout(Duration::from_secs(60), Duration::from_secs(60))
        .page_size(2);
    let informer = Informer::builder(api.clone())
        .cache_from_env()
        .source_config(config)
        .decode_threads(1)
        .build();
    let run = tokio::spawn(informer.run());
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| tokio::spawn(writer(sim.clone(), api.clone(), w)))
        .collect();
    for w in writers {
        w.await.map_err(|e| format!("writer failed: {e}"))?;
    }
    sim.stop_faults();
    let want = state(sim.server().objects::<ConfigMap>());
    // Faults are off: within a few minutes of simulated time (a backoff, a
    // relist) the store holds exactly the server's objects.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        let have = state(informer.store().list().iter().map(|o| (**o).clone()));
        if have == want {
            sim.record(format!("converged on {want:?}"));
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "store {have:?} never reached the server's {want:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    informer.stop();
    run.await
        .map_err(|e| format!("informer task: {e}"))?
        .map_err(|e| format!("informer: {e}"))
}

#[test]
fn rs9_informer_store_converges_to_the_servers_objects_on_50_seeds() {
    let traces = Simulation::seeds(0..50)
        .faults(mix())
        .run(informer_converges);
    // The schedule did inject faults of each kind across the seeds.
    let text: String = traces.iter().map(Trace::to_string).collect();
    for fault in [
        "409 Conflict",
        "500 InternalError",
        "DropConnection",
        "lag ",
        "ErrorEvent",
    ] {
        assert!(text.contains(fault), "no {fault:?} in 50 seeds");
    }
}

#[test]
fn si4_informer_same_seed_same_trace_other_seed_other_trace() {
    let run = |seed| Simulation::new(seed).faults(mix()).run(informer_converges);
    let mut fingerprints = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let (a, b) = (run(seed), run(seed));
        assert_eq!(
            a.to_string(),
            b.to_string(),
            "seed {seed} ran differently twice"
        );
        assert_eq!(a.fingerprint(), b.fingerprint());
        fingerprints.insert(a.fingerprint());
    }
    assert_eq!(fingerprints.len(), 20, "each seed is its own run");
}
