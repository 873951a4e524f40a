//! A CRD's life in the store: created (and established), replaced, and
//! deleted with every object of its type (CR1–CR3, CR6).

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::definition::{CRD_GROUP, CRD_PLURAL, Definition, crd_resource_type};
use crate::{
    faults::ApiStatus,
    resource::ResourceType,
    store::{State, StoreError},
    write::ObjectRequest,
};

/// The finalizer the API server puts on a CRD being deleted until every
/// object of its type is gone.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

type Answer = Result<(StatusCode, Value), ApiStatus>;

/// Every stored CRD that parses, in name order.
pub(crate) fn definitions(state: &State) -> Vec<Definition> {
    state
        .current_objects(&crd_resource_type())
        .iter()
        .filter_map(|crd| Definition::parse(crd).ok())
        .collect()
}

/// The CRD that defines `plural` in `group`, if one is stored.
pub(crate) fn find_definition(state: &State, group: &str, plural: &str) -> Option<Definition> {
    if group.is_empty() {
        return None;
    }
    definitions(state)
        .into_iter()
        .find(|d| d.group == group && d.plural == plural)
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, time: &str) -> Value {
    json!({
        "type": kind, "status": status, "lastTransitionTime": time,
        "reason": reason, "message": message,
    })
}

fn crd_not_found(name: &str) -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        &format!("{CRD_PLURAL}.{CRD_GROUP} {name:?} not found"),
    )
}

fn store_failure(error: StoreError) -> ApiStatus {
    match error {
        StoreError::NotFound(name) => crd_not_found(&name),
        StoreError::AlreadyExists(name) => ApiStatus::new(
            409,
            "AlreadyExists",
            &format!("{CRD_PLURAL}.{CRD_GROUP} {name:?} already exists"),
        ),
        other => ApiStatus::new(400, "BadRequest", &other.to_string()),
    }
}

/// What the API server defaults on a new CRD (CR3): the conversion
/// strategy and an empty status.
fn with_defaults(mut crd: Value, definition: &Definition) -> Value {
    if crd["spec"]["conversion"].is_null() {
        crd["spec"]["conversion"] = json!({"strategy": "None"});
    }
    crd["status"] = initial_status(definition);
    crd
}

/// The status a CRD is created with, whatever the request's body said: the
/// names are not accepted yet and only the storage version is stored.
fn initial_status(definition: &Definition) -> Value {
    json!({
        "conditions": null,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": [definition.storage().name],
    })
}

/// Sets the status of a CRD about to be created over HTTP: the create path
/// drops a body's status for kinds with a status subresource (SS1), and a
/// CRD's creation sets its own (CR3).
pub(crate) fn status_on_create(rt: &ResourceType, object: &mut Value) {
    if rt.group != CRD_GROUP || rt.plural != CRD_PLURAL {
        return;
    }
    if let Ok(definition) = Definition::parse(object) {
        object["status"] = initial_status(&definition);
    }
}

/// Accepts the names of a new CRD and establishes it: two status updates,
/// as the API server's naming and establishing controllers make (CR3).
fn establish(state: &mut State, name: &str, definition: &Definition) -> Result<(), ApiStatus> {
    let rt = crd_resource_type();
    let key = (String::new(), name.to_owned());
    let mut crd = (*state
        .current(&rt.id(), &key)
        .ok_or_else(|| crd_not_found(name))?)
    .clone();
    // The server's clock (GN2): the same on every run of a paused-clock test.
    let time = state.clock.now();
    let accepted = condition(
        "NamesAccepted",
        "True",
        "NoConflicts",
        "no conflicts found",
        &time,
    );
    let initial = "the initial names have been accepted";
    crd["status"]["acceptedNames"] = definition.accepted_names(&crd["spec"]["names"]);
    crd["status"]["conditions"] = json!([
        accepted,
        condition("Established", "False", "Installing", initial, &time)
    ]);
    let crd = state.put(&rt, crd, Some(true)).map_err(store_failure)?;
    let mut crd = crd;
    crd["status"]["conditions"][1] = condition(
        "Established",
        "True",
        "InitialNamesAccepted",
        initial,
        &time,
    );
    state.put(&rt, crd, Some(true)).map_err(store_failure)?;
    Ok(())
}

/// Makes the types of `definition` known; returns them, storage version
/// first, then the other served versions in the CRD's order (CR1, CR7).
fn serve_types(state: &mut State, definition: &Definition) -> Vec<ResourceType> {
    let storage = definition.resource_type(definition.storage());
    state.register(&storage);
    let mut types = vec![storage];
    types.extend(
        definition
            .versions
            .iter()
            .filter(|v| v.served && !v.storage)
            .map(|v| definition.resource_type(v)),
    );
    types
}

/// The test side's registration: creates and establishes the CRD, or
/// replaces the spec of one of the same name (its status kept).
pub(super) fn register(state: &mut State, mut crd: Value) -> Result<Vec<ResourceType>, ApiStatus> {
    if !crd.is_object() {
        return Err(ApiStatus::new(400, "BadRequest", "a CRD is a JSON object"));
    }
    let definition = Definition::parse(&crd)?;
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let rt = crd_resource_type();
    let key = (String::new(), name.clone());
    if let Some(meta) = crd["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
    match state.current(&rt.id(), &key) {
        Some(old) => {
            crd["status"] = old["status"].clone();
            crd["metadata"]["uid"] = old["metadata"]["uid"].clone();
            if crd["spec"]["conversion"].is_null() {
                crd["spec"]["conversion"] = json!({"strategy": "None"});
            }
            if crd != *old {
                state.put(&rt, crd, Some(true)).map_err(store_failure)?;
            }
        }
        None => {
            state
                .put(&rt, with_defaults(crd, &definition), Some(false))
                .map_err(store_failure)?;
            establish(state, &name, &definition)?;
        }
    }
    Ok(serve_types(state, &definition))
}

/// Deletes a CRD and everything of its type, in the order the API server's
/// cleanup goes (CR6). Returns the CRD as marked for deletion (what the
/// `DELETE` answers) and its last state.
pub(super) fn delete(state: &mut State, name: &str) -> Result<(Value, Value), ApiStatus> {
    let rt = crd_resource_type();
    let key = (String::new(), name.to_owned());
    let mut crd = (*state
        .current(&rt.id(), &key)
        .ok_or_else(|| crd_not_found(name))?)
    .clone();
    // The server's clock (GN2): the same on every run of a paused-clock test.
    let time = state.clock.now();
    crd["metadata"]["deletionTimestamp"] = json!(time);
    let finalizers = crd["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !finalizers.contains(&json!(CLEANUP_FINALIZER)) {
        let mut finalizers = finalizers;
        finalizers.push(json!(CLEANUP_FINALIZER));
        crd["metadata"]["finalizers"] = json!(finalizers);
    }
    let mut conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "Terminating");
    let at = conditions.len();
    conditions.push(condition(
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        &time,
    ));
    crd["status"]["conditions"] = json!(conditions);
    let marked = state.put(&rt, crd, Some(true)).map_err(store_failure)?;
    let mut in_progress = marked.clone();
    in_progress["status"]["conditions"][at] = condition(
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        &time,
    );
    state
        .put(&rt, in_progress, Some(true))
        .map_err(store_failure)?;
    if let Ok(definition) = Definition::parse(&marked) {
        remove_instances(state, &definition);
    }
    let last = state.delete(&rt, None, name).map_err(store_failure)?;
    Ok((marked, last))
}

/// Deletes every object of the type (one event each) and stops serving it;
/// open watches of it end once they have sent those events.
fn remove_instances(state: &mut State, definition: &Definition) {
    let storage = definition.resource_type(definition.storage());
    for object in state.current_objects(&storage) {
        let namespace = object["metadata"]["namespace"].as_str();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        // Listed under the same lock, so it is there to delete.
        let _ = state.delete(&storage, namespace, name);
    }
    state.collections.remove(&storage.id());
}

/// The CRD side of a write over HTTP (the hook in `write::serve`): a
/// `POST` of a CRD is checked, defaulted and established, a `PUT` checked,
/// a `PATCH` or `PUT` re-registers the types, and a `DELETE` cleans up as
/// the API server does. Writes of other resources go straight to `write`.
pub(crate) fn around_write(
    state: &mut State,
    request: &ObjectRequest<'_>,
    write: impl FnOnce(&mut State, &ObjectRequest<'_>) -> Answer,
) -> Answer {
    let id = &request.path.resource;
    if id.group != CRD_GROUP || id.plural != CRD_PLURAL || id.version != "v1" {
        return write(state, request);
    }
    let body: Option<Value> = serde_json::from_slice(request.body).ok();
    match (request.method, request.name, body) {
        (&Method::POST, None, Some(crd)) if crd.is_object() => {
            let definition = Definition::parse(&crd)?;
            let defaulted = with_defaults(crd, &definition).to_string();
            let request = ObjectRequest {
                body: defaulted.as_bytes(),
                ..*request
            };
            let (code, created) = write(state, &request)?;
            let name = created["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            establish(state, &name, &definition)?;
            serve_types(state, &definition);
            Ok((code, created))
        }
        (&Method::DELETE, Some(name), _)
            if state
                .current(id, &(String::new(), name.to_owned()))
                .is_some() =>
        {
            delete(state, name).map(|(marked, _)| (StatusCode::OK, marked))
        }
        (&Method::PUT, Some(_), Some(crd)) => {
            Definition::parse(&crd)?;
            let answer = write(state, request);
            after_change(state, answer)
        }
        (&Method::DELETE, None, _) => {
            let answer = write(state, request)?;
            for crd in answer.1["items"].as_array().into_iter().flatten() {
                if let Ok(definition) = Definition::parse(crd) {
                    remove_instances(state, &definition);
                }
            }
            Ok(answer)
        }
        _ => {
            let answer = write(state, request);
            after_change(state, answer)
        }
    }
}

/// After a replace or patch of a CRD: serve the types it now defines.
fn after_change(state: &mut State, answer: Answer) -> Answer {
    if let Ok((_, crd)) = &answer
        && let Ok(definition) = Definition::parse(crd)
    {
        serve_types(state, &definition);
    }
    answer
}
