//! Requests for custom resources (CR4, CR5): the body's kind and
//! apiVersion are checked against the URL, and a request through a served
//! version other than the storage version is served from the storage
//! version's objects, with the apiVersion relabelled both ways.

use std::{pin::Pin, sync::Arc};

use axum::{
    body::{Body, HttpBody},
    http::{HeaderMap, Method},
    response::Response,
};
use bytes::Bytes;
use serde_json::Value;

use super::{Definition, find_definition};
use crate::{
    Shared,
    faults::ApiStatus,
    http::{serve_request, status_response},
    record::RecordedRequest,
    resource::CollectionPath,
};

/// Serves a request for a custom resource when it needs more than the
/// plain path: a refused body (CR5), a version the CRD does not serve
/// (404), or a served version other than the storage version (CR4).
/// `None` lets the request go on as it is.
pub(crate) fn reroute(
    shared: &Arc<Shared>,
    method: &Method,
    request: &RecordedRequest,
    headers: &HeaderMap,
    body: &Bytes,
) -> Option<Response> {
    let (path, _) = CollectionPath::parse_with_name(&request.path)?;
    let id = &path.resource;
    let definition = find_definition(&shared.state.lock(), &id.group, &id.plural)?;
    let Some(served) = definition.served(&id.version) else {
        return Some(status_response(&ApiStatus::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )));
    };
    let served_api_version = format!("{}/{}", definition.group, served.name);
    let mut body = body.clone();
    if matches!(*method, Method::POST | Method::PUT)
        && let Err(status) = check_body(&definition, &served_api_version, &body)
    {
        return Some(status_response(&status));
    }
    let storage = definition.storage();
    if storage.name == served.name {
        return None;
    }
    let storage_api_version = format!("{}/{}", definition.group, storage.name);
    let relabel = Relabel {
        from: storage_api_version.clone(),
        to: served_api_version.clone(),
    };
    if let Ok(mut object) = serde_json::from_slice::<Value>(&body)
        && object["apiVersion"] == served_api_version.as_str()
    {
        object["apiVersion"] = Value::from(storage_api_version);
        body = Bytes::from(object.to_string());
    }
    let mut at_storage = request.clone();
    at_storage.path = request.path.replacen(
        &format!("/{}/{}/", definition.group, served.name),
        &format!("/{}/{}/", definition.group, storage.name),
        1,
    );
    let response = serve_request(shared, method, &at_storage, headers, &body);
    Some(relabel.response(response))
}

/// The decoding checks the API server makes on a custom resource body (CR5).
fn check_body(definition: &Definition, api_version: &str, body: &[u8]) -> Result<(), ApiStatus> {
    let Ok(object) = serde_json::from_slice::<Value>(body) else {
        return Ok(()); // the write path answers a body that is not JSON
    };
    let bad = |message: String| ApiStatus::new(400, "BadRequest", &message);
    let Some(kind) = object["kind"].as_str().filter(|k| !k.is_empty()) else {
        let text = String::from_utf8_lossy(body);
        return Err(bad(format!(
            "the object provided is unrecognized (must be of type {}): \
             Object 'Kind' is missing in '{text}' ({text})",
            definition.kind
        )));
    };
    let sent = object["apiVersion"].as_str().unwrap_or("");
    if sent != api_version {
        return Err(bad(format!(
            "the API version in the data ({sent}) does not match the expected API version ({api_version})"
        )));
    }
    if kind != definition.kind {
        let name = object["metadata"]["name"].as_str().unwrap_or("");
        let detail = format!("Invalid value: {kind:?}: must be {}", definition.kind);
        return Err(ApiStatus::invalid(
            &definition.group,
            kind,
            name,
            &[("FieldValueInvalid", "kind", &detail)],
        ));
    }
    Ok(())
}

/// Rewrites the storage apiVersion to the requested one in an answer: an
/// object, a list and its items, or each watch event's object.
#[derive(Clone)]
struct Relabel {
    from: String,
    to: String,
}

impl Relabel {
    fn value(&self, value: &mut Value) {
        if value["apiVersion"] == self.from.as_str() {
            value["apiVersion"] = Value::from(self.to.as_str());
        }
        if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
            items.iter_mut().for_each(|item| self.value(item));
        }
        if value["type"].is_string()
            && let Some(object) = value.get_mut("object")
        {
            self.value(object);
        }
    }

    /// One chunk of a body: a whole JSON answer or one watch line (the
    /// server writes each in one piece); anything else passes unchanged.
    fn chunk(&self, chunk: Bytes) -> Bytes {
        let newline = chunk.ends_with(b"\n");
        match serde_json::from_slice::<Value>(&chunk) {
            Ok(mut value) => {
                self.value(&mut value);
                let mut text = value.to_string();
                if newline {
                    text.push('\n');
                }
                Bytes::from(text)
            }
            Err(_) => chunk,
        }
    }

    fn response(self, response: Response) -> Response {
        let (parts, mut body) = response.into_parts();
        let relabelled = async_stream::stream! {
            loop {
                let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
                match frame {
                    None => break,
                    Some(Err(error)) => {
                        yield Err(std::io::Error::other(error));
                        break;
                    }
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            yield Ok(self.chunk(data));
                        }
                    }
                }
            }
        };
        let mut response = Response::from_parts(parts, Body::from_stream(relabelled));
        response
            .headers_mut()
            .remove(axum::http::header::CONTENT_LENGTH);
        response
    }
}
