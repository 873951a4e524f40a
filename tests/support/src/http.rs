//! The HTTP side: lists, watches, reads and writes over the store, with
//! faults applied.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::State as AxumState,
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::{
    Shared,
    faults::Answer,
    faults::ApiStatus,
    list::list,
    protobuf,
    protobuf::{Accept, Wire},
    record::RecordedRequest,
    resource::CollectionPath,
    selector::Selector,
    watch::watch,
    write,
};

/// The one handler: records the request, applies request faults, then
/// serves a list, a watch, or a read or write of one object.
///
/// Every answer closes its connection. With tokio's clock paused, a watch
/// answered on a reused keep-alive connection never showed its end to the
/// client (hyper's pooled-connection path and the frozen clock do not mix),
/// so the fake server trades connection reuse for determinism.
pub(crate) async fn handle(
    state: AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut response = serve(state, method, uri, headers, body).await;
    response.headers_mut().insert(
        header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

async fn serve(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default(),
        accept: headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        received_at: tokio::time::Instant::now(),
    };
    shared.requests.lock().push(request.clone());
    shared.requests_changed.notify_waiters();

    let answers = shared.faults.lock().take_answers(&request, &body);
    for answer in answers {
        match answer {
            Answer::Delay(d) => tokio::time::sleep(d).await,
            // Taken by the watch itself; never among a request's answers.
            Answer::Lag(_) => {}
            // In the encoding the client takes, as kube-apiserver answers
            // a failed request.
            Answer::Status(status) => {
                return negotiated_status(Accept::parse(request.accept.as_deref()), &status);
            }
            Answer::Hold(hold) => {
                // On a task of its own, so the write lands after the hold
                // even when the client hangs up and this handler is dropped.
                let late = tokio::spawn(async move {
                    tokio::time::sleep(hold).await;
                    serve_request(&shared, &method, &request, &headers, &body)
                });
                return late
                    .await
                    .unwrap_or_else(|_| status_response(&ApiStatus::internal_error()));
            }
        }
    }
    serve_request(&shared, &method, &request, &headers, &body)
}

/// Serves a request the faults let through.
pub(crate) fn serve_request(
    shared: &Arc<Shared>,
    method: &Method,
    request: &RecordedRequest,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    // Custom resources: body checks and served versions other than the storage version.
    if let Some(response) = crate::crd::versions::reroute(shared, method, request, headers, body) {
        return response;
    }
    let Some((path, name, subresource)) = CollectionPath::parse_object(&request.path) else {
        // Discovery: /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION.
        let state = shared.state.lock();
        return crate::discovery::serve(&state, method, &request.path, headers).unwrap_or_else(
            || {
                status_response(&ApiStatus::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ))
            },
        );
    };
    let query = match Query::parse(request) {
        Ok(q) => q,
        Err(status) => return negotiated_status(Accept::parse(request.accept.as_deref()), &status),
    };
    if *method != Method::GET || name.is_some() {
        return write::serve(
            shared,
            write::ObjectRequest {
                method,
                path: &path,
                name: name.as_deref(),
                subresource: subresource.as_deref(),
                headers,
                body,
                query: &query,
                params: &request.query,
            },
        );
    }
    if request.is_watch() {
        watch(Arc::clone(shared), path, query, request)
    } else {
        list(shared, &path, &query)
    }
}

pub(crate) fn status_response(status: &ApiStatus) -> Response {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        status.to_json().to_string(),
    )
        .into_response()
}

/// The query parameters that change what is served.
pub(crate) struct Query {
    pub(crate) labels: Selector,
    pub(crate) fields: Selector,
    pub(crate) resource_version: Option<String>,
    pub(crate) version_match: Option<String>,
    pub(crate) limit: Option<usize>,
    pub(crate) continue_token: Option<String>,
    pub(crate) metadata_only: bool,
    pub(crate) bookmarks: bool,
    pub(crate) send_initial_events: bool,
    pub(crate) timeout: Option<Duration>,
    /// What the client takes: lists and watches of the built-in kinds are
    /// protobuf when it puts protobuf first.
    pub(crate) accept: Accept,
}

impl Query {
    fn parse(request: &RecordedRequest) -> Result<Self, ApiStatus> {
        let bad = |m: String| ApiStatus::new(400, "BadRequest", &m);
        let selector =
            |name: &str| Selector::parse(request.param(name).unwrap_or("")).map_err(|e| bad(e.0));
        let number = |name: &str| -> Result<Option<u64>, ApiStatus> {
            request
                .param(name)
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| bad(format!("invalid {name} {v:?}")))
                })
                .transpose()
        };
        Ok(Self {
            labels: selector("labelSelector")?,
            fields: selector("fieldSelector")?,
            resource_version: request.param("resourceVersion").map(str::to_owned),
            version_match: request.param("resourceVersionMatch").map(str::to_owned),
            limit: number("limit")?.filter(|&l| l > 0).map(|l| l as usize),
            continue_token: request.param("continue").map(str::to_owned),
            metadata_only: request.is_metadata_only(),
            bookmarks: request.param("allowWatchBookmarks") == Some("true"),
            send_initial_events: request.param("sendInitialEvents") == Some("true"),
            timeout: number("timeoutSeconds")?.map(Duration::from_secs),
            accept: Accept::parse(request.accept.as_deref()),
        })
    }

    pub(crate) fn selects(&self, namespace: Option<&str>, object: &Value) -> bool {
        let in_namespace =
            namespace.is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns));
        in_namespace && self.labels.matches_labels(object) && self.fields.matches_fields(object)
    }

    pub(crate) fn render(&self, object: &Value) -> Value {
        if self.metadata_only {
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object["metadata"],
            })
        } else {
            object.clone()
        }
    }
}

pub(crate) fn json_response(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// A list answer in the encoding the client negotiated: protobuf when it
/// puts protobuf first and the table has the value's kind, JSON when it
/// takes JSON, else 406 (as kube-apiserver answers a protobuf-only request
/// for a custom resource).
pub(crate) fn negotiated_response(accept: Accept, value: &Value) -> Response {
    let text = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    match accept.wire_for(api_version, kind) {
        Some(Wire::Protobuf) => match protobuf::body(value) {
            Ok(body) => ([(header::CONTENT_TYPE, protobuf_type(kind))], body).into_response(),
            Err(error) => negotiated_status(accept, &unencodable(&error)),
        },
        Some(Wire::Json) => json_response(value),
        None => status_response(&not_acceptable()),
    }
}

/// An error `Status` in the encoding the client negotiated.
pub(crate) fn negotiated_status(accept: Accept, status: &ApiStatus) -> Response {
    if !accept.protobuf_first {
        return status_response(status);
    }
    match protobuf::body(&status.to_json()) {
        Ok(body) => {
            let code =
                StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (code, [(header::CONTENT_TYPE, protobuf::CONTENT_TYPE)], body).into_response()
        }
        Err(_) => status_response(status),
    }
}

/// The `Content-Type` of a protobuf body of this kind: the metadata-only
/// view names itself, as kube-apiserver's does.
pub(crate) fn protobuf_type(kind: &str) -> String {
    match kind {
        "PartialObjectMetadata" | "PartialObjectMetadataList" => {
            format!("{};as={kind};g=meta.k8s.io;v=v1", protobuf::CONTENT_TYPE)
        }
        _ => protobuf::CONTENT_TYPE.to_owned(),
    }
}

/// 500 for JSON the server holds but cannot write as its protobuf message
/// (kube-apiserver would have refused it on write).
pub(crate) fn unencodable(error: &protobuf::EncodeError) -> ApiStatus {
    ApiStatus::new(
        500,
        "InternalError",
        &format!("the fake API server cannot encode this object as protobuf: {error}"),
    )
}

/// 404 for a list or watch of a resource the server does not serve.
pub(crate) fn unknown_resource(resource: &impl std::fmt::Display) -> ApiStatus {
    ApiStatus::new(404, "NotFound", &format!("unknown resource {resource}"))
}

/// 406, kube-apiserver's answer to an `Accept` it cannot serve.
pub(crate) fn not_acceptable() -> ApiStatus {
    ApiStatus::new(
        406,
        "NotAcceptable",
        "the server was unable to respond with a content type that the client supports",
    )
}

/// A parsed resourceVersion: `None` for "" or "0" (any/most recent).
pub(crate) fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, ApiStatus> {
    match rv {
        None | Some("") | Some("0") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            ApiStatus::new(400, "BadRequest", &format!("invalid resourceVersion {v:?}"))
        }),
    }
}
