//! `PUT` (replace) and `PATCH` (JSON merge patch, JSON patch, strategic
//! merge patch; server-side apply is handed to `apply.rs`) of one object or
//! its `/status`, with the resourceVersion precondition either may carry.
//! Each records its field manager's changes in `managedFields`.
//!
//! - **WR1** A `PUT` of a custom resource must carry the resourceVersion it
//!   replaces (422 `Invalid` without one); built-in kinds may be replaced
//!   unconditionally.
//! - **WR2** A JSON merge patch follows RFC 7386: objects merge member by
//!   member, `null` removes a member, anything else replaces the target.
//! - **WR6** A `PUT` checks its body before it looks the object up: a body
//!   that does not decode, has no name, names another object or another
//!   namespace is 400 `BadRequest` whether or not the object exists. A
//!   `PATCH` looks the object up first (404 before any 400 about its
//!   body), as the API server does.

use axum::http::{StatusCode, header};
use serde_json::{Map, Value, json};

use super::{
    Answer, ObjectRequest, Owner, apply, bad_request, conflict, decode, manager, meta_str,
    not_found, obj_key, place, store_error, strategic, target::Target,
};
use crate::{
    faults::ApiStatus,
    field_set::{Fields, changes},
    json_patch,
    managed_fields::ManagedFields,
    merge_keys::Schema,
    resource::{CollectionPath, ResourceType},
    store::State,
};

/// Checks that `object`, when it has a name, names the URL's object.
fn check_name(object: &Value, name: &str) -> Result<(), ApiStatus> {
    match meta_str(object, "name") {
        Some(body) if body != name => Err(bad_request(&format!(
            "the name of the object ({body}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// Checks that `object` names the URL's object and, when it carries a
/// resourceVersion, that it is the current one.
fn check_identity(
    rt: &ResourceType,
    object: &Value,
    current: &Value,
    name: &str,
) -> Result<(), ApiStatus> {
    check_name(object, name)?;
    if let Some(rv) = meta_str(object, "resourceVersion")
        && Some(rv) != meta_str(current, "resourceVersion")
    {
        return Err(conflict(rt, name));
    }
    Ok(())
}

/// The metadata only the server changes once an object exists.
const SERVER_KEPT: &[&str] = &[
    "name",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Stores `object` as the new state of `name`, cut down to what `target`
/// may change, with its managedFields brought up to date for `owner`;
/// unless it equals the current one (then nothing is written, as the API
/// server skips no-op updates).
pub(super) fn store_update(
    state: &mut State,
    rt: &ResourceType,
    current: &Value,
    object: Value,
    target: Target,
    owner: Owner<'_>,
) -> Answer {
    let mut object = target.confine(rt, Some(current), object);
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    super::drop_empty_metadata(&mut object);
    super::validate::update(rt, current, &object)?; // WR7
    for field in SERVER_KEPT {
        match current["metadata"].get(*field) {
            Some(v) => object["metadata"][*field] = v.clone(),
            None => {
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove(*field);
                }
            }
        }
    }
    object["kind"] = current["kind"].clone();
    object["apiVersion"] = current["apiVersion"].clone();
    let managed = match owner {
        Owner::Applied(managed) => managed,
        Owner::Update(manager) => {
            let schema = Schema::of(rt);
            let scope = target.scope(rt);
            let (changed, removed) = changes(
                &schema,
                current,
                &object,
                &Fields::of(&schema, current, scope),
                &Fields::of(&schema, &object, scope),
            );
            let mut managed = ManagedFields::read(current);
            managed.record_update(
                manager,
                &rt.api_version(),
                target.subresource(),
                &changed,
                &removed,
                &state.clock.now(),
            );
            managed
        }
    };
    managed.write(&mut object);
    // Deletion rules DL4–DL6 (write/finalize.rs). An update that releases
    // the object answers it as written, its managedFields up to date.
    if let Some(answer) = super::finalize::before_update(state, rt, current, &mut object)? {
        return Ok((StatusCode::OK, answer));
    }
    if &object == current {
        return Ok((StatusCode::OK, object));
    }
    let stored = state
        .put(rt, object, Some(true))
        .map_err(|e| store_error(rt, e))?;
    Ok((StatusCode::OK, stored))
}

pub(super) fn replace(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    request: &ObjectRequest<'_>,
    target: Target,
) -> Answer {
    // WR6: what the body says is checked before the object is looked up.
    let mut object = decode::object(rt, request)?;
    if meta_str(&object, "name").is_none() {
        return Err(bad_request(&format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )));
    }
    check_name(&object, name)?;
    place(&mut object, path)?;
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    check_identity(rt, &object, &current, name)?;
    if meta_str(&object, "resourceVersion").is_none()
        && crate::crd::find_definition(state, &rt.group, &rt.plural).is_some()
    {
        // WR1: custom resources allow no unconditional update.
        return Err(ApiStatus::invalid(
            &rt.group,
            &rt.plural,
            name,
            &[(
                "FieldValueInvalid",
                "metadata.resourceVersion",
                "Invalid value: 0: must be specified for an update",
            )],
        ));
    }
    store_update(
        state,
        rt,
        &current,
        object,
        target,
        Owner::Update(&manager(request)),
    )
}

pub(super) fn patch(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    request: &ObjectRequest<'_>,
    target: Target,
) -> Answer {
    let content_type = request
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    let kind = match media_type {
        "application/json-patch+json" => PatchKind::Json,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/strategic-merge-patch+json" if Schema::of(rt).is_builtin() => {
            PatchKind::Strategic
        }
        "application/apply-patch+yaml" => {
            return apply::apply(state, rt, path, name, request, target);
        }
        _ if Schema::of(rt).is_builtin() => {
            // The API server's answer for built-in kinds (WR5): a bare
            // status with empty details.
            return Err(
                ApiStatus::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                    .with_empty_details(),
            );
        }
        _ => {
            // Custom resources (strategic merge patches among them) are
            // told what they may send (WR5).
            return Err(ApiStatus::new(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml",
            ));
        }
    };
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    let mut object = (*current).clone();
    match kind {
        PatchKind::Json => {
            apply_json_patch(&mut object, request.body)?;
            // The patched object is checked as a replacement would be: a
            // resourceVersion the patch set is a precondition.
            check_identity(rt, &object, &current, name)?;
        }
        PatchKind::Merge | PatchKind::Strategic => {
            let patch = decode::patch_object(request.body, kind == PatchKind::Strategic)?;
            // A resourceVersion in the patch is a precondition.
            check_identity(rt, &patch, &current, name)?;
            if kind == PatchKind::Merge {
                merge_patch(&mut object, &patch);
            } else {
                strategic::patch(&Schema::of(rt), &mut object, &patch)?;
            }
        }
    }
    place(&mut object, path)?;
    store_update(
        state,
        rt,
        &current,
        object,
        target,
        Owner::Update(&manager(request)),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Json,
    Merge,
    Strategic,
}

/// Applies a JSON patch (RFC 6902) body to `object`, answering as the API
/// server does: 400 for a body that is not a list of operations, 422 with
/// the API server's message (it names no cause) for an operation that does
/// not apply, a failed `test` included; the cause goes to the log.
fn apply_json_patch(object: &mut Value, body: &[u8]) -> Result<(), ApiStatus> {
    let not_operations = |found: &Value, of_type: &str| {
        let kind = decode::json_type(found);
        bad_request(&format!(
            "error decoding patch: json: cannot unmarshal {kind} into Go value of type {of_type}"
        ))
    };
    if let Some(why) = decode::syntax_error(body) {
        return Err(bad_request(&format!("error decoding patch: {why}")));
    }
    let operations = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(operations)) => operations,
        Ok(other) => return Err(not_operations(&other, "[]handlers.jsonPatchOp")),
        Err(e) => return Err(bad_request(&format!("error decoding patch: {e}"))),
    };
    if let Some(other) = operations.iter().find(|op| !op.is_object()) {
        return Err(not_operations(other, "handlers.jsonPatchOp"));
    }
    json_patch::apply(object, &operations).map_err(|json_patch::PatchError(why)| {
        tracing::debug!(%why, "JSON patch refused");
        ApiStatus::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
        .with_empty_details()
    })
}

/// RFC 7386: objects merge key by key, `null` removes a key, anything else
/// replaces the target.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn wr2_merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(
            &mut target,
            &json!({"a": "z", "c": {"f": null}, "l": [3], "n": {"x": 1}}),
        );
        assert_eq!(
            target,
            json!({"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}})
        );
    }
}
