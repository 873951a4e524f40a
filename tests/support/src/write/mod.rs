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
//! event. Deletions follow the rules of `deletion` (finalizers,
//! DeleteOptions, terminating namespaces); after each write the garbage
//! collector and the namespace controller of `gc` finish what it started.
//!
//! Rules (WR1, WR2 and WR6 in `update.rs`, WR5's scanner in `decode.rs`,
//! WR7 in `validate.rs`):
//! - **WR3** An error about one object names it as the API server does:
//!   the message calls the resource by its plural qualified by its group
//!   (`widgets.example.com "a" not found`, `deployments.apps …`), the
//!   `details` carry the name, the plural as `kind` and the group (rule
//!   SD2 of `status.rs`); a validation failure names the kind instead and
//!   gives each cause its `field`.
//! - **WR4** Empty `labels` and `annotations` maps and empty `finalizers`
//!   and `ownerReferences` lists are not stored (the API server's object
//!   metadata leaves them out), so they are neither answered, nor sent to
//!   watches, nor recorded in `managedFields`.
//! - **WR5** A body that does not decode is 400 with the API server's
//!   message: for a create or replace `the object provided is unrecognized
//!   (must be of type Kind): couldn't get version/kind; json parse error:
//!   …` with the body summarised, for a merge patch `error decoding patch:
//!   …`, the syntax error in the words of the API server's JSON scanner. A
//!   patch type the server does not know is 415: `415: Unsupported Media
//!   Type` with empty details for built-in kinds, the list of accepted
//!   types for custom resources. A create that carries a resourceVersion
//!   is 500 without a reason, as the API server's storage answers it.

use axum::{
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use serde_json::{Value, json};

mod apply;
mod create;
mod decode;
mod delete;
mod dry_run;
mod finalize;
mod strategic;
mod target;
mod update;
mod validate;

use crate::{
    Shared,
    faults::ApiStatus,
    http::{Query, json_response, status_response},
    resource::{CollectionPath, ResourceType},
    store::{ObjKey, State, StoreError},
};
use create::create;
use delete::{DeleteOptions, delete, delete_collection};
use target::Target;
use update::{patch, replace};

/// One write or single-object read, as parsed from the request.
pub(crate) struct ObjectRequest<'a> {
    pub(crate) method: &'a Method,
    pub(crate) path: &'a CollectionPath,
    pub(crate) name: Option<&'a str>,
    /// `status` in `…/NAME/status`.
    pub(crate) subresource: Option<&'a str>,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    pub(crate) query: &'a Query,
    /// The query parameters as sent (`fieldManager`, `force`, `dryRun`).
    pub(crate) params: &'a [(String, String)],
}

impl ObjectRequest<'_> {
    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(super) type Answer = Result<(StatusCode, Value), ApiStatus>;

/// Who a write records in `managedFields`.
pub(super) enum Owner<'a> {
    /// A create, replace or non-apply patch by this manager.
    Update(&'a str),
    /// A server-side apply, whose entries are already worked out.
    Applied(crate::managed_fields::ManagedFields),
}

/// The field manager of a write: its `fieldManager` parameter, else the
/// client's User-Agent up to the first `/` (as the API server names
/// managers that do not say), at most 128 characters, else `unknown`
/// (MF1).
pub(super) fn manager(request: &ObjectRequest<'_>) -> String {
    if let Some(manager) = request.param("fieldManager") {
        return manager.to_owned();
    }
    let agent = request
        .headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix: String = agent
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
        .take(128)
        .collect();
    if prefix.is_empty() {
        "unknown".to_owned()
    } else {
        prefix
    }
}

pub(crate) fn serve(shared: &Shared, request: ObjectRequest<'_>) -> Response {
    let answer = {
        let mut state = shared.state.lock();
        let before = state.rv;
        // CustomResourceDefinitions: checked, established, cleaned up on
        // deletion (a dry run goes through the same checks on a copy).
        let write = |state: &mut State, request: &ObjectRequest<'_>| {
            crate::crd::around_write(state, request, answer)
        };
        let answer = match dry_run::requested(&request) {
            Ok(false) => write(&mut state, &request),
            Ok(true) => dry_run::answer(&state, &request, write),
            Err(status) => Err(status),
        };
        crate::gc::settle(&mut state, before); // the controllers finish deletions (GC8)
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
    if let Some(subresource) = request.subresource {
        return answer_subresource(state, &rt, request, subresource);
    }
    match (request.method, request.name) {
        (&Method::GET, Some(name)) => {
            let key = obj_key(path, name);
            let current = state
                .current(&path.resource, &key)
                .ok_or_else(|| not_found(&rt, name))?;
            Ok((StatusCode::OK, (*current).clone()))
        }
        (&Method::POST, None) => create(state, &rt, path, request),
        (&Method::PUT, Some(name)) => replace(state, &rt, path, name, request, Target::Main),
        (&Method::PATCH, Some(name)) => patch(state, &rt, path, name, request, Target::Main),
        (&Method::DELETE, Some(name)) => {
            let options = DeleteOptions::parse(request.params, request.body, true)?;
            delete(state, &rt, path, name, &options)
        }
        (&Method::DELETE, None) => {
            let options = DeleteOptions::parse(request.params, request.body, false)?;
            delete_collection(state, &rt, path, request.query, &options)
        }
        _ => Err(ApiStatus::new(
            405,
            "MethodNotAllowed",
            &format!("{} is not supported on {}", request.method, path.resource),
        )),
    }
}

/// `GET`, `PUT` and `PATCH` of `…/NAME/status`: the whole object is read
/// and answered, only its `status` is written. Kinds without a `/status`
/// subresource, and other subresources, are not found.
fn answer_subresource(
    state: &mut State,
    rt: &ResourceType,
    request: &ObjectRequest<'_>,
    subresource: &str,
) -> Answer {
    let (path, name) = (request.path, request.name.unwrap_or_default());
    if subresource != "status" || !rt.status_subresource {
        return Err(not_found_url());
    }
    match *request.method {
        Method::GET => state
            .current(&path.resource, &obj_key(path, name))
            .map(|current| (StatusCode::OK, (*current).clone()))
            .ok_or_else(|| not_found(rt, name)),
        Method::PUT => replace(state, rt, path, name, request, Target::Status),
        Method::PATCH => patch(state, rt, path, name, request, Target::Status),
        _ => Err(ApiStatus::new(
            405,
            "MethodNotAllowed",
            &format!(
                "{} is not supported on {}/status",
                request.method, path.resource
            ),
        )),
    }
}

pub(super) fn obj_key(path: &CollectionPath, name: &str) -> ObjKey {
    (path.namespace.clone().unwrap_or_default(), name.to_owned())
}

pub(super) fn not_found_url() -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .with_empty_details()
}

/// The resource as the API server's messages name it: its plural,
/// qualified by its group when it has one (`deployments.apps`, WR3).
pub(super) fn qualified(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    }
}

pub(super) fn not_found(rt: &ResourceType, name: &str) -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", qualified(rt)),
    )
    .naming(&rt.group, &rt.plural, name)
}

pub(super) fn conflict(rt: &ResourceType, name: &str) -> ApiStatus {
    ApiStatus::conflict(&qualified(rt), name)
}

pub(super) fn bad_request(message: &str) -> ApiStatus {
    ApiStatus::new(400, "BadRequest", message)
}

pub(super) fn store_error(rt: &ResourceType, error: StoreError) -> ApiStatus {
    match error {
        StoreError::AlreadyExists(key) => {
            let name = key.rsplit('/').next().unwrap_or(&key);
            ApiStatus::new(
                409,
                "AlreadyExists",
                &format!("{} \"{name}\" already exists", qualified(rt)),
            )
            .naming(&rt.group, &rt.plural, name)
        }
        StoreError::NotFound(key) => not_found(rt, key.rsplit('/').next().unwrap_or(&key)),
        StoreError::MissingName => ApiStatus::invalid(
            &rt.group,
            &rt.kind,
            "",
            &[(
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required",
            )],
        ),
        StoreError::BadNamespace(message) => bad_request(&message),
    }
}

/// Drops the metadata the API server does not keep when it is empty
/// (WR4): an empty map or list there would otherwise reach answers,
/// watches and `managedFields`.
pub(super) fn drop_empty_metadata(object: &mut Value) {
    let Some(meta) = object["metadata"].as_object_mut() else {
        return;
    };
    for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
        let empty = match meta.get(field) {
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(field);
        }
    }
}

pub(super) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object["metadata"][field].as_str().filter(|s| !s.is_empty())
}

/// Puts the URL's namespace into `object`, refusing a body that names
/// another one (the API server's check); cluster-scoped objects lose any
/// namespace they carry.
pub(super) fn place(object: &mut Value, path: &CollectionPath) -> Result<(), ApiStatus> {
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
