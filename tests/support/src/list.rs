//! List answers: snapshots at a resourceVersion, paged by continue tokens,
//! as JSON or protobuf.

use serde_json::{Value, json};

use axum::response::Response;

use crate::{
    Shared,
    faults::ApiStatus,
    http::{Query, negotiated_response, negotiated_status, parse_rv, unknown_resource},
    resource::CollectionPath,
    store::ObjKey,
};

pub(crate) fn list(shared: &Shared, path: &CollectionPath, query: &Query) -> Response {
    let settings = shared.settings.lock().clone();
    let state = shared.state.lock();
    let Some(collection) = state.collections.get(&path.resource) else {
        return negotiated_status(query.accept, &unknown_resource(&path.resource));
    };
    let (snapshot_rv, after): (u64, Option<ObjKey>) = if let Some(token) = &query.continue_token {
        match serde_json::from_str::<(u64, String, String)>(token) {
            Ok((rv, _, _)) if rv < state.compacted => {
                return negotiated_status(
                    query.accept,
                    &ApiStatus::new(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                    ),
                );
            }
            Ok((rv, ns, name)) => (rv, Some((ns, name))),
            Err(_) => {
                return negotiated_status(
                    query.accept,
                    &ApiStatus::new(400, "BadRequest", "invalid continue token"),
                );
            }
        }
    } else {
        match parse_rv(query.resource_version.as_deref()) {
            Err(status) => return negotiated_status(query.accept, &status),
            Ok(Some(rv)) if rv > state.rv => {
                return negotiated_status(query.accept, &ApiStatus::too_large_resource_version());
            }
            Ok(Some(rv)) if query.version_match.as_deref() == Some("Exact") => {
                if rv < state.compacted {
                    return negotiated_status(query.accept, &ApiStatus::expired());
                }
                (rv, None)
            }
            _ => (state.rv, None),
        }
    };
    let from_cache =
        query.resource_version.as_deref() == Some("0") && query.continue_token.is_none();
    let limit = if settings.ignore_limit_at_rv0 && from_cache {
        None
    } else {
        query.limit
    };

    let mut items = Vec::new();
    let mut next = None;
    for (key, object) in collection.snapshot_at(snapshot_rv, after.as_ref()) {
        if !query.selects(path.namespace.as_deref(), object) {
            continue;
        }
        if limit.is_some_and(|l| items.len() == l) {
            let last = items
                .last()
                .map(|(k, _): &(ObjKey, Value)| k.clone())
                .unwrap_or_else(|| key.clone());
            next = Some(json!([snapshot_rv, last.0, last.1]).to_string());
            break;
        }
        items.push((key.clone(), query.render(object)));
    }
    let (kind, api_version) = if query.metadata_only {
        (
            "PartialObjectMetadataList".to_owned(),
            "meta.k8s.io/v1".to_owned(),
        )
    } else {
        (
            format!("{}List", collection.kind),
            collection.api_version.clone(),
        )
    };
    let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
    if let Some(token) = next {
        metadata["continue"] = json!(token);
    }
    negotiated_response(
        query.accept,
        &json!({
            "kind": kind,
            "apiVersion": api_version,
            "metadata": metadata,
            "items": items.into_iter().map(|(_, o)| o).collect::<Vec<_>>(),
        }),
    )
}
