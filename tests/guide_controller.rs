// The guide's controller on seeded simulations of the fake API server
// (the guide's chapter "Testing your controller on the simulator" shows
// this file whole and runs it with seed 1). The rules it checks are the
// controller's, listed in the chapter "Writing a controller":
// - CMG1 a generator's ConfigMap holds its content, names it as its
//   controller and was applied by the controller's field manager; a write
//   refused on the way is reported and tried again;
// - CMG2 the status reports the generation the ConfigMap shows;
// - CMG3 a live generator carries the finalizer and a catalogue entry; a
//   deleted one stays until the entry is withdrawn, then goes;
// - CMG4 deleting a generator with the default DeleteParams takes its
//   ConfigMap with it (garbage collection, background propagation).

// In a test of your own crate this is `use my_operator::configmapgen;`;
// here the guide's controller is compiled in from its file.
#[allow(dead_code)] // `serve` is the program's entry point, not the test's
mod configmapgen {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/configmapgen.rs"
    ));
}

use std::{sync::Arc, time::Duration};

use configmapgen::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Context, FINALIZER, MANAGER, ReconcileError,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, CustomResourceExt, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kube_informer::{
    CancellationToken, InformerFactory, controller, finalizer,
    informer::Defaults,
    source::{self, BackoffConfig},
};
use kube_informer_testing::{FaultMix, SimContext, Simulation, WriteTarget};
use serde_json::json;
use tokio::time::{Instant, sleep};

const NS: &str = "apps";

/// CMG1–CMG4 through broken and lagging watches, slow answers and one
/// refused write, on 20 seeds. A failing seed prints itself and how to
/// run it alone (`SIM_SEED=<seed>`).
#[test]
fn cmg1_cmg2_cmg3_cmg4_create_edit_delete_on_20_seeds() {
    Simulation::seeds(0..20)
        .faults(faults())
        .run(create_edit_delete);
}

/// Watches that break or lag and answers that come late, drawn from the
/// seed. No request fails at random, so the test's own writes need no
/// retries; the one refused write is injected where the test expects it.
fn faults() -> FaultMix {
    FaultMix::none()
        .watch_breaks(0.2)
        .watch_lag(0.2, Duration::from_secs(2))
        .latency(Duration::from_millis(50))
}

async fn create_edit_delete(sim: SimContext) -> Result<(), String> {
    let server = sim.server();
    server
        .register_crd(&ConfigMapGenerator::crd())
        .map_err(|e| format!("{e:?}"))?;
    // The controller's first write to the ConfigMap is answered 409.
    server.inject_write_conflict(WriteTarget::object::<ConfigMap>(Some(NS), "web"), 0);

    // The program's wiring (`controller`), with what makes a seed repeat:
    // no backoff jitter, fixed watch timeouts, decoding on the runtime's
    // one thread (and kube-informer's `deterministic` feature).
    let repeatable = source::Config::default()
        .backoff(BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        })
        .watch_timeout(Duration::from_secs(60), Duration::from_secs(60));
    let defaults = Defaults {
        source_config: Some(repeatable),
        decode_threads: Some(1),
        ..configmapgen::defaults()
    };
    let factory = InformerFactory::with_defaults(sim.client(), defaults);
    let ctx = Arc::new(Context::new(sim.client()));
    let stop = CancellationToken::new();
    let outcomes = configmapgen::controller(&factory)
        .map_err(|e| e.to_string())?
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            configmapgen::reconcile,
            configmapgen::error_policy,
            Arc::clone(&ctx),
        );
    let running = tokio::spawn(outcomes.collect::<Vec<_>>());

    // CMG1–CMG3: a new generator.
    let generators: Api<ConfigMapGenerator> = Api::namespaced(sim.client(), NS);
    let mut web = ConfigMapGenerator::new(
        "web",
        ConfigMapGeneratorSpec {
            content: "v1".into(),
        },
    );
    web.metadata.namespace = Some(NS.into());
    generators
        .create(&PostParams::default(), &web)
        .await
        .map_err(|e| e.to_string())?;
    until_seen(&sim, &ctx, Seen::live(1, "v1")).await?;

    // CMG1, CMG2: an edit moves the generation on.
    let edit = Patch::Merge(json!({ "spec": { "content": "v2" } }));
    generators
        .patch("web", &PatchParams::default(), &edit)
        .await
        .map_err(|e| e.to_string())?;
    until_seen(&sim, &ctx, Seen::live(2, "v2")).await?;

    // CMG3, CMG4: the finalizer holds the generator; once the controller
    // has withdrawn its entry it goes, and its ConfigMap with it.
    let deleted = generators
        .delete("web", &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    if !deleted.is_left() {
        return Err("the finalizer did not hold the generator".into());
    }
    until_seen(&sim, &ctx, Seen::gone()).await?;

    // A graceful shutdown ends the outcome stream (C7).
    stop.cancel();
    let outcomes = running.await.map_err(|e| e.to_string())?;
    factory.shutdown().await;
    let refused_and_retried = outcomes.iter().any(|outcome| {
        matches!(
            outcome,
            Err(controller::Error::Reconcile {
                key,
                error: finalizer::Error::ApplyFailed(ReconcileError::Kube(kube::Error::Api(status))),
            }) if key.as_str() == "apps/web" && status.code == 409
        )
    });
    if !refused_and_retried {
        return Err(format!("no refused apply among the outcomes: {outcomes:?}"));
    }
    Ok(())
}

/// What the test checks of the generator `web`, read from the server and
/// the catalogue.
#[derive(Debug, PartialEq)]
struct Seen {
    /// The generator's generation; `None` once it is gone.
    generation: Option<i64>,
    /// The generation its status reports (CMG2).
    observed_generation: Option<i64>,
    /// Whether it carries the controller's finalizer (CMG3).
    finalizer: bool,
    /// The ConfigMap's content; `None` when there is no ConfigMap (CMG4).
    content: Option<String>,
    /// Whether the ConfigMap names the generator as its controller and
    /// was applied by the controller's field manager (CMG1).
    owned_and_applied: bool,
    /// The catalogue's entry (CMG3).
    catalogued: Option<String>,
}

impl Seen {
    /// A live generator at `generation`, and all it should have made.
    fn live(generation: i64, content: &str) -> Self {
        Self {
            generation: Some(generation),
            observed_generation: Some(generation),
            finalizer: true,
            content: Some(content.into()),
            owned_and_applied: true,
            catalogued: Some(content.into()),
        }
    }

    /// Nothing left of it.
    fn gone() -> Self {
        Self {
            generation: None,
            observed_generation: None,
            finalizer: false,
            content: None,
            owned_and_applied: false,
            catalogued: None,
        }
    }

    fn now(sim: &SimContext, ctx: &Context) -> Self {
        let in_ns = |namespace: Option<String>| namespace.as_deref() == Some(NS);
        let generator = sim
            .server()
            .objects::<ConfigMapGenerator>()
            .into_iter()
            .find(|g| g.name_any() == "web" && in_ns(g.namespace()));
        let config_map = sim
            .server()
            .objects::<ConfigMap>()
            .into_iter()
            .find(|cm| cm.name_any() == "web" && in_ns(cm.namespace()));
        let uid = generator.as_ref().and_then(|g| g.uid());
        let owned_and_applied = config_map.as_ref().is_some_and(|cm| {
            let owned = cm
                .owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref());
            let applied = cm.managed_fields().iter().any(|m| {
                m.manager.as_deref() == Some(MANAGER) && m.operation.as_deref() == Some("Apply")
            });
            owned && applied
        });
        Self {
            generation: generator.as_ref().and_then(|g| g.metadata.generation),
            observed_generation: generator
                .as_ref()
                .and_then(|g| g.status.as_ref()?.observed_generation),
            finalizer: generator
                .as_ref()
                .is_some_and(|g| g.finalizers().iter().any(|f| f == FINALIZER)),
            content: config_map.and_then(|cm| cm.data?.remove("content")),
            owned_and_applied,
            catalogued: ctx.catalogue.entry(&format!("{NS}/web")),
        }
    }
}

/// Waits until the test sees `want`, looking every 100 ms of simulated
/// time, for at most five simulated minutes: a watch that breaks again and
/// again backs off for up to 30 s before its next list.
async fn until_seen(sim: &SimContext, ctx: &Context, want: Seen) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let seen = Seen::now(sim, ctx);
        if seen == want {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("after five minutes:\nwant {want:?}\nsaw  {seen:?}"));
        }
        sleep(Duration::from_millis(100)).await;
    }
}
