//! The live writer: three short commands, each one process, so that the
//! driver (`live.sh`) needs no conversation with a long-lived writer:
//!
//! - `live-writer create`: checks the cluster holds no Pods, creates the
//!   namespace and N Pods (the wire table's Pods, see [`super::live_pod`]),
//!   and prints one JSON line ([`CreateReport`]);
//! - `live-writer update`: U merge patches, round robin over the N Pods, at
//!   R per second, and prints one JSON line ([`UpdateReport`]); each patch
//!   sets the annotation to a new value, so each is one `MODIFIED` event;
//! - `live-writer delete`: deletes the Pods and the namespace.
//!
//! Nothing here is measured; the writer runs beside the runner on the same
//! machine, as a cluster's other clients would.

use super::{client, live_pod, pod_name, update};
use crate::flags::Flags;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde::Serialize;
use serde_json::{Value, json};
use std::{path::PathBuf, sync::Arc, time::Duration};
use tokio::{sync::Semaphore, task::JoinSet, time::Instant};

/// Create requests in flight while the Pods are made (as in `apiserver.rs`).
pub const CREATES_IN_FLIGHT: usize = 16;

/// Which writer command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `create`.
    Create,
    /// `update`.
    Update,
    /// `delete`.
    Delete,
}

/// What the command line chose: `live-writer (create|update|delete)
/// --kubeconfig F [--namespace compare-live] --objects N --updates U
/// --rate R [--from 0] [--in-flight 32] [--timeout-secs 120]` (`--updates`
/// and `--rate` for `update` only, `--objects` for `create` and `update`).
#[derive(Debug, Clone, PartialEq)]
pub struct WriterOptions {
    /// The command.
    pub step: Step,
    /// Kubeconfig of the cluster.
    pub kubeconfig: PathBuf,
    /// The namespace holding the Pods.
    pub namespace: String,
    /// N: Pods created, and patched round robin.
    pub objects: usize,
    /// U: updates to make.
    pub updates: u64,
    /// R: updates per second asked for.
    pub rate: f64,
    /// The sequence number of the first update: the driver passes the sum
    /// of the earlier runs' U, so every patch writes a value not written
    /// before.
    pub from: u64,
    /// Update requests in flight at most.
    pub in_flight: usize,
    /// How long `delete` waits for the namespace to go.
    pub timeout: Duration,
}

impl WriterOptions {
    /// Reads the flags of `live-writer STEP`.
    pub fn from_flags(step: &str, flags: &Flags) -> Result<Self, String> {
        let step = match step {
            "create" => Step::Create,
            "update" => Step::Update,
            "delete" => Step::Delete,
            other => return Err(format!("unknown live-writer step {other}")),
        };
        let needs_objects = step != Step::Delete;
        let updating = step == Step::Update;
        let options = Self {
            step,
            kubeconfig: PathBuf::from(flags.text("kubeconfig")?),
            namespace: flags
                .text("namespace")
                .unwrap_or("compare-live")
                .to_string(),
            objects: flags.number("objects", (!needs_objects).then_some(0))?,
            updates: flags.number("updates", (!updating).then_some(0))? as u64,
            rate: flags.number("rate", (!updating).then_some(0))? as f64,
            from: flags.number("from", Some(0))? as u64,
            in_flight: flags.number("in-flight", Some(32))?,
            timeout: Duration::from_secs(flags.number("timeout-secs", Some(120))? as u64),
        };
        if needs_objects && options.objects == 0 {
            return Err("--objects must be at least 1".into());
        }
        if updating && (options.updates == 0 || options.rate <= 0.0 || options.in_flight == 0) {
            return Err("--updates, --rate and --in-flight must be at least 1".into());
        }
        Ok(options)
    }
}

/// When update `sequence` (counted from the first of this run) is due:
/// `sequence / rate` after the first.
pub fn due(sequence: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(sequence as f64 / rate)
}

/// What `create` made.
#[derive(Debug, Clone, Serialize)]
pub struct CreateReport {
    /// The namespace.
    pub namespace: String,
    /// N.
    pub objects: usize,
    /// Mean size of a Pod's JSON as the apiserver lists it.
    pub mean_pod_bytes: f64,
    /// Wall time of the creates and status writes.
    pub create_seconds: f64,
}

/// What the update phase achieved.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateReport {
    /// U.
    pub updates: u64,
    /// R asked for.
    pub rate_asked: f64,
    /// U / `update_seconds`.
    pub rate_achieved: f64,
    /// From the first request sent to the last response.
    pub update_seconds: f64,
    /// Requests in flight at most.
    pub in_flight: usize,
    /// How late the last request left against its schedule (`(U − 1) / R`
    /// after the first).
    pub last_sent_late_seconds: f64,
    /// The latest any request left against its schedule: more than a few
    /// milliseconds says the apiserver (or this machine) did not keep up
    /// with R, since a request waits only for a free slot of `in_flight`.
    pub max_sent_late_seconds: f64,
    /// Mean time from a request sent to its response.
    pub mean_latency_seconds: f64,
}

/// Runs one writer command and prints its JSON line.
pub async fn write(options: &WriterOptions) -> Result<(), String> {
    let client = client(&options.kubeconfig).await?;
    let line = match options.step {
        Step::Create => serde_json::to_string(&create(&client, options).await?),
        Step::Update => {
            let pods: Api<Pod> = Api::namespaced(client, &options.namespace);
            serde_json::to_string(&update_all(&pods, options).await?)
        }
        Step::Delete => {
            delete(&client, options).await?;
            serde_json::to_string(&json!({ "deleted": options.namespace }))
        }
    };
    println!("{}", line.map_err(|e| e.to_string())?);
    Ok(())
}

async fn create(client: &Client, options: &WriterOptions) -> Result<CreateReport, String> {
    // The runners watch Pods in all namespaces: any other Pod would be counted.
    let others = Api::<Pod>::all(client.clone())
        .list_metadata(&ListParams::default().limit(1))
        .await
        .map_err(|e| format!("cannot list Pods: {e}"))?;
    if !others.items.is_empty() {
        return Err(
            "the cluster already holds Pods; the live runners watch Pods in all namespaces, \
             so it must hold only the writer's"
                .into(),
        );
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(options.namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .map_err(|e| format!("cannot create namespace {}: {e}", options.namespace))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &options.namespace);
    let started = Instant::now();
    stream::iter(0..options.objects)
        .map(|index| {
            let pods = pods.clone();
            let namespace = options.namespace.clone();
            async move {
                let (body, status) = live_pod(index, &namespace);
                let pod: Pod = serde_json::from_value(body)
                    .map_err(|e| format!("Pod {index} does not decode: {e}"))?;
                let name = pod.metadata.name.clone().unwrap_or_default();
                pods.create(&PostParams::default(), &pod)
                    .await
                    .map_err(|e| format!("cannot create Pod {name}: {e}"))?;
                pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await
                    .map_err(|e| format!("cannot write the status of Pod {name}: {e}"))?;
                Ok::<(), String>(())
            }
        })
        .buffer_unordered(CREATES_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    Ok(CreateReport {
        namespace: options.namespace.clone(),
        objects: options.objects,
        create_seconds: started.elapsed().as_secs_f64(),
        mean_pod_bytes: mean_pod_bytes(client, &options.namespace).await?,
    })
}

/// Mean size of a Pod's JSON as the apiserver lists it.
async fn mean_pod_bytes(client: &Client, namespace: &str) -> Result<f64, String> {
    let request = http::Request::get(format!("/api/v1/namespaces/{namespace}/pods"))
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let text = client
        .request_text(request)
        .await
        .map_err(|e| format!("cannot list the Pods: {e}"))?;
    let list: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let bytes: usize = items
        .iter()
        .map(|item| serde_json::to_vec(item).map_or(0, |json| json.len()))
        .sum();
    Ok(bytes as f64 / items.len().max(1) as f64)
}

/// U merge patches, round robin, the `i`-th sent `i / R` after the first
/// (later only when `in_flight` requests are still out).
async fn update_all(pods: &Api<Pod>, options: &WriterOptions) -> Result<UpdateReport, String> {
    let names: Arc<Vec<String>> = Arc::new((0..options.objects).map(pod_name).collect());
    let permits = Arc::new(Semaphore::new(options.in_flight));
    let mut requests = JoinSet::new();
    let started = Instant::now();
    let (mut last_late, mut max_late) = (Duration::ZERO, Duration::ZERO);
    let mut latency_total = Duration::ZERO;
    let mut collect = |latency: Duration| latency_total += latency;
    for sequence in 0..options.updates {
        let at = started + due(sequence, options.rate);
        tokio::time::sleep_until(at).await;
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        last_late = Instant::now().saturating_duration_since(at);
        max_late = max_late.max(last_late);
        while let Some(done) = requests.try_join_next() {
            collect(done.map_err(|e| e.to_string())??);
        }
        let (index, patch) = update(options.from + sequence, options.objects);
        let pods = pods.clone();
        let names = Arc::clone(&names);
        requests.spawn(async move {
            let name = &names[index];
            let sent = Instant::now();
            let outcome = pods
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| sent.elapsed())
                .map_err(|e| format!("cannot patch Pod {name}: {e}"));
            drop(permit);
            outcome
        });
    }
    while let Some(done) = requests.join_next().await {
        collect(done.map_err(|e| e.to_string())??);
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(UpdateReport {
        updates: options.updates,
        rate_asked: options.rate,
        rate_achieved: options.updates as f64 / seconds,
        update_seconds: seconds,
        in_flight: options.in_flight,
        last_sent_late_seconds: last_late.as_secs_f64(),
        max_sent_late_seconds: max_late.as_secs_f64(),
        mean_latency_seconds: latency_total.as_secs_f64() / options.updates.max(1) as f64,
    })
}

/// Deletes the Pods (at once: no kubelet runs to finish a graceful delete)
/// and the namespace (finalized here: no namespace controller runs), then
/// waits until it is gone.
async fn delete(client: &Client, options: &WriterOptions) -> Result<(), String> {
    let namespace = &options.namespace;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete_collection(&now, &ListParams::default())
        .await
        .map_err(|e| format!("cannot delete the Pods of {namespace}: {e}"))?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(namespace, &DeleteParams::default())
        .await
        .map_err(|e| format!("cannot delete namespace {namespace}: {e}"))?;
    let finalize = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": { "name": namespace },
        "spec": { "finalizers": [] }
    });
    let request = http::Request::put(format!("/api/v1/namespaces/{namespace}/finalize"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&finalize).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    client
        .request_text(request)
        .await
        .map_err(|e| format!("cannot finalize namespace {namespace}: {e}"))?;
    let deadline = Instant::now() + options.timeout;
    loop {
        match namespaces.get_opt(namespace).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Ok(Some(_)) => return Err(format!("namespace {namespace} still there")),
            Err(e) => return Err(format!("cannot read namespace {namespace}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Flags {
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        Flags::parse(&args).unwrap()
    }

    #[test]
    fn update_needs_updates_and_rate_and_create_does_not() {
        let create =
            WriterOptions::from_flags("create", &flags(&["--kubeconfig", "k", "--objects", "20"]))
                .unwrap();
        assert_eq!(
            (create.step, create.objects, create.namespace.as_str()),
            (Step::Create, 20, "compare-live")
        );
        assert!(
            WriterOptions::from_flags("update", &flags(&["--kubeconfig", "k", "--objects", "20"]))
                .is_err()
        );
        let update = WriterOptions::from_flags(
            "update",
            &flags(&[
                "--kubeconfig",
                "k",
                "--objects",
                "20",
                "--updates",
                "1_000",
                "--rate",
                "100",
                "--from",
                "3000",
            ]),
        )
        .unwrap();
        assert_eq!(
            (update.updates, update.rate, update.from, update.in_flight),
            (1000, 100.0, 3000, 32)
        );
        let delete = WriterOptions::from_flags("delete", &flags(&["--kubeconfig", "k"])).unwrap();
        assert_eq!(delete.step, Step::Delete);
        assert!(WriterOptions::from_flags("rename", &flags(&["--kubeconfig", "k"])).is_err());
    }

    #[test]
    fn updates_are_due_at_a_steady_rate() {
        assert_eq!(due(0, 100.0), Duration::ZERO);
        assert_eq!(due(250, 500.0), Duration::from_millis(500));
    }
}
