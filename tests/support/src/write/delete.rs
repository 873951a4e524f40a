//! `DELETE` of one object (with the preconditions of its DeleteOptions) and
//! of a collection; deleting a namespace deletes what is in it first.

use axum::http::StatusCode;
use serde_json::json;

use super::{Answer, body_object, conflict, meta_str, not_found, obj_key, store_error};
use crate::{
    http::Query,
    resource::{CollectionPath, ResourceType},
    store::State,
};

pub(super) fn delete(
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

pub(super) fn delete_collection(
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
