//! Deletion as kube-apiserver does it: finalizers, `deletionTimestamp`, the
//! garbage collector's finalizers (`orphan`, `foregroundDeletion`) and
//! namespaces that terminate. The HTTP side (DeleteOptions, answers) is in
//! `write/delete.rs`, the update hook in `write/finalize.rs`, the controllers
//! that finish deletions (garbage collector, namespace controller) in
//! `gc.rs`.
//!
//! Rules (tests name them):
//! - DL1 An object without finalizers goes at once: one `DELETED` event
//!   carrying its last state at the deletion's resourceVersion. The answer is
//!   200 with a `Status` (`Success`, details naming it) for most resources,
//!   and the object for those whose storage returns it (pods, services,
//!   namespaces, persistent volumes and claims).
//! - DL2 An object with finalizers stays: the delete sets
//!   `deletionTimestamp` (now), `deletionGracePeriodSeconds: 0` and moves a
//!   set `generation` on by one, as one `MODIFIED` event; the answer is 200
//!   with the object (202 when the request said `orphanDependents: false`).
//! - DL3 Deleting an object already being deleted writes nothing and
//!   answers 200 with it, unless the request's propagation policy changes
//!   its `orphan`/`foregroundDeletion` finalizers: then they are rewritten
//!   (and it goes if none remain).
//! - DL4 An update (replace or patch) that empties the finalizers of an
//!   object being deleted deletes it in the same write: no `MODIFIED` event,
//!   one `DELETED` event carrying the last stored state; the answer is 200
//!   with the updated object at its last resourceVersion.
//! - DL5 An update may not add a finalizer to an object being deleted:
//!   422 `Invalid`, "no new finalizers can be added if the object is being
//!   deleted".
//! - DL6 Updates cannot set, change or clear `deletionTimestamp` and
//!   `deletionGracePeriodSeconds`: the stored values stay.
//! - DL7 `propagationPolicy: Foreground` adds the `foregroundDeletion`
//!   finalizer, `Orphan` (or the older `orphanDependents: true`) the `orphan`
//!   finalizer, `Background` (the default) neither; an explicit policy
//!   replaces the other one's finalizer.
//! - DL8 A single object's DeleteOptions come from the body, or from the
//!   query when the body is empty: a body makes the query's options
//!   (`dryRun` among them) count for nothing. A collection's come from the
//!   query and the body (the body's fields win). Preconditions (`uid`, `resourceVersion`) that do not hold:
//!   409 `Conflict`; an unknown `propagationPolicy`, both `orphanDependents`
//!   and `propagationPolicy`, or a `dryRun` other than `All`: 422 `Invalid`;
//!   a body that is not DeleteOptions JSON: 500, a query parameter that is
//!   not a number: 400, with the API server's messages.
//! - DL9 `dryRun=All` answers as the deletion would and writes nothing.
//! - DL10 Deleting a collection deletes each selected object by these
//!   rules; the answer lists them as they were before, at the listing's
//!   resourceVersion.
//! - DL11 Deleting a namespace marks it: `deletionTimestamp`,
//!   `status.phase: Terminating`, the `kubernetes` finalizer in
//!   `spec.finalizers` (no grace period); `default`, `kube-system` and
//!   `kube-public` may not be deleted (403 `Forbidden`).
//! - DL12 Creating an object in a namespace being terminated is refused:
//!   403 `Forbidden`, "unable to create new content in namespace X because
//!   it is being terminated".
//! - DL13 A namespace created over HTTP gets `spec.finalizers:
//!   [kubernetes]`, `status.phase: Active` and the
//!   `kubernetes.io/metadata.name` label.
//! - DL14 The test-side `delete`/`delete_value` follow DL1–DL3 and
//!   DL11 with default options (no admission: any namespace may go); the
//!   test-side `update`/`update_value` follow DL4 and DL6.
//!
//! The garbage collector's and the namespace controller's rules (GC1–GC8)
//! are in `gc.rs`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::{
    resource::ResourceType,
    store::{ObjKey, State, StoreError},
};

/// The garbage collector's finalizer for orphaning dependents.
pub(crate) const ORPHAN: &str = "orphan";
/// The garbage collector's finalizer for deleting dependents first.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
/// The namespace controller's finalizer in a Namespace's `spec.finalizers`.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// What happens to dependents, as a DeleteOptions asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// What a deletion does to the stored object.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Nothing to write (DL3): the object is already being deleted so.
    Unchanged(Arc<Value>),
    /// The object stays, marked as being deleted (DL2, DL3, DL11).
    Mark(Value),
    /// The object goes now (DL1).
    Remove(Arc<Value>),
}

/// What a carried-out deletion left.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The object is still there (being deleted), in this state.
    Stays(Value),
    /// The object is gone; its last state at the deletion's resourceVersion.
    Gone(Value),
}

pub(crate) fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

pub(crate) fn finalizers(object: &Value) -> Vec<String> {
    string_list(&object["metadata"]["finalizers"])
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("finalizers");
        }
    } else {
        object["metadata"]["finalizers"] = json!(finalizers);
    }
}

/// The field at `path` in `object`, each level along the way made an
/// object if it is not one (so odd input cannot make indexing panic).
pub(crate) fn field_mut<'a>(object: &'a mut Value, path: &[&str]) -> &'a mut Value {
    let mut at = object;
    for name in path {
        if !at.is_object() {
            *at = json!({});
        }
        at = &mut at[*name];
    }
    at
}

pub(crate) fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces"
}

/// A Namespace's `spec.finalizers`; one created without them (by the test
/// side, which skips the API server's defaults) counts as having the
/// namespace controller's, so its contents are still deleted.
pub(crate) fn namespace_finalizers(namespace: &Value) -> Vec<String> {
    match &namespace["spec"]["finalizers"] {
        Value::Null => vec![NAMESPACE_FINALIZER.to_owned()],
        list => string_list(list),
    }
}

/// Whether `object` is a Namespace its `spec.finalizers` still hold.
pub(crate) fn held_by_spec(rt: &ResourceType, object: &Value) -> bool {
    is_namespace(rt) && !namespace_finalizers(object).is_empty()
}

/// The finalizers after a deletion asking for `policy` (DL7): the garbage
/// collector's two are dropped and put back as the policy (or, without one,
/// the finalizer already there) says; `None` when that changes nothing.
fn gc_finalizers(current: &[String], policy: Option<Propagation>) -> Option<Vec<String>> {
    let had = |f: &str| current.iter().any(|c| c == f);
    let (orphan, foreground) = match policy {
        Some(Propagation::Orphan) => (true, false),
        Some(Propagation::Foreground) => (false, true),
        Some(Propagation::Background) => (false, false),
        None if had(ORPHAN) => (true, false),
        None => (false, had(FOREGROUND)),
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN.to_owned());
    }
    if foreground {
        next.push(FOREGROUND.to_owned());
    }
    let same = next.len() == current.len() && next.iter().all(|f| had(f));
    (!same).then_some(next)
}

/// What deleting `current` with `policy` does (DL1–DL3, DL7, DL11).
///
/// `now` is the server's clock (GN2), the `deletionTimestamp` a mark sets.
pub(crate) fn plan(
    rt: &ResourceType,
    current: Arc<Value>,
    policy: Option<Propagation>,
    now: &str,
) -> Plan {
    let existing = finalizers(&current);
    let changed = gc_finalizers(&existing, policy);
    let namespace = is_namespace(rt);
    let held_by_spec = held_by_spec(rt, &current);
    if is_deleting(&current) {
        return match changed {
            None if !existing.is_empty() || held_by_spec => Plan::Unchanged(current),
            Some(next) if !next.is_empty() || held_by_spec => {
                let mut object = (*current).clone();
                set_finalizers(&mut object, &next);
                Plan::Mark(object)
            }
            _ => Plan::Remove(current),
        };
    }
    let next = changed.unwrap_or(existing);
    if next.is_empty() && !held_by_spec {
        return Plan::Remove(current);
    }
    let mut object = (*current).clone();
    set_finalizers(&mut object, &next);
    object["metadata"]["deletionTimestamp"] = json!(now);
    if namespace {
        *field_mut(&mut object, &["status", "phase"]) = json!("Terminating");
    } else {
        object["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        if let Some(generation) = object["metadata"]["generation"].as_i64()
            && generation > 0
        {
            object["metadata"]["generation"] = json!(generation + 1);
        }
    }
    Plan::Mark(object)
}

/// Writes what `plan` says.
pub(crate) fn carry_out(
    state: &mut State,
    rt: &ResourceType,
    plan: Plan,
) -> Result<Outcome, StoreError> {
    match plan {
        Plan::Unchanged(current) => Ok(Outcome::Stays((*current).clone())),
        Plan::Mark(object) => state.put(rt, object, Some(true)).map(Outcome::Stays),
        Plan::Remove(current) => {
            let (namespace, name) = key_of(&current);
            state
                .delete(
                    rt,
                    Some(namespace.as_str()).filter(|n| !n.is_empty()),
                    &name,
                )
                .map(Outcome::Gone)
        }
    }
}

/// Deletes the object at `key` with `policy`, as a DELETE without
/// preconditions does (the garbage collector's, the namespace
/// controller's and the test side's deletions).
pub(crate) fn delete(
    state: &mut State,
    rt: &ResourceType,
    key: &ObjKey,
    policy: Option<Propagation>,
) -> Result<Outcome, StoreError> {
    let current = state
        .current(&rt.id(), key)
        .ok_or_else(|| StoreError::NotFound(display_key(key)))?;
    let now = state.clock.now();
    let plan = plan(rt, current, policy, &now);
    carry_out(state, rt, plan)
}

/// What an update of `current` into `object` must do about deletion (DL4,
/// DL6): keeps the stored deletion fields in `object`, and when `current`
/// is being deleted and `object` holds no finalizer any more, removes the
/// object and returns `true` (the caller answers with `object`).
pub(crate) fn finish_update(
    state: &mut State,
    rt: &ResourceType,
    current: &Value,
    object: &mut Value,
) -> Result<bool, StoreError> {
    for field in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
        match current["metadata"].get(field) {
            Some(value) => object["metadata"][field] = value.clone(),
            None => {
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove(field);
                }
            }
        }
    }
    let released =
        is_deleting(current) && finalizers(object).is_empty() && !held_by_spec(rt, object);
    if released {
        let (namespace, name) = key_of(current);
        state.delete(
            rt,
            Some(namespace.as_str()).filter(|n| !n.is_empty()),
            &name,
        )?;
    }
    Ok(released)
}

/// The finalizers `object` has that `current` (being deleted) has not
/// (DL5); empty when `current` is not being deleted.
pub(crate) fn new_finalizers(current: &Value, object: &Value) -> Vec<String> {
    if !is_deleting(current) {
        return Vec::new();
    }
    let old = finalizers(current);
    finalizers(object)
        .into_iter()
        .filter(|f| !old.contains(f))
        .collect()
}

/// Replaces a stored object from the test side: DL4 and DL6, then the
/// store's update.
pub(crate) fn update_stored(
    state: &mut State,
    rt: &ResourceType,
    mut object: Value,
) -> Result<Value, StoreError> {
    let key = key_of(&object);
    let Some(current) = state.current(&rt.id(), &key) else {
        return state.put(rt, object, Some(true));
    };
    if finish_update(state, rt, &current, &mut object)? {
        object["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        return Ok(object);
    }
    state.put(rt, object, Some(true))
}

/// Deletes from the test side (DL14): the answer object either way.
pub(crate) fn delete_stored(
    state: &mut State,
    rt: &ResourceType,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, StoreError> {
    let key = (namespace.unwrap_or("").to_owned(), name.to_owned());
    match delete(state, rt, &key, None)? {
        Outcome::Stays(object) | Outcome::Gone(object) => Ok(object),
    }
}

pub(crate) fn key_of(object: &Value) -> ObjKey {
    let meta = &object["metadata"];
    (
        meta["namespace"].as_str().unwrap_or("").to_owned(),
        meta["name"].as_str().unwrap_or("").to_owned(),
    )
}

fn display_key(key: &ObjKey) -> String {
    if key.0.is_empty() {
        key.1.clone()
    } else {
        format!("{}/{}", key.0, key.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn dl7_policy_decides_the_collector_finalizers() {
        let custom = names(&["example.com/f"]);
        assert_eq!(gc_finalizers(&custom, None), None);
        assert_eq!(gc_finalizers(&custom, Some(Propagation::Background)), None);
        assert_eq!(
            gc_finalizers(&custom, Some(Propagation::Foreground)),
            Some(names(&["example.com/f", FOREGROUND]))
        );
        let orphaning = names(&[ORPHAN]);
        assert_eq!(gc_finalizers(&orphaning, None), None);
        assert_eq!(
            gc_finalizers(&orphaning, Some(Propagation::Foreground)),
            Some(names(&[FOREGROUND]))
        );
        assert_eq!(
            gc_finalizers(&orphaning, Some(Propagation::Background)),
            Some(Vec::new())
        );
    }

    #[test]
    fn dl11_field_mut_makes_odd_levels_objects() {
        let mut odd = json!({"spec": "not an object"});
        *field_mut(&mut odd, &["spec", "finalizers"]) = json!(["kubernetes"]);
        assert_eq!(odd, json!({"spec": {"finalizers": ["kubernetes"]}}));
    }

    #[test]
    fn dl2_marks_an_object_with_finalizers() {
        let rt = ResourceType::new("", "v1", "configmaps", "ConfigMap", true);
        let current = Arc::new(json!({"metadata": {
            "name": "a", "namespace": "ns", "generation": 3, "finalizers": ["x/y"],
        }}));
        let Plan::Mark(marked) = plan(&rt, current, None, "2026-01-01T00:00:00Z") else {
            panic!("an object with finalizers stays");
        };
        assert!(is_deleting(&marked));
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(marked["metadata"]["generation"], 4);
        let Plan::Unchanged(_) = plan(&rt, Arc::new(marked), None, "2026-01-01T00:00:01Z") else {
            panic!("a second delete changes nothing");
        };
    }
}
