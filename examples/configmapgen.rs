//! A controller of a custom resource that owns ConfigMaps: each
//! `ConfigMapGenerator` (group `nullable.se`, namespaced) gets a ConfigMap of
//! its name holding its `spec.content`, written by server-side apply with a
//! controller owner reference, so the ConfigMap goes with its generator and
//! a change or deletion of the ConfigMap reconciles the generator again.
//!
//! ```sh
//! RUST_LOG=info cargo run --example configmapgen   # the cluster of your KUBECONFIG
//! ```
//!
//! The CRD must be installed: `ConfigMapGenerator::crd()`, as
//! `tests/e2e_configmapgen.rs` does before it runs this program on a real
//! kube-apiserver; without it the program says so and exits with status 1. Enter reconciles every generator; SIGINT or SIGTERM stops
//! after the reconciles that run (a second signal at once).

use std::{io::BufRead, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, CustomResource, Resource, ResourceExt,
    api::{ObjectMeta, Patch, PatchParams},
};
use kube_informer::{controller::Config, prelude::*};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

/// What a generator asks for: a ConfigMap holding `content`.
#[derive(CustomResource, Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(group = "nullable.se", version = "v1", kind = "ConfigMapGenerator")]
#[kube(shortname = "cmg", namespaced, derive = "PartialEq")]
pub struct ConfigMapGeneratorSpec {
    /// The value of the ConfigMap's `content` key.
    pub content: String,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused or did not answer the apply.
    #[error("applying the ConfigMap: {0}")]
    Apply(#[from] kube::Error),
    /// The generator lacks what the ConfigMap needs (never for an object
    /// the API server returned).
    #[error("the generator has no {0}")]
    Incomplete(&'static str),
}

/// Makes the generator's ConfigMap what its spec says; again in 5 minutes.
pub async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    client: Arc<Client>,
) -> Result<Action, ReconcileError> {
    let namespace = generator
        .namespace()
        .ok_or(ReconcileError::Incomplete("namespace"))?;
    let owner = generator
        .controller_owner_ref(&())
        .ok_or(ReconcileError::Incomplete("uid"))?;
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(generator.name_any()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([("content".to_owned(), generator.spec.content.clone())].into()),
        ..ConfigMap::default()
    };
    // Server-side apply: the fields this manager sets, nothing else.
    Api::<ConfigMap>::namespaced(Client::clone(&client), &namespace)
        .patch(
            &generator.name_any(),
            &PatchParams::apply("configmapgen.kube-informer.dev"),
            &Patch::Apply(&config_map),
        )
        .await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// A refused apply is retried with the queue's per-key backoff; a generator
/// that cannot have a ConfigMap waits for its next change.
pub fn error_policy(_: Arc<ConfigMapGenerator>, error: &ReconcileError, _: Arc<Client>) -> Action {
    match error {
        ReconcileError::Apply(_) => Action::backoff(),
        ReconcileError::Incomplete(_) => Action::await_change(),
    }
}

#[tokio::main]
async fn main() -> Result<(), kube_informer::Error> {
    tracing_subscriber::fmt::init();
    let client = Client::try_default().await?;

    // Each line on stdin is a tick. A thread of its own reads it: a read in
    // the runtime's blocking pool would hold the runtime's shutdown.
    let (enter, ticks) = futures::channel::mpsc::unbounded();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {
            let _ = enter.unbounded_send(());
        }
    });

    info!("press Enter to reconcile every generator");
    let outcomes = Controller::new(Api::<ConfigMapGenerator>::all(client.clone()))
        .owns(Api::<ConfigMap>::all(client.clone()))
        .with_config(Config {
            concurrency: 2,
            ..Default::default()
        })
        .reconcile_all_on(ticks)
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client));
    let mut outcomes = std::pin::pin!(outcomes);
    while let Some(outcome) = outcomes.next().await {
        match outcome {
            Ok((key, action)) => info!(%key, ?action, "reconciled"),
            // The controller could not start (the CRD not installed, no
            // RBAC rule for it): the message says why, and the stream ends
            // with it; so does the program, with a failure.
            Err(error) if error.key().is_none() => {
                eprintln!("configmapgen: {error}");
                std::process::exit(1);
            }
            // A failed reconcile: the controller logs none itself, and the
            // key is retried as `error_policy` says.
            Err(error) => warn!(%error, "reconcile failed"),
        }
    }
    info!("stopped");
    Ok(())
}
