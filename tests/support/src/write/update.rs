//! `PUT` (replace) and `PATCH` (JSON merge patch, JSON patch) of one object,
//! with the resourceVersion precondition either may carry.

use axum::http::{StatusCode, header};
use serde_json::{Map, Value, json};

use super::{
    Answer, ObjectRequest, bad_request, body_object, conflict, meta_str, not_found, obj_key, place,
    store_error,
};
use crate::{
    faults::ApiStatus,
    json_patch,
    resource::{CollectionPath, ResourceType},
    store::State,
};

/// Checks that `object` names the URL's object and, when it carries a
/// resourceVersion, that it is the current one.
fn check_identity(
    rt: &ResourceType,
    object: &Value,
    current: &Value,
    name: &str,
) -> Result<(), ApiStatus> {
    match meta_str(object, "name") {
        Some(body) if body != name => {
            return Err(bad_request(&format!(
                "the name of the object ({body}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if let Some(rv) = meta_str(object, "resourceVersion")
        && Some(rv) != meta_str(current, "resourceVersion")
    {
        return Err(conflict(rt, name));
    }
    Ok(())
}

/// Stores `object` as the new state of `name` unless it equals the current
/// one (then nothing is written, as the API server skips no-op updates).
fn store_update(
    state: &mut State,
    rt: &ResourceType,
    current: &Value,
    mut object: Value,
    name: &str,
) -> Answer {
    object["metadata"]["name"] = json!(name);
    // The server owns these: keep the stored ones.
    for field in ["resourceVersion", "uid", "creationTimestamp"] {
        match current["metadata"].get(field) {
            Some(v) => object["metadata"][field] = v.clone(),
            None => {
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove(field);
                }
            }
        }
    }
    object["kind"] = current["kind"].clone();
    object["apiVersion"] = current["apiVersion"].clone();
    // Deletion rules DEL4–DEL6 (write/finalize.rs).
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
    body: &[u8],
) -> Answer {
    let mut object = body_object(body)?;
    place(&mut object, path)?;
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    check_identity(rt, &object, &current, name)?;
    store_update(state, rt, &current, object, name)
}

pub(super) fn patch(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    request: &ObjectRequest<'_>,
) -> Answer {
    let content_type = request
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let json_patch = content_type.starts_with("application/json-patch+json");
    // A strategic merge patch of maps (labels, annotations, data) is a merge
    // patch; lists are replaced whole rather than merged by key.
    if !json_patch
        && !content_type.starts_with("application/merge-patch+json")
        && !content_type.starts_with("application/strategic-merge-patch+json")
    {
        return Err(ApiStatus::new(
            415,
            "UnsupportedMediaType",
            &format!(
                "the fake server applies merge and JSON patches only, not {content_type:?}; \
                 send application/merge-patch+json or application/json-patch+json"
            ),
        ));
    }
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    let mut object = (*current).clone();
    if json_patch {
        apply_json_patch(&mut object, request.body)?;
        // The patched object is checked as a replacement would be: a
        // resourceVersion the patch set is a precondition.
        check_identity(rt, &object, &current, name)?;
    } else {
        let patch = body_object(request.body)?;
        // A resourceVersion in the patch is a precondition.
        check_identity(rt, &patch, &current, name)?;
        merge_patch(&mut object, &patch);
    }
    place(&mut object, path)?;
    store_update(state, rt, &current, object, name)
}

/// Applies a JSON patch (RFC 6902) body to `object`, answering as the API
/// server does: 400 for a body that is not a list of operations, 422 with
/// the API server's message (it names no cause) for an operation that does
/// not apply, a failed `test` included; the cause goes to the log.
fn apply_json_patch(object: &mut Value, body: &[u8]) -> Result<(), ApiStatus> {
    let not_operations = |found: &Value, of_type: &str| {
        let kind = match found {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        bad_request(&format!(
            "error decoding patch: json: cannot unmarshal {kind} into Go value of type {of_type}"
        ))
    };
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
    fn merge_patch_follows_rfc_7386() {
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
