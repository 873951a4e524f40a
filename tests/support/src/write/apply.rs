//! Server-side apply: `PATCH` with `application/apply-patch+yaml`.
//!
//! # Rules
//!
//! - SA1: `fieldManager` is required (422 `Invalid` on `PatchOptions`
//!   without it); the body is a whole object as JSON or YAML whose
//!   `apiVersion` and `kind` are the URL's (400 "invalid object type"
//!   otherwise) and whose name, if any, is the URL's (400).
//! - SA2: applying to a missing object creates it (201) with the applied
//!   fields owned by the manager (operation `Apply`); applying to
//!   `…/status` of a missing object is 404.
//! - SA3: when a field the manager applies holds a different value that
//!   another manager owns, the apply fails with 409 `Conflict`, one
//!   `FieldManagerConflict` cause per field and manager, and the API
//!   server's message; nothing is written.
//! - SA4: with `force=true` the conflicting fields move to the applier.
//! - SA5: the applied configuration is merged into the object: objects
//!   field by field, keyed lists item by item (`merge_keys.rs`), set lists
//!   as sets, other lists and scalars replaced.
//! - SA6: the manager then owns exactly what it applied; a field it
//!   applied before and no longer applies is removed from the object
//!   unless another manager owns it (or something under it).
//! - SA7: an apply that changes nothing (values and ownership) writes
//!   nothing: no resourceVersion, no event.
//! - SA8: a `resourceVersion` in the applied object is a precondition (409),
//!   checked after the field conflicts of SA3: an apply that fails both is
//!   answered with its field conflicts, as the API server answers it.
//!
//! Not modelled: defaulting (the API server fills in defaults such as a
//! container port's `protocol: TCP` before merging, which shows in keys),
//! schema validation of the applied fields, version conversion of
//! managedFields, and `x-kubernetes-list-type` of custom resources' own
//! lists (they are atomic here).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{
    Answer, ObjectRequest, Owner, bad_request, conflict, create::prepare_new, not_found, obj_key,
    place, store_error, target::Target, update::store_update,
};
use crate::{
    faults::ApiStatus,
    field_set::{FieldSet, Fields, Path, Scope, display, remove_at, value_at},
    managed_fields::ManagedFields,
    merge_keys::{ListType, Schema},
    resource::{CollectionPath, ResourceType},
    store::State,
};

pub(super) fn apply(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    request: &ObjectRequest<'_>,
    target: Target,
) -> Answer {
    let manager = request
        .param("fieldManager")
        .filter(|m| !m.is_empty())
        .ok_or_else(manager_required)?;
    let force = request.param("force") == Some("true");
    let mut applied = parse_body(request.body)?;
    check_type(rt, &applied)?;
    match applied["metadata"]["name"].as_str() {
        Some(body) if !body.is_empty() && body != name => {
            return Err(bad_request(&format!(
                "the name of the object ({body}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    place(&mut applied, path)?;
    applied["metadata"]["name"] = json!(name);

    let schema = Schema::of(rt);
    let scope = target.scope(rt);
    let applied_set = Fields::of(&schema, &applied, scope).members;
    let now = state.clock.now();
    let api_version = rt.api_version();
    let subresource = target.subresource();

    let Some(current) = state.current(&path.resource, &obj_key(path, name)) else {
        if target == Target::Status {
            return Err(not_found(rt, name));
        }
        let mut managed = ManagedFields::default();
        managed.record_apply(manager, &api_version, subresource, applied_set, &now);
        if let Some(meta) = applied["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let object = prepare_new(state, rt, applied, Owner::Applied(managed));
        let stored = state
            .put(rt, object, Some(false))
            .map_err(|e| store_error(rt, e))?;
        return Ok((StatusCode::CREATED, stored));
    };
    let mut managed = ManagedFields::read(&current);
    let conflicts = find_conflicts(&managed, manager, &applied_set, &applied, &current);
    if !conflicts.is_empty() && !force {
        return Ok((StatusCode::CONFLICT, conflict_status(&conflicts)));
    }
    // A resourceVersion is a precondition of the write the apply becomes,
    // checked after the field conflicts (SA8).
    if let Some(rv) = applied["metadata"]["resourceVersion"].as_str()
        && Some(rv) != current["metadata"]["resourceVersion"].as_str()
    {
        return Err(conflict(rt, name));
    }
    for (_, path) in &conflicts {
        managed.take_from_others(manager, path);
    }

    let mut merged = (*current).clone();
    merge_scoped(&schema, &mut merged, &applied, scope);
    let mut removed = FieldSet::default();
    if let Some(previous) = managed.applied_by(manager, subresource) {
        for path in previous.fields.iter() {
            if !applied_set.contains(path) && !managed.others_own_within(manager, subresource, path)
            {
                removed.insert(path.clone());
            }
        }
    }
    for path in removed.iter() {
        remove_at(&mut merged, path);
    }
    managed.forget(&removed);
    managed.record_apply(manager, &api_version, subresource, applied_set, &now);
    store_update(state, rt, &current, merged, target, Owner::Applied(managed))
}

fn manager_required() -> ApiStatus {
    ApiStatus::invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        &[(
            "FieldValueRequired",
            "fieldManager",
            "Required value: is required for apply patch",
        )],
    )
}

/// The body as JSON, or else as YAML (kube's `Patch::Apply` sends JSON).
fn parse_body(body: &[u8]) -> Result<Value, ApiStatus> {
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value,
        Err(_) => serde_saphyr::from_slice::<Value>(body).map_err(|e| {
            bad_request(&format!(
                "error decoding YAML: error converting YAML to JSON: {e}"
            ))
        })?,
    };
    if !value.is_object() {
        return Err(bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: \
             cannot unmarshal array into Go value of type map[string]interface {}",
        ));
    }
    Ok(value)
}

/// SA1: the applied object must be of the URL's kind and version.
fn check_type(rt: &ResourceType, applied: &Value) -> Result<(), ApiStatus> {
    let api_version = applied["apiVersion"].as_str().unwrap_or("");
    let kind = applied["kind"].as_str().unwrap_or("");
    if api_version == rt.api_version() && kind == rt.kind {
        return Ok(());
    }
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    Err(bad_request(&format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}

/// SA3: the applied scalars (and atomic values) whose value would change
/// and that another manager owns, as (how the message names the manager,
/// path).
fn find_conflicts(
    managed: &ManagedFields,
    manager: &str,
    applied_set: &FieldSet,
    applied: &Value,
    current: &Value,
) -> Vec<(String, Path)> {
    let mut conflicts = Vec::new();
    for path in applied_set.iter() {
        if applied_set.has_below(path) || value_at(applied, path) == value_at(current, path) {
            continue;
        }
        for owner in managed.owners_other_than(manager, path) {
            conflicts.push((owner.describe(), path.clone()));
        }
    }
    conflicts
}

/// The 409 the API server answers (SA3), with a cause per field.
fn conflict_status(conflicts: &[(String, Path)]) -> Value {
    let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (owner, path) in conflicts {
        by_manager.entry(owner).or_default().push(display(path));
    }
    for paths in by_manager.values_mut() {
        paths.sort();
    }
    let message = if let [(owner, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {owner}: {}",
            display(path)
        )
    } else {
        let groups: Vec<String> = by_manager
            .iter()
            .map(|(owner, paths)| {
                let lines: String = paths.iter().map(|p| format!("\n- {p}")).collect();
                format!("conflicts with {owner}:{lines}")
            })
            .collect();
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            groups.join("\n")
        )
    };
    let causes: Vec<Value> = by_manager
        .iter()
        .flat_map(|(owner, paths)| {
            paths.iter().map(move |path| {
                json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {owner}"),
                    "field": path,
                })
            })
        })
        .collect();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Conflict",
        "details": {"causes": causes},
        "code": 409,
    })
}

/// Merges the part of `applied` that `scope` covers into `target` (SA5).
fn merge_scoped(schema: &Schema, target: &mut Value, applied: &Value, scope: Scope) {
    let Some(applied) = applied.as_object() else {
        return;
    };
    for (key, value) in applied {
        let included = match (key.as_str(), scope) {
            ("apiVersion" | "kind", _) => false,
            ("status", Scope::Status) => true,
            (_, Scope::Status) => false,
            ("status", Scope::Main { without_status }) => !without_status,
            _ => true,
        };
        if !included {
            continue;
        }
        if key == "metadata" {
            for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
                if let Some(v) = value.get(field) {
                    let mut fields = vec!["metadata", field];
                    let slot = &mut target["metadata"][field];
                    merge_value(schema, &mut fields, slot, v);
                }
            }
            continue;
        }
        let mut fields = vec![key.as_str()];
        merge_value(schema, &mut fields, &mut target[key.as_str()], value);
    }
}

fn merge_value<'a>(
    schema: &Schema,
    fields: &mut Vec<&'a str>,
    target: &mut Value,
    applied: &'a Value,
) {
    match applied {
        Value::Object(map) if !map.is_empty() && !schema.is_atomic_object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (key, value) in map {
                fields.push(key);
                merge_value(schema, fields, &mut target[key.as_str()], value);
                fields.pop();
            }
        }
        Value::Array(items) => {
            let existing = target.as_array().cloned().unwrap_or_default();
            *target = Value::Array(merge_list(schema, fields, existing, items));
        }
        _ => *target = applied.clone(),
    }
}

fn merge_list<'a>(
    schema: &Schema,
    fields: &mut Vec<&'a str>,
    mut existing: Vec<Value>,
    applied: &'a [Value],
) -> Vec<Value> {
    match schema.list_type(fields) {
        ListType::Atomic => applied.to_vec(),
        ListType::Set => {
            for item in applied {
                if !existing.contains(item) {
                    existing.push(item.clone());
                }
            }
            existing
        }
        ListType::Map { keys, atomic_items } => {
            let key_of = |item: &Value| -> Option<Vec<Value>> {
                keys.iter()
                    .map(|k| match item.get(*k) {
                        Some(v) if !v.is_null() => Some(v.clone()),
                        _ if *k == "protocol" => Some(Value::Null),
                        _ => None,
                    })
                    .collect()
            };
            if applied.iter().any(|i| key_of(i).is_none()) {
                return applied.to_vec();
            }
            for item in applied {
                let wanted = key_of(item);
                match existing.iter_mut().find(|e| key_of(e) == wanted) {
                    Some(slot) if !atomic_items => merge_value(schema, fields, slot, item),
                    Some(slot) => *slot = item.clone(),
                    None => existing.push(item.clone()),
                }
            }
            existing
        }
    }
}
