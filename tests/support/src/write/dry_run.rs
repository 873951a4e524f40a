//! `dryRun=All`: the write runs in full (checks, defaults, managedFields,
//! conflicts) on a copy of the store that is then thrown away, so nothing
//! is stored, no resourceVersion is taken and no watch sees an event.
//!
//! The answer is the would-be object as the API server gives it: a created
//! object has no resourceVersion yet, a changed one still has its current
//! resourceVersion.
//!
//! - **DR1** `dryRun=All` answers as the write would and stores nothing.
//! - **DR2** any other `dryRun` value is 422 `Invalid` ("Unsupported value").
//! - **DR3** a dry-run create answers a uid that no object gets: the API
//!   server makes one up for the answer, and the next real create gets
//!   another.

use axum::http::{Method, StatusCode};
use serde_json::Value;

use super::{Answer, ObjectRequest, obj_key};
use crate::{faults::ApiStatus, store::State};

/// Whether the request asks for a dry run; any value other than `All` is
/// refused with the API server's 422.
pub(super) fn requested(request: &ObjectRequest<'_>) -> Result<bool, ApiStatus> {
    let options = match *request.method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => return Ok(false),
    };
    // A single object's delete with a body reads its options from the body
    // only (DL8); `delete.rs` handles the body's `dryRun`.
    let has_body = !request.body.iter().all(u8::is_ascii_whitespace);
    if *request.method == Method::DELETE && request.name.is_some() && has_body {
        return Ok(false);
    }
    match request.param("dryRun") {
        None => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiStatus::invalid(
            "meta.k8s.io",
            options,
            "",
            &[(
                "FieldValueNotSupported",
                "dryRun",
                &format!("Unsupported value: [{other:?}]: supported values: \"All\""),
            )],
        )),
    }
}

/// Runs `write` on a copy of `state` and answers what it answered.
pub(super) fn answer(
    state: &State,
    request: &ObjectRequest<'_>,
    write: impl FnOnce(&mut State, &ObjectRequest<'_>) -> Answer,
) -> Answer {
    let mut copy = state.clone();
    let (code, mut body) = write(&mut copy, request)?;
    if !code.is_success() {
        return Ok((code, body));
    }
    if code == StatusCode::CREATED
        && let Some(uid) = body["metadata"]["uid"].as_str()
    {
        // Stored uids are made from the resourceVersion a create takes,
        // which the copy took and the next real create will take too;
        // another variant digit keeps this one apart (DR3).
        let uid = uid.replacen("-8000-", "-9000-", 1);
        body["metadata"]["uid"] = Value::String(uid);
    }
    let name = body["metadata"]["name"].as_str().map(str::to_owned);
    if let (Some(name), Some(meta)) = (name, body["metadata"].as_object_mut()) {
        match state.current(&request.path.resource, &obj_key(request.path, &name)) {
            Some(current) => {
                meta.insert(
                    "resourceVersion".to_owned(),
                    current["metadata"]["resourceVersion"].clone(),
                );
            }
            None => {
                meta.remove("resourceVersion");
            }
        }
    }
    Ok((code, body))
}
