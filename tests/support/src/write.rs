//! Reads and writes of one object over HTTP: `GET`, `POST` (create), `PUT`
//! (replace), `PATCH` (JSON merge patch, or JSON patch with `test`) and
//! `DELETE`, plus `DELETE` of a collection. Each change goes through the same versioned store as the
//! test-side `create`/`update`/`delete`, so it gets the next resourceVersion
//! and open watches see it as one event.
//!
//! The answers follow the API server's: 201 with the stored object for a
//! creation, 200 for the rest, 404 `NotFound`, 409 `AlreadyExists` or
//! `Conflict` (a stale `resourceVersion` in a replace, a patch or a delete
//! precondition), 400 for a body that contradicts the URL, 422 `Invalid` for
//! a JSON patch operation that does not apply (a failed `test` among them),
//! 415 for a patch type the server does not implement. A replace or patch
//! that changes nothing writes nothing: no new resourceVersion, no watch
//! event.

use axum::{
    http::{HeaderMap, Method, StatusCode, header},
    response::Response,
};
use serde_json::{Map, Value, json};

use crate::{
    Shared,
    faults::ApiStatus,
    http::{Query, json_response, status_response},
    json_patch,
    resource::{CollectionPath, ResourceType},
    store::{ObjKey, State, StoreError},
};

/// One write or single-object read, as parsed from the request.
pub(crate) struct ObjectRequest<'a> {
    pub(crate) method: &'a Method,
    pub(crate) path: &'a CollectionPath,
    pub(crate) name: Option<&'a str>,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    pub(crate) query: &'a Query,
    pub(crate) dry_run: bool,
}

type Answer = Result<(StatusCode, Value), ApiStatus>;

pub(crate) fn serve(shared: &Shared, request: ObjectRequest<'_>) -> Response {
    if request.dry_run {
        return status_response(&ApiStatus::new(
            400,
            "BadRequest",
            "dryRun is not supported by the fake server",
        ));
    }
    let answer = {
        let mut state = shared.state.lock();
        let before = state.rv;
        let answer = answer(&mut state, &request);
        if state.rv != before {
            drop(state);
            shared.changed.notify_waiters();
        }
        answer
    };
    match answer {
        Ok((code, body)) => {
            let mut response = json_response(&body);
            *response.status_mut() = code;
            response
        }
        Err(status) => status_response(&status),
    }
}

fn answer(state: &mut State, request: &ObjectRequest<'_>) -> Answer {
    let path = request.path;
    let Some(rt) = state.resource_type(&path.resource) else {
        return Err(ApiStatus::new(
            404,
            "NotFound",
            &format!(
                "the server could not find the requested resource ({})",
                path.resource
            ),
        ));
    };
    if rt.namespaced == path.namespace.is_none() && request.name.is_some() {
        // `/api/v1/configmaps/x` or `/api/v1/namespaces/ns/nodes/x`.
        return Err(not_found_url());
    }
    match (request.method, request.name) {
        (&Method::GET, Some(name)) => {
            let key = obj_key(path, name);
            let current = state
                .current(&path.resource, &key)
                .ok_or_else(|| not_found(&rt, name))?;
            Ok((StatusCode::OK, (*current).clone()))
        }
        (&Method::POST, None) => create(state, &rt, path, request.body),
        (&Method::PUT, Some(name)) => replace(state, &rt, path, name, request.body),
        (&Method::PATCH, Some(name)) => patch(state, &rt, path, name, request),
        (&Method::DELETE, Some(name)) => delete(state, &rt, path, name, request.body),
        (&Method::DELETE, None) => delete_collection(state, &rt, path, request.query),
        _ => Err(ApiStatus::new(
            405,
            "MethodNotAllowed",
            &format!("{} is not supported on {}", request.method, path.resource),
        )),
    }
}

fn obj_key(path: &CollectionPath, name: &str) -> ObjKey {
    (path.namespace.clone().unwrap_or_default(), name.to_owned())
}

fn not_found_url() -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn not_found(rt: &ResourceType, name: &str) -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", rt.plural),
    )
}

fn conflict(rt: &ResourceType, name: &str) -> ApiStatus {
    ApiStatus::new(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
             please apply your changes to the latest version and try again",
            rt.plural
        ),
    )
}

fn bad_request(message: &str) -> ApiStatus {
    ApiStatus::new(400, "BadRequest", message)
}

fn store_error(rt: &ResourceType, error: StoreError) -> ApiStatus {
    match error {
        StoreError::AlreadyExists(key) => {
            let name = key.rsplit('/').next().unwrap_or(&key);
            ApiStatus::new(
                409,
                "AlreadyExists",
                &format!("{} \"{name}\" already exists", rt.plural),
            )
        }
        StoreError::NotFound(key) => not_found(rt, key.rsplit('/').next().unwrap_or(&key)),
        StoreError::MissingName => ApiStatus::new(
            422,
            "Invalid",
            &format!("{} is invalid: metadata.name: Required value", rt.kind),
        ),
        StoreError::BadNamespace(message) => bad_request(&message),
    }
}

/// The request body as a JSON object.
fn body_object(body: &[u8]) -> Result<Value, ApiStatus> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| bad_request(&format!("the request body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(bad_request("the request body is not a JSON object"));
    }
    Ok(value)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object["metadata"][field].as_str().filter(|s| !s.is_empty())
}

/// Puts the URL's namespace into `object`, refusing a body that names
/// another one (the API server's check); cluster-scoped objects lose any
/// namespace they carry.
fn place(object: &mut Value, path: &CollectionPath) -> Result<(), ApiStatus> {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    match (&path.namespace, meta_str(object, "namespace")) {
        (Some(url), Some(body)) if url != body => Err(bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        (Some(url), _) => {
            object["metadata"]["namespace"] = json!(url);
            Ok(())
        }
        (None, _) => {
            if let Some(meta) = object["metadata"].as_object_mut() {
                meta.remove("namespace");
            }
            Ok(())
        }
    }
}

fn create(state: &mut State, rt: &ResourceType, path: &CollectionPath, body: &[u8]) -> Answer {
    if rt.namespaced && path.namespace.is_none() {
        return Err(ApiStatus::new(
            405,
            "MethodNotAllowed",
            &format!("create {} needs a namespace in the URL", rt.plural),
        ));
    }
    let mut object = body_object(body)?;
    place(&mut object, path)?;
    if meta_str(&object, "resourceVersion").is_some() {
        // What the API server's storage says, as an internal error.
        return Err(ApiStatus::new(
            500,
            "InternalError",
            "Internal error occurred: resourceVersion should not be set on objects to be created",
        ));
    }
    if meta_str(&object, "name").is_none()
        && let Some(prefix) = meta_str(&object, "generateName").map(str::to_owned)
    {
        // Unique because the suffix is the resourceVersion this write takes.
        object["metadata"]["name"] = json!(format!("{prefix}{:05x}", state.rv + 1));
    }
    let stored = state
        .put(rt, object, Some(false))
        .map_err(|e| store_error(rt, e))?;
    Ok((StatusCode::CREATED, stored))
}

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
    if &object == current {
        return Ok((StatusCode::OK, object));
    }
    let stored = state
        .put(rt, object, Some(true))
        .map_err(|e| store_error(rt, e))?;
    Ok((StatusCode::OK, stored))
}

fn replace(
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

fn patch(
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
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
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

fn delete(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    body: &[u8],
) -> Answer {
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        // DeleteOptions: only the preconditions change what happens here.
        let options = body_object(body)?;
        let pre = &options["preconditions"];
        for field in ["resourceVersion", "uid"] {
            if let Some(wanted) = pre[field].as_str()
                && Some(wanted) != meta_str(&current, field)
            {
                return Err(conflict(rt, name));
            }
        }
    }
    let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
    if is_namespace {
        // Without a namespace controller the contents would linger; they
        // go first, each with its own event, then the namespace.
        state.delete_namespace_contents(name);
    }
    let last = state
        .delete(rt, path.namespace.as_deref(), name)
        .map_err(|e| store_error(rt, e))?;
    Ok((StatusCode::OK, last))
}

fn delete_collection(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    query: &Query,
) -> Answer {
    let doomed: Vec<(String, String)> = state
        .current_objects(rt)
        .iter()
        .filter(|o| query.selects(path.namespace.as_deref(), o))
        .filter_map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("").to_owned();
            Some((ns, meta_str(o, "name")?.to_owned()))
        })
        .collect();
    let mut items = Vec::new();
    for (ns, name) in doomed {
        let namespace = Some(ns.as_str()).filter(|n| !n.is_empty());
        if rt.group.is_empty() && rt.plural == "namespaces" {
            state.delete_namespace_contents(&name);
        }
        items.push(
            state
                .delete(rt, namespace, &name)
                .map_err(|e| store_error(rt, e))?,
        );
    }
    let body = json!({
        "kind": format!("{}List", rt.kind),
        "apiVersion": rt.api_version(),
        "metadata": {"resourceVersion": state.rv.to_string()},
        "items": items,
    });
    Ok((StatusCode::OK, body))
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
