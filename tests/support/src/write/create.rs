//! `POST` of a collection: a new object, named by the body or by its
//! `generateName` prefix.

use axum::http::StatusCode;
use serde_json::json;

use super::{Answer, body_object, meta_str, place, store_error};
use crate::{
    faults::ApiStatus,
    resource::{CollectionPath, ResourceType},
    store::State,
};

pub(super) fn create(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    body: &[u8],
) -> Answer {
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
    super::finalize::before_create(state, rt, &mut object)?; // DEL12, DEL13 (deletion rules)
    let stored = state
        .put(rt, object, Some(false))
        .map_err(|e| store_error(rt, e))?;
    Ok((StatusCode::CREATED, stored))
}
