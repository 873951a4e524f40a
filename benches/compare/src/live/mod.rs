//! Live mode (issue 26, item 1): CPU per event against the real e2e
//! kube-apiserver while a writer updates Pods at a steady rate.
//!
//! The wire table measures a burst from a loopback server that imitates the
//! apiserver; this is the steady state of a live cluster instead, where the
//! apiserver writes each watch event as its own flushed chunk as the writes
//! happen, so every event costs the informer a wake-up of its own.
//!
//! Two kinds of process, each started by `live.sh`:
//!
//! - the writer (`kube-informer-compare live-writer create|update|delete`,
//!   [`writer`]): creates a namespace and N Pods (the wire table's Pods, see
//!   [`live_pod`]); for each measured run, patches them round robin at R per
//!   second, U patches in all, each one `MODIFIED` event of a whole Pod; in
//!   the end deletes them. It is measured by nobody;
//! - one process per runner and run (`kube-informer-compare live
//!   ours|kube-runtime`, [`runner`], and the Go program's `-live` for
//!   client-go): the wire table's informer set-up
//!   ([`crate::wire::drive::WireRunner::start`]) on a client from the
//!   kubeconfig. It syncs, prints `READY`, reads its own CPU time, waits
//!   until every subscriber has seen the U updates, reads its CPU time again
//!   and prints one JSON line ([`LiveReport`]).
//!
//! `live.sh` starts the writer's `update` as soon as it reads `READY`, so the
//! CPU time a runner reports runs from the writer's start (give or take the
//! writer's process start, while the runner idles) until the runner has seen
//! the last update. One runner runs at a time: a runner's CPU time is its own
//! process's (`getrusage`), but the apiserver, etcd and the writer share the
//! two cores with it, and another runner would too.

pub mod runner;
pub mod writer;

use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;

/// The annotation each update sets (a new value every time, so every patch
/// is a real change and one `MODIFIED` event).
pub const UPDATE_ANNOTATION: &str = "example.com/revision";

/// A kube client from a kubeconfig file, with no read timeout (the
/// informers' own watch timeouts govern, as in the wire mode).
pub async fn client(path: &Path) -> Result<Client, String> {
    let failed = |message: String| format!("cannot use kubeconfig {}: {message}", path.display());
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| failed(e.to_string()))?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| failed(e.to_string()))?;
    config.read_timeout = None;
    Client::try_from(config).map_err(|e| failed(e.to_string()))
}

/// Pod `index` of the wire workload ([`crate::wire::pods::pod`]) as the
/// writer creates it in `namespace`: (the create body, the status it then
/// writes through the status subresource).
///
/// Left out of the create body, because the apiserver rejects or rewrites
/// them: `resourceVersion` (must be empty on create), `uid` and
/// `creationTimestamp` (the apiserver sets its own), the namespace (replaced
/// by `namespace`; the wire Pods are spread over 20), and `status` (a Pod's
/// status is reset to `Pending` on create, so it is written afterwards with
/// a merge patch of the status subresource, which keeps it). `managedFields`
/// are sent as they are (the apiserver keeps them and adds the writer's own
/// entry); `nodeName`, the ownerReference (to a ReplicaSet that does not
/// exist: no garbage collector runs) and the rest of the spec are kept.
pub fn live_pod(index: usize, namespace: &str) -> (Value, Value) {
    let mut pod = crate::wire::pods::pod(index, 0, 0);
    let status = pod
        .as_object_mut()
        .and_then(|object| object.remove("status"))
        .unwrap_or(Value::Null);
    if let Some(metadata) = pod["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
        metadata.remove("uid");
        metadata.remove("creationTimestamp");
        metadata.insert("namespace".into(), Value::String(namespace.to_string()));
    }
    (pod, json!({ "status": status }))
}

/// The name of Pod `index` (the same as [`live_pod`]'s).
pub fn pod_name(index: usize) -> String {
    crate::wire::pods::pod(index, 0, 0)["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Update `sequence` (0-based) of U: which Pod it patches (round robin over
/// N) and the merge patch, which sets [`UPDATE_ANNOTATION`] to `sequence + 1`
/// (the Pods are created with 0, and the sequence never repeats across runs,
/// so every patch changes the Pod).
pub fn update(sequence: u64, objects: usize) -> (usize, Value) {
    let index = (sequence % objects.max(1) as u64) as usize;
    let patch = json!({
        "metadata": { "annotations": { UPDATE_ANNOTATION: (sequence + 1).to_string() } }
    });
    (index, patch)
}

/// CPU times of the process (user, system), in seconds.
pub type CpuTimes = (f64, f64);

/// The figures of one live runner: one JSON line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LiveReport {
    /// `"live"`.
    pub mode: &'static str,
    /// Which runner.
    pub runner: String,
    /// The runner's global allocator (`system`, `mimalloc`, `jemalloc`; `go`
    /// for client-go).
    pub allocator: String,
    /// N: Pods listed at the start.
    pub objects: u64,
    /// U: updates waited for after `READY`.
    pub updates: u64,
    /// S.
    pub subscribers: usize,
    /// Notifications each subscriber was waited for: N + U.
    pub deliveries_per_subscriber: u64,
    /// From start to every subscriber told about all N.
    pub sync_seconds: f64,
    /// Wall time from `READY` until every subscriber had seen the U updates
    /// (it includes the wait for the writer's go signal).
    pub watch_seconds: f64,
    /// CPU seconds (user + system) of this process over the watch phase.
    pub watch_cpu_seconds: f64,
    /// User CPU seconds over the watch phase.
    pub user_seconds: f64,
    /// System CPU seconds over the watch phase.
    pub system_seconds: f64,
    /// `watch_cpu_seconds` / U, in microseconds.
    pub watch_cpu_us_per_event: f64,
    /// `user_seconds` / U, in microseconds.
    pub user_us_per_event: f64,
    /// `system_seconds` / U, in microseconds.
    pub system_us_per_event: f64,
    /// VmRSS at the end (0 until the runner reads it).
    pub rss: u64,
    /// VmHWM at the end: the peak over the process's life, initial sync
    /// included (0 until the runner reads it).
    pub peak_rss: u64,
    /// VmHWM over the watch phase alone (reset at `READY`; 0 where the
    /// kernel refuses the reset, or until the runner reads it).
    pub watch_peak_rss: u64,
    /// VmRSS at `READY`: the synced cache, before any update.
    pub rss_at_ready: u64,
    /// glibc's heap at the end: in use (`mallinfo2().uordblks` + mmapped
    /// blocks), and free but kept (`fordblks`); zeros under another allocator.
    pub heap_in_use: u64,
    /// See `heap_in_use`.
    pub heap_free_kept: u64,
}

impl LiveReport {
    /// The figures from the CPU times read at `READY` (`start`) and once
    /// every subscriber had seen the updates (`end`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        runner: &str,
        allocator: &str,
        objects: u64,
        updates: u64,
        subscribers: usize,
        sync_seconds: f64,
        watch_seconds: f64,
        start: CpuTimes,
        end: CpuTimes,
    ) -> Self {
        let user = (end.0 - start.0).max(0.0);
        let system = (end.1 - start.1).max(0.0);
        let per_event = |seconds: f64| seconds / updates.max(1) as f64 * 1e6;
        Self {
            mode: "live",
            runner: runner.to_string(),
            allocator: allocator.to_string(),
            objects,
            updates,
            subscribers,
            deliveries_per_subscriber: objects + updates,
            sync_seconds,
            watch_seconds,
            watch_cpu_seconds: user + system,
            user_seconds: user,
            system_seconds: system,
            watch_cpu_us_per_event: per_event(user + system),
            user_us_per_event: per_event(user),
            system_us_per_event: per_event(system),
            rss: 0,
            peak_rss: 0,
            watch_peak_rss: 0,
            rss_at_ready: 0,
            heap_in_use: 0,
            heap_free_kept: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_divides_the_watch_phase_by_the_updates() {
        let report = LiveReport::new(
            "ours",
            "system",
            100,
            400,
            2,
            0.5,
            2.0,
            (1.0, 0.25),
            (1.06, 0.27),
        );
        let near = |got: f64, want: f64| assert!((got - want).abs() < 1e-9, "{got} != {want}");
        near(report.watch_cpu_seconds, 0.08);
        near(report.user_seconds, 0.06);
        near(report.system_seconds, 0.02);
        near(report.watch_cpu_us_per_event, 200.0);
        near(report.user_us_per_event, 150.0);
        near(report.system_us_per_event, 50.0);
        assert_eq!(report.deliveries_per_subscriber, 500);
    }

    #[test]
    fn updates_go_round_robin_with_a_new_value_each() {
        let (first, patch) = update(0, 3);
        assert_eq!(first, 0);
        assert_eq!(patch["metadata"]["annotations"][UPDATE_ANNOTATION], "1");
        let (fourth, patch) = update(3, 3);
        assert_eq!(fourth, 0);
        assert_eq!(patch["metadata"]["annotations"][UPDATE_ANNOTATION], "4");
        assert_eq!(update(5, 3).0, 2);
    }

    #[test]
    fn a_live_pod_is_a_create_body_and_a_status() {
        let (pod, status) = live_pod(7, "compare-live");
        let metadata = &pod["metadata"];
        assert_eq!(metadata["namespace"], "compare-live");
        assert_eq!(metadata["name"].as_str(), Some(pod_name(7).as_str()));
        for field in ["resourceVersion", "uid", "creationTimestamp"] {
            assert!(
                metadata.get(field).is_none(),
                "{field} is left to the apiserver"
            );
        }
        assert!(pod.get("status").is_none());
        assert!(status["status"].is_object());
        // The wire Pods carry it at 0, so the first patch (value 1) is a change.
        assert_eq!(metadata["annotations"][UPDATE_ANNOTATION], "0");
        assert!(serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(pod).is_ok());
    }
}
