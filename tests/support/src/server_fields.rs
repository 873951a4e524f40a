//! The metadata the server sets on every write: `uid` and
//! `creationTimestamp` when an object is created, `metadata.generation`
//! when its desired state changes.
//!
//! # Rules
//!
//! - GN1: a created object gets a UUID-shaped `uid` derived from the
//!   resourceVersion of its creation (unique on this server, the same on
//!   every run), unless a test-side write gave it one.
//! - GN2: `creationTimestamp` (and `managedFields` times) come from
//!   [`ServerClock`]: a fixed epoch (2026-01-01T00:00:00Z) plus the whole
//!   seconds tokio's clock has moved since the server started. Under a
//!   paused clock that is the same on every run, which a wall-clock time
//!   would not be.
//! - GN3: kinds that count generations (custom resources, and the built-in
//!   kinds whose registry does: Pods, Deployments, ReplicaSets,
//!   StatefulSets, DaemonSets, Jobs, CronJobs, Ingresses, …; not ConfigMaps,
//!   Secrets, Namespaces, Nodes or Services) get `generation: 1` on create.
//! - GN4: their generation goes up by one when a write changes anything
//!   outside `metadata` (and outside `status` when the kind has a `/status`
//!   subresource); other writes keep it.
//! - GN5: a Deployment's generation also goes up when its annotations
//!   change, since the Deployment controller copies them to its
//!   ReplicaSets (the API server's Deployment strategy counts them).
//! - GN6: so does the generation of an object marked for deletion (the
//!   write that sets its `deletionTimestamp`).

use serde_json::{Value, json};

use crate::{builtin, resource::ResourceType};

/// 2026-01-01T00:00:00Z, the time of a server that just started.
const EPOCH_SECONDS: i64 = 1_767_225_600;

/// Time as the server reports it: see GN2.
#[derive(Debug, Clone)]
pub(crate) struct ServerClock {
    started: tokio::time::Instant,
}

impl Default for ServerClock {
    fn default() -> Self {
        Self {
            started: tokio::time::Instant::now(),
        }
    }
}

impl ServerClock {
    /// Now, as an RFC 3339 time in whole seconds (`2026-01-01T00:00:05Z`).
    pub(crate) fn now(&self) -> String {
        let elapsed = i64::try_from(self.started.elapsed().as_secs()).unwrap_or(i64::MAX / 2);
        k8s_openapi::jiff::Timestamp::from_second(EPOCH_SECONDS.saturating_add(elapsed))
            .map(|t| t.to_string())
            .unwrap_or_else(|_| "9999-12-31T23:59:59Z".to_owned())
    }
}

/// The uid of the object created at resourceVersion `rv` (GN1).
fn uid(rv: u64) -> String {
    format!("00000000-0000-4000-8000-{:012x}", rv & 0xffff_ffff_ffff)
}

/// Sets the server's metadata on `object`, about to be stored at `rv`
/// in place of `old` (`None` for a creation).
pub(crate) fn stamp(
    rt: &ResourceType,
    status_subresource: bool,
    old: Option<&Value>,
    object: &mut Value,
    rv: u64,
    clock: &ServerClock,
) {
    let counts = builtin::counts_generation(&rt.group, &rt.plural);
    let meta = &mut object["metadata"];
    match old {
        None => {
            if meta["uid"].as_str().is_none_or(str::is_empty) {
                meta["uid"] = json!(uid(rv));
            }
            if meta["creationTimestamp"].as_str().is_none_or(str::is_empty) {
                meta["creationTimestamp"] = json!(clock.now());
            }
            if counts && meta["generation"].as_i64().is_none_or(|g| g < 1) {
                meta["generation"] = json!(1);
            }
        }
        Some(old) => {
            if let Some(uid) = old["metadata"].get("uid") {
                meta["uid"] = uid.clone();
            }
            if counts {
                let before = old["metadata"]["generation"].as_i64().unwrap_or(0);
                let annotated = rt.group == "apps"
                    && rt.plural == "deployments"
                    && old["metadata"].get("annotations") != object["metadata"].get("annotations");
                let marked = old["metadata"].get("deletionTimestamp").is_none()
                    && object["metadata"].get("deletionTimestamp").is_some();
                let bump =
                    annotated || marked || desired_state_changed(status_subresource, old, object);
                object["metadata"]["generation"] = json!(before + i64::from(bump));
            }
        }
    }
}

/// Whether anything outside `metadata` (and `status`, when a subresource
/// owns it) differs (GN4).
fn desired_state_changed(status_subresource: bool, old: &Value, new: &Value) -> bool {
    let counted = |key: &str| key != "metadata" && !(status_subresource && key == "status");
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().filter(|k| counted(k)).cloned().collect())
            .unwrap_or_default()
    };
    let (mut a, mut b) = (keys(old), keys(new));
    a.append(&mut b);
    a.into_iter().any(|k| old.get(&k) != new.get(&k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn gn2_times_count_from_a_fixed_epoch_on_tokios_clock() {
        let clock = ServerClock::default();
        assert_eq!(clock.now(), "2026-01-01T00:00:00Z");
        tokio::time::sleep(std::time::Duration::from_secs(61)).await;
        assert_eq!(clock.now(), "2026-01-01T00:01:01Z");
    }

    #[test]
    fn gn4_only_changes_outside_metadata_and_status_count() {
        let old = json!({"metadata": {"labels": {}}, "spec": {"a": 1}, "status": {"x": 1}});
        let relabelled =
            json!({"metadata": {"labels": {"l": "1"}}, "spec": {"a": 1}, "status": {"x": 2}});
        assert!(!desired_state_changed(true, &old, &relabelled));
        assert!(desired_state_changed(false, &old, &relabelled));
        let respecced = json!({"metadata": {}, "spec": {"a": 2}});
        assert!(desired_state_changed(true, &old, &respecced));
    }
}
