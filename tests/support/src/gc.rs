//! The controllers that finish deletions, run inside the write that
//! triggered them: the garbage collector (dependents through
//! `ownerReferences`) and the namespace controller (a terminating
//! namespace's contents).
//!
//! They run synchronously, under the store's lock, right after each write
//! (HTTP or test side), until nothing is left to do. The real ones run
//! asynchronously in kube-controller-manager; here every step still takes
//! its own resourceVersion and reaches watches as its own event, in the
//! order a prompt controller would write them (the owner's event before its
//! dependents' for a background deletion), but a client never sees the
//! half-way state between two requests. That trade keeps runs repeatable
//! (no timing decides the order) and tests simple (after `delete` returns,
//! the cascade is done); watch lag (events delivered late) is what lets a
//! reconciler see the owner go before its dependents.
//!
//! Rules (tests name them):
//! - GC1 Dependents are found by owner uid among `ownerReferences`. A
//!   namespaced owner owns only dependents in its own namespace; a
//!   cluster-scoped owner owns dependents in any namespace and
//!   cluster-scoped ones. A cluster-scoped dependent of a namespaced kind,
//!   or a reference to a kind the server does not know, is never resolved
//!   (the dependent stays).
//! - GC2 Background: when an owner goes, each dependent whose owners are
//!   all gone is deleted (its own finalizers respected: it then stays
//!   marked until they are cleared), each its own event, after the owner's;
//!   a dependent with another owner still there loses the reference to the
//!   gone one instead (one `MODIFIED` event).
//! - GC3 Foreground: an owner marked with `foregroundDeletion` gets its
//!   dependents deleted (foreground again for a dependent that has
//!   dependents of its own); once no dependent with
//!   `blockOwnerDeletion: true` is left, the finalizer is removed and the
//!   owner goes (if no other finalizer holds it).
//! - GC4 Orphan: an owner marked with `orphan` has the reference to it
//!   removed from each dependent (one `MODIFIED` event each), then the
//!   finalizer is removed and the owner goes (if no other finalizer holds
//!   it).
//! - GC5 Dependents are handled in a fixed order (API group, version,
//!   resource, namespace, name), so a run repeats exactly.
//! - GC6 A dependent whose owner never existed in this server is left
//!   alone: only an owner's deletion (or its `foregroundDeletion`/`orphan`
//!   mark), or GC9, starts collection. (The real collector also deletes
//!   objects created with references to owners that never existed; tests
//!   create such objects on purpose.)
//! - GC7 A terminating namespace (deletion requested, `kubernetes` in
//!   `spec.finalizers`) has every object in it deleted with background
//!   propagation; objects with finalizers stay marked until cleared; once
//!   the namespace is empty the `kubernetes` finalizer is removed and the
//!   namespace goes (one `DELETED` event) if no `metadata.finalizers` hold
//!   it.
//! - GC8 Writes the controllers make take the next resourceVersions after
//!   the write that triggered them, before its answer is sent.
//! - GC9 A dependent written (created or updated) with a reference to an
//!   owner this server held and that is gone now (no object of that name,
//!   or one with another uid) is collected as in GC2, as the real
//!   collector does once it finds the owner absent: a controller that
//!   writes a dependent from a cache that has not seen its owner's deletion
//!   yet leaves no orphan behind. (The owner is known by its history here,
//!   so not once [`compact`](crate::FakeApiServer::compact) dropped it.)

use std::sync::Arc;

use serde_json::{Value, json};

use crate::{
    deletion::{
        self, FOREGROUND, NAMESPACE_FINALIZER, ORPHAN, Propagation, finalizers, held_by_spec,
        is_deleting, is_namespace, namespace_finalizers, set_finalizers,
    },
    resource::ResourceType,
    store::{ChangeType, LogEvent, ObjKey, State},
};

/// Runs the controllers over every event after `since` (and the events
/// their own writes make) until nothing is left to do.
pub(crate) fn settle(state: &mut State, since: u64) {
    let mut cursor = since;
    loop {
        let start = state.log.partition_point(|e| e.rv <= cursor);
        let events: Vec<LogEvent> = state.log[start..].to_vec();
        let Some(last) = events.last() else {
            return;
        };
        cursor = last.rv;
        for event in &events {
            react(state, event);
        }
    }
}

fn react(state: &mut State, event: &LogEvent) {
    let Some(rt) = state.resource_type(&event.resource) else {
        return;
    };
    let object = &event.new;
    match event.change {
        ChangeType::Deleted => {
            for (dep_rt, key) in dependents(state, &rt, object) {
                collect(state, &dep_rt, &key);
            }
            if rt.namespaced
                && let Some(namespace) = object["metadata"]["namespace"].as_str()
            {
                terminate_namespace(state, namespace);
            }
        }
        ChangeType::Added | ChangeType::Modified => {
            if !is_deleting(object) && owner_went_before(state, object) {
                collect(state, &rt, &deletion::key_of(object));
            }
            if is_deleting(object) {
                let key = deletion::key_of(object);
                let held = finalizers(object);
                if held.iter().any(|f| f == FOREGROUND) {
                    for (dep_rt, dep_key) in dependents(state, &rt, object) {
                        collect(state, &dep_rt, &dep_key);
                    }
                    release_foreground(state, &rt, &key);
                }
                if held.iter().any(|f| f == ORPHAN) {
                    orphan(state, &rt, &key);
                }
                if is_namespace(&rt) {
                    terminate_namespace(state, &key.1);
                }
            }
        }
    }
    // A dependent that went, or stopped blocking, may release an owner
    // waiting in the foreground.
    let mut owners = owner_refs(object);
    if let Some(old) = &event.old {
        owners.extend(owner_refs(old));
    }
    for reference in owners {
        if let Resolved::Found(owner_rt, key, OwnerState::Waiting) =
            resolve(state, object, &reference)
        {
            release_foreground(state, &owner_rt, &key);
        }
    }
}

/// One entry of `ownerReferences`.
struct OwnerRef {
    raw: Value,
    uid: String,
    api_version: String,
    kind: String,
    name: String,
    blocks: bool,
}

fn owner_refs(object: &Value) -> Vec<OwnerRef> {
    let Some(list) = object["metadata"]["ownerReferences"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|raw| OwnerRef {
            raw: raw.clone(),
            uid: raw["uid"].as_str().unwrap_or("").to_owned(),
            api_version: raw["apiVersion"].as_str().unwrap_or("").to_owned(),
            kind: raw["kind"].as_str().unwrap_or("").to_owned(),
            name: raw["name"].as_str().unwrap_or("").to_owned(),
            blocks: raw["blockOwnerDeletion"].as_bool() == Some(true),
        })
        .collect()
}

fn uid(object: &Value) -> &str {
    object["metadata"]["uid"].as_str().unwrap_or("")
}

/// Every known resource type, in id order (GC5).
fn resource_types(state: &State) -> Vec<ResourceType> {
    let mut ids: Vec<_> = state.collections.keys().cloned().collect();
    ids.sort();
    ids.iter()
        .filter_map(|id| state.resource_type(id))
        .collect()
}

/// The current objects that `owner` (of type `rt`) owns (GC1), in GC5
/// order.
fn dependents(state: &State, rt: &ResourceType, owner: &Value) -> Vec<(ResourceType, ObjKey)> {
    let owner_uid = uid(owner);
    if owner_uid.is_empty() {
        return Vec::new();
    }
    let owner_namespace = owner["metadata"]["namespace"].as_str().unwrap_or("");
    let mut found = Vec::new();
    for dep_rt in resource_types(state) {
        let collection = &state.collections[&dep_rt.id()];
        for (key, object) in collection.snapshot_at(state.rv, None) {
            if rt.namespaced && key.0 != owner_namespace {
                continue;
            }
            if owner_refs(object).iter().any(|r| r.uid == owner_uid) {
                found.push((dep_rt.clone(), key.clone()));
            }
        }
    }
    found
}

/// How an owner reference stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// The owner is being deleted in the foreground.
    Waiting,
}

enum Resolved {
    Found(ResourceType, ObjKey, OwnerState),
    /// No object of that kind, name and uid where the owner must be (the
    /// type and key it was looked for at).
    Gone(ResourceType, ObjKey),
    /// The reference cannot be checked (GC1): counts as a solid owner.
    Unresolvable,
}

fn resolve(state: &State, dependent: &Value, reference: &OwnerRef) -> Resolved {
    let group = reference
        .api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group);
    let Some(rt) = resource_types(state)
        .into_iter()
        .find(|rt| rt.kind == reference.kind && rt.group == group)
    else {
        return Resolved::Unresolvable;
    };
    let dep_namespace = dependent["metadata"]["namespace"].as_str().unwrap_or("");
    let namespace = match (rt.namespaced, dep_namespace) {
        (true, "") => return Resolved::Unresolvable,
        (true, ns) => ns.to_owned(),
        (false, _) => String::new(),
    };
    let key = (namespace, reference.name.clone());
    match state.current(&rt.id(), &key) {
        Some(owner) if uid(&owner) == reference.uid => {
            let waiting = is_deleting(&owner) && finalizers(&owner).iter().any(|f| f == FOREGROUND);
            let standing = if waiting {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            };
            Resolved::Found(rt, key, standing)
        }
        _ => Resolved::Gone(rt, key),
    }
}

/// GC9: whether `dependent` refers to an owner that this server held and
/// that is gone.
fn owner_went_before(state: &State, dependent: &Value) -> bool {
    owner_refs(dependent).iter().any(|reference| {
        let Resolved::Gone(rt, key) = resolve(state, dependent, reference) else {
            return false;
        };
        state.held_uid(&rt.id(), &key, &reference.uid)
    })
}

/// The collector's verdict on one dependent (GC2, GC3): deleted when no
/// solid owner is left, otherwise stripped of references to gone or
/// waiting owners.
fn collect(state: &mut State, rt: &ResourceType, key: &ObjKey) {
    let Some(dependent) = state.current(&rt.id(), key) else {
        return;
    };
    if is_deleting(&dependent) {
        return;
    }
    let refs = owner_refs(&dependent);
    let verdicts: Vec<Resolved> = refs.iter().map(|r| resolve(state, &dependent, r)).collect();
    let solid = |v: &Resolved| {
        matches!(
            v,
            Resolved::Unresolvable | Resolved::Found(_, _, OwnerState::Solid)
        )
    };
    if verdicts.iter().any(solid) {
        let kept: Vec<Value> = refs
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| solid(v))
            .map(|(r, _)| r.raw.clone())
            .collect();
        if kept.len() < refs.len() {
            let mut object = (*dependent).clone();
            object["metadata"]["ownerReferences"] = json!(kept);
            write(state, rt, object);
        }
        return;
    }
    let waiting = verdicts
        .iter()
        .any(|v| matches!(v, Resolved::Found(_, _, OwnerState::Waiting)));
    let policy = (waiting && !dependents(state, rt, &dependent).is_empty())
        .then_some(Propagation::Foreground);
    if let Err(error) = deletion::delete(state, rt, key, policy) {
        tracing::debug!(%error, "garbage collection found its dependent gone");
    }
}

/// GC3: removes `foregroundDeletion` from an owner no blocking dependent
/// holds any more.
fn release_foreground(state: &mut State, rt: &ResourceType, key: &ObjKey) {
    let Some(owner) = state.current(&rt.id(), key) else {
        return;
    };
    if !is_deleting(&owner) || !finalizers(&owner).iter().any(|f| f == FOREGROUND) {
        return;
    }
    let owner_uid = uid(&owner).to_owned();
    let blocked = dependents(state, rt, &owner)
        .iter()
        .any(|(dep_rt, dep_key)| {
            state.current(&dep_rt.id(), dep_key).is_some_and(|dep| {
                owner_refs(&dep)
                    .iter()
                    .any(|r| r.uid == owner_uid && r.blocks)
            })
        });
    if !blocked {
        drop_finalizer(state, rt, &owner, FOREGROUND);
    }
}

/// GC4: strips the references to an orphaning owner, then its finalizer.
fn orphan(state: &mut State, rt: &ResourceType, key: &ObjKey) {
    let Some(owner) = state.current(&rt.id(), key) else {
        return;
    };
    if !is_deleting(&owner) || !finalizers(&owner).iter().any(|f| f == ORPHAN) {
        return;
    }
    let owner_uid = uid(&owner).to_owned();
    for (dep_rt, dep_key) in dependents(state, rt, &owner) {
        let Some(dependent) = state.current(&dep_rt.id(), &dep_key) else {
            continue;
        };
        let kept: Vec<Value> = owner_refs(&dependent)
            .into_iter()
            .filter(|r| r.uid != owner_uid)
            .map(|r| r.raw)
            .collect();
        let mut object = (*dependent).clone();
        if kept.is_empty() {
            if let Some(meta) = object["metadata"].as_object_mut() {
                meta.remove("ownerReferences");
            }
        } else {
            object["metadata"]["ownerReferences"] = json!(kept);
        }
        write(state, &dep_rt, object);
    }
    drop_finalizer(state, rt, &owner, ORPHAN);
}

/// GC7: empties a terminating namespace, then lets it go.
fn terminate_namespace(state: &mut State, name: &str) {
    let namespaces = ResourceType::new("", "v1", "namespaces", "Namespace", false);
    let key = (String::new(), name.to_owned());
    let Some(namespace) = state.current(&namespaces.id(), &key) else {
        return;
    };
    let spec_finalizers = namespace_finalizers(&namespace);
    if !is_deleting(&namespace) || !spec_finalizers.iter().any(|f| f == NAMESPACE_FINALIZER) {
        return;
    }
    let contents = contents(state, name);
    for (rt, key) in &contents {
        let marked = state
            .current(&rt.id(), key)
            .is_none_or(|object| is_deleting(&object));
        if !marked
            && let Err(error) = deletion::delete(state, rt, key, Some(Propagation::Background))
        {
            tracing::debug!(%error, "namespace controller found its object gone");
        }
    }
    if !self::contents(state, name).is_empty() {
        return;
    }
    let mut object = (*namespace).clone();
    let rest: Vec<String> = spec_finalizers
        .into_iter()
        .filter(|f| f != NAMESPACE_FINALIZER)
        .collect();
    *deletion::field_mut(&mut object, &["spec", "finalizers"]) = json!(rest);
    if rest.is_empty() && finalizers(&object).is_empty() {
        if let Err(error) = state.delete(&namespaces, None, name) {
            tracing::debug!(%error, "namespace controller found its namespace gone");
        }
    } else {
        write(state, &namespaces, object);
    }
}

/// Every object in `namespace`, in GC5 order.
fn contents(state: &State, namespace: &str) -> Vec<(ResourceType, ObjKey)> {
    let mut found = Vec::new();
    for rt in resource_types(state).into_iter().filter(|rt| rt.namespaced) {
        let collection = &state.collections[&rt.id()];
        for (key, _) in collection.snapshot_at(state.rv, None) {
            if key.0 == namespace {
                found.push((rt.clone(), key.clone()));
            }
        }
    }
    found
}

/// Removes one of the collector's finalizers; an object being deleted that
/// no finalizer holds any more goes in the same write (DL4).
fn drop_finalizer(state: &mut State, rt: &ResourceType, current: &Arc<Value>, finalizer: &str) {
    let rest: Vec<String> = finalizers(current)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    let mut object = (**current).clone();
    set_finalizers(&mut object, &rest);
    if rest.is_empty() && !held_by_spec(rt, &object) {
        let (namespace, name) = deletion::key_of(current);
        let namespace = Some(namespace.as_str()).filter(|n| !n.is_empty());
        if let Err(error) = state.delete(rt, namespace, &name) {
            tracing::debug!(%error, "garbage collector found its owner gone");
        }
    } else {
        write(state, rt, object);
    }
}

fn write(state: &mut State, rt: &ResourceType, object: Value) {
    if let Err(error) = state.put(rt, object, Some(true)) {
        tracing::debug!(%error, "garbage collector found its object gone");
    }
}
