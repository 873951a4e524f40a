//! Runner (a) against a real kube-apiserver (issue 7, item 4): an informer on
//! ConfigMaps of one fresh namespace with S subscribers; then the clock
//! starts, N ConfigMaps are created (a fixed number of requests in flight),
//! and it stops when every subscriber has been told about all N. The Go
//! program in `../go` does the same with client-go (`-apiserver`).

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, Config,
    api::{DeleteParams, ObjectMeta, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use kube_informer::{Informer, Notification, SubscribeOptions};
use serde_json::{Value, json};
use std::{collections::BTreeMap, path::Path, time::Duration};
use tokio::{sync::watch, time::Instant};

/// Create requests in flight at once, here and in the Go program.
pub const CREATES_IN_FLIGHT: usize = 16;

/// What the command line chose.
#[derive(Debug, Clone)]
pub struct ApiserverOptions {
    /// Admin kubeconfig of the cluster.
    pub kubeconfig: std::path::PathBuf,
    /// How many ConfigMaps to create.
    pub objects: usize,
    /// How many subscribers.
    pub subscribers: usize,
    /// Give up when the wait lasts longer than this.
    pub timeout: Duration,
}

/// Why the measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiserverError {
    /// The kubeconfig could not be read or used.
    #[error("cannot use kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A request to the API server failed.
    #[error("api request failed: {0}")]
    Api(#[from] kube::Error),
    /// The informer refused a subscriber or stopped.
    #[error("informer: {0}")]
    Informer(#[from] kube_informer::informer::Error),
    /// The informer never listed the (empty) namespace.
    #[error("the informer did not sync")]
    NotSynced,
    /// Subscribers had not seen every object in time.
    #[error("subscribers saw {seen} of {target} objects within {timeout:?}")]
    Stalled {
        /// The lowest count among subscribers.
        seen: usize,
        /// N.
        target: usize,
        /// The timeout.
        timeout: Duration,
    },
}

/// Runs the measurement and returns its JSON line.
pub async fn measure(options: &ApiserverOptions) -> Result<Value, ApiserverError> {
    let client = client(&options.kubeconfig).await?;
    let namespace = format!("compare-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
    let result = measure_in(client, &namespace, options).await;
    // Leave the cluster as found, whatever happened.
    let _ = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await;
    result
}

async fn measure_in(
    client: Client,
    namespace: &str,
    options: &ApiserverOptions,
) -> Result<Value, ApiserverError> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let informer = Informer::builder(api.clone()).build();
    let mut counts = Vec::with_capacity(options.subscribers);
    for _ in 0..options.subscribers {
        let mut subscription = informer.subscribe(SubscribeOptions::default())?;
        let (count, watch) = watch::channel(0usize);
        counts.push(watch);
        tokio::spawn(async move {
            let mut added = 0;
            while let Some(notification) = subscription.next().await {
                if let Notification::Added { object, .. } = &notification {
                    std::hint::black_box(object.metadata.resource_version.as_deref());
                    added += 1;
                    count.send_replace(added);
                }
            }
        });
    }
    tokio::spawn(informer.run());
    if informer.wait_until_synced().await.is_err() {
        return Err(ApiserverError::NotSynced);
    }

    let started = Instant::now();
    stream::iter(0..options.objects)
        .map(|index| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &config_map(index))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(CREATES_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    let created = started.elapsed();
    for index in 0..counts.len() {
        let reached = tokio::time::timeout(
            options.timeout,
            counts[index].wait_for(|seen| *seen >= options.objects),
        )
        .await
        .is_ok_and(|outcome| outcome.is_ok());
        if !reached {
            return Err(ApiserverError::Stalled {
                seen: counts.iter().map(|w| *w.borrow()).min().unwrap_or(0),
                target: options.objects,
                timeout: options.timeout,
            });
        }
    }
    let seen = started.elapsed();
    informer.stop();
    Ok(json!({
        "runner": "ours",
        "objects": options.objects,
        "subscribers": options.subscribers,
        "creates_in_flight": CREATES_IN_FLIGHT,
        "create_seconds": created.as_secs_f64(),
        "seconds": seen.as_secs_f64(),
        "lag_after_last_create_seconds": (seen - created).as_secs_f64(),
    }))
}

async fn client(path: &Path) -> Result<Client, ApiserverError> {
    let failed = |message: String| ApiserverError::Kubeconfig {
        path: path.display().to_string(),
        message,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| failed(e.to_string()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| failed(e.to_string()))?;
    Client::try_from(config).map_err(|e| failed(e.to_string()))
}

/// A small ConfigMap, the same in the Go program: two labels, three entries.
fn config_map(index: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{index:05}")),
            labels: Some(BTreeMap::from([
                ("app".to_string(), "compare".to_string()),
                ("shard".to_string(), (index % 8).to_string()),
            ])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("index".to_string(), index.to_string()),
            ("color".to_string(), "blue".to_string()),
            ("payload".to_string(), "x".repeat(256)),
        ])),
        ..Default::default()
    }
}
