//! What a handler received, in the informer scripts' output format, and the
//! canonical order both runners print it in.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::Notification;
use serde_json::{Value, json};

/// The `namespace/name` (or `name`) key of a ConfigMap, as the Go harness
/// writes it.
fn key(cm: &ConfigMap) -> String {
    let name = cm.metadata.name.as_deref().unwrap_or("");
    match cm.metadata.namespace.as_deref() {
        None | Some("") => name.to_owned(),
        Some(ns) => format!("{ns}/{name}"),
    }
}

fn rv(cm: &ConfigMap) -> &str {
    cm.metadata.resource_version.as_deref().unwrap_or("")
}

/// One notification as an output note: `Added` (`key`, `rv`, `initial`),
/// `Updated` (`key`, `oldRv`, `rv`, `resync`: both versions equal, as the Go
/// recorder computes it), `Deleted` (`key`, `rv`, `tombstone`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::Notification;
/// use kube_informer_conformance::informer_notes::note;
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("a".into());
/// cm.metadata.resource_version = Some("3".into());
/// let n = Notification::Added { object: Arc::new(cm), in_initial_list: true };
/// assert_eq!(
///     note(&n),
///     serde_json::json!({"type": "Added", "key": "default/a", "rv": "3", "initial": true})
/// );
/// ```
pub fn note(notification: &Notification<ConfigMap>) -> Value {
    match notification {
        Notification::Added {
            object,
            in_initial_list,
        } => {
            json!({"type": "Added", "key": key(object), "rv": rv(object), "initial": in_initial_list})
        }
        Notification::Updated { old, new, .. } => json!({
            "type": "Updated", "key": key(new), "oldRv": rv(old), "rv": rv(new),
            "resync": rv(old) == rv(new),
        }),
        Notification::Deleted {
            object,
            final_state_unknown,
        } => {
            json!({"type": "Deleted", "key": key(object), "rv": rv(object), "tombstone": final_state_unknown})
        }
    }
}

/// Puts `notes` (what one handler received during a step `op`) into the
/// canonical order: client-go visits its store in Go map order for a late
/// handler's replay, a resync round, and the tombstones of a relist, so the
/// notes of `subscribe` and `resync` steps, and every run of consecutive
/// tombstone deletes, are sorted by key (stably). Nothing else moves.
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::informer_notes::canonical;
/// use serde_json::json;
///
/// let mut notes = vec![
///     json!({"type": "Updated", "key": "default/b"}),
///     json!({"type": "Deleted", "key": "default/z", "tombstone": true}),
///     json!({"type": "Deleted", "key": "default/c", "tombstone": true}),
/// ];
/// canonical("relist", &mut notes);
/// let keys: Vec<_> = notes.iter().map(|n| n["key"].as_str().unwrap()).collect();
/// assert_eq!(keys, ["default/b", "default/c", "default/z"]);
/// ```
pub fn canonical(op: &str, notes: &mut [Value]) {
    let by_key = |run: &mut [Value]| run.sort_by(|a, b| note_key(a).cmp(note_key(b)));
    if op == "subscribe" || op == "resync" {
        by_key(notes);
        return;
    }
    let is_tombstone = |n: &Value| n.get("tombstone") == Some(&Value::Bool(true));
    let mut start = 0;
    while start < notes.len() {
        let end = start
            + notes[start..]
                .iter()
                .take_while(|n| is_tombstone(n))
                .count();
        if end > start {
            by_key(&mut notes[start..end]);
            start = end;
        } else {
            start += 1;
        }
    }
}

fn note_key(note: &Value) -> &str {
    note.get("key").and_then(Value::as_str).unwrap_or("")
}
