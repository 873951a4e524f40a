//! `POST` of a collection: a new object, named by the body or by its
//! `generateName` prefix, owned (in `managedFields`) by the request's
//! field manager.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{
    Answer, ObjectRequest, Owner, decode, manager, meta_str, place, store_error, target::Target,
};
use crate::{
    faults::ApiStatus,
    field_set::{Fields, changes},
    managed_fields::ManagedFields,
    merge_keys::Schema,
    resource::{CollectionPath, ResourceType},
    store::State,
};

/// The metadata a client cannot choose when it creates an object.
const SERVER_SET: &[&str] = &[
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

pub(super) fn create(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    request: &ObjectRequest<'_>,
) -> Answer {
    if rt.namespaced && path.namespace.is_none() {
        return Err(ApiStatus::new(
            405,
            "MethodNotAllowed",
            &format!("create {} needs a namespace in the URL", rt.plural),
        ));
    }
    let mut object = decode::object(rt, request)?;
    place(&mut object, path)?;
    if meta_str(&object, "resourceVersion").is_some() {
        // What the API server's storage says, passed on as it is (WR5).
        return Err(ApiStatus::new(
            500,
            "",
            "resourceVersion should not be set on objects to be created",
        ));
    }
    if meta_str(&object, "name").is_none()
        && let Some(prefix) = meta_str(&object, "generateName").map(str::to_owned)
    {
        // Unique because the suffix is the resourceVersion this write takes.
        object["metadata"]["name"] = json!(format!("{prefix}{:05x}", state.rv + 1));
    }
    let mut object = prepare_new(state, rt, object, Owner::Update(&manager(request)));
    super::finalize::before_create(state, rt, &mut object)?; // DL12, DL13 (deletion rules)
    super::validate::create(rt, &object)?; // WR8
    let key = meta_str(&object, "name").map(|name| super::obj_key(path, name));
    let deleting = key
        .and_then(|key| state.current(&path.resource, &key))
        .is_some_and(|existing| existing["metadata"].get("deletionTimestamp").is_some());
    let stored = state.put(rt, object, Some(false)).map_err(|e| {
        let mut status = store_error(rt, e);
        if deleting && status.reason == "AlreadyExists" {
            // The API server says why the name is still taken (WR3).
            status.message = format!("object is being deleted: {}", status.message);
        }
        status
    })?;
    Ok((StatusCode::CREATED, stored))
}

/// `object` as it is about to be created: server-set metadata dropped,
/// `status` dropped when a subresource owns it (SS1), and managedFields
/// recording its owner.
pub(super) fn prepare_new(
    state: &State,
    rt: &ResourceType,
    object: Value,
    owner: Owner<'_>,
) -> Value {
    let mut object = Target::Main.confine(rt, None, object);
    super::drop_empty_metadata(&mut object);
    crate::crd::status_on_create(rt, &mut object);
    if let Some(meta) = object["metadata"].as_object_mut() {
        for field in SERVER_SET {
            meta.remove(*field);
        }
    }
    let managed = match owner {
        Owner::Applied(managed) => managed,
        Owner::Update(manager) => {
            let schema = Schema::of(rt);
            let scope = Target::Main.scope(rt);
            let empty = json!({});
            let (changed, removed) = changes(
                &schema,
                &empty,
                &object,
                &Fields::of(&schema, &empty, scope),
                &Fields::of(&schema, &object, scope),
            );
            let mut managed = ManagedFields::default();
            managed.record_update(
                manager,
                &rt.api_version(),
                "",
                &changed,
                &removed,
                &state.clock.now(),
            );
            managed
        }
    };
    managed.write(&mut object);
    object
}
