//! The HTTP side: lists and watches over the store, with faults applied.

use std::{collections::VecDeque, sync::Arc, sync::atomic::Ordering, time::Duration};

use axum::{
    body::Body,
    extract::State as AxumState,
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::{
    Shared,
    faults::{Answer, ApiStatus, WatchFault},
    record::RecordedRequest,
    resource::CollectionPath,
    selector::Selector,
    store::{ChangeType, LogEvent, ObjKey},
};

/// The one handler: records the request, applies request faults, then
/// serves a list or a watch.
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
) -> Response {
    let mut response = serve(state, method, uri, headers).await;
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

    let answers = shared.faults.lock().take_answers(&request);
    for answer in answers {
        match answer {
            Answer::Delay(d) => tokio::time::sleep(d).await,
            Answer::Status(status) => return status_response(&status),
        }
    }

    let Some(path) = CollectionPath::parse(&request.path) else {
        return status_response(&ApiStatus::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    };
    if method != Method::GET {
        return status_response(&ApiStatus::new(
            405,
            "MethodNotAllowed",
            "the fake server only serves list and watch",
        ));
    }
    let query = match Query::parse(&request) {
        Ok(q) => q,
        Err(status) => return status_response(&status),
    };
    if request.is_watch() {
        watch(shared, path, query, &request)
    } else {
        list(&shared, &path, &query)
    }
}

fn status_response(status: &ApiStatus) -> Response {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        status.to_json().to_string(),
    )
        .into_response()
}

/// The query parameters that change what is served.
struct Query {
    labels: Selector,
    fields: Selector,
    resource_version: Option<String>,
    version_match: Option<String>,
    limit: Option<usize>,
    continue_token: Option<String>,
    metadata_only: bool,
    bookmarks: bool,
    send_initial_events: bool,
    timeout: Option<Duration>,
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
        })
    }

    fn selects(&self, namespace: Option<&str>, object: &Value) -> bool {
        let in_namespace =
            namespace.is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns));
        in_namespace && self.labels.matches_labels(object) && self.fields.matches_fields(object)
    }

    fn render(&self, object: &Value) -> Value {
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

fn json_response(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// A parsed resourceVersion: `None` for "" or "0" (any/most recent).
fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, ApiStatus> {
    match rv {
        None | Some("") | Some("0") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            ApiStatus::new(400, "BadRequest", &format!("invalid resourceVersion {v:?}"))
        }),
    }
}

fn list(shared: &Shared, path: &CollectionPath, query: &Query) -> Response {
    let settings = shared.settings.lock().clone();
    let state = shared.state.lock();
    let Some(collection) = state.collections.get(&path.resource) else {
        return status_response(&ApiStatus::new(
            404,
            "NotFound",
            &format!("unknown resource {}", path.resource),
        ));
    };
    let (snapshot_rv, after): (u64, Option<ObjKey>) = if let Some(token) = &query.continue_token {
        match serde_json::from_str::<(u64, String, String)>(token) {
            Ok((rv, _, _)) if rv < state.compacted => {
                return status_response(&ApiStatus::new(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result.",
                ));
            }
            Ok((rv, ns, name)) => (rv, Some((ns, name))),
            Err(_) => {
                return status_response(&ApiStatus::new(
                    400,
                    "BadRequest",
                    "invalid continue token",
                ));
            }
        }
    } else {
        match parse_rv(query.resource_version.as_deref()) {
            Err(status) => return status_response(&status),
            Ok(Some(rv)) if rv > state.rv => {
                return status_response(&ApiStatus::too_large_resource_version());
            }
            Ok(Some(rv)) if query.version_match.as_deref() == Some("Exact") => {
                if rv < state.compacted {
                    return status_response(&ApiStatus::expired());
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
    json_response(&json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": metadata,
        "items": items.into_iter().map(|(_, o)| o).collect::<Vec<_>>(),
    }))
}

/// A piece of a watch body.
enum Chunk {
    Line(Bytes),
    Drop,
    End,
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// Counts what a watch sent and releases the faults that are due.
struct Outbox {
    sent: usize,
    faults: VecDeque<(usize, WatchFault)>,
    kind: String,
    api_version: String,
}

impl Outbox {
    fn push(&mut self, line: Bytes) -> Vec<Chunk> {
        self.sent += 1;
        let mut chunks = vec![Chunk::Line(line)];
        chunks.extend(self.due());
        chunks
    }

    fn due(&mut self) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        while self.faults.front().is_some_and(|(n, _)| *n <= self.sent) {
            let (_, fault) = self.faults.pop_front().expect("front checked");
            let ends = fault.ends_stream();
            let type_meta = json!({"kind": self.kind, "apiVersion": self.api_version});
            match fault {
                WatchFault::ErrorEvent(status) => {
                    chunks.push(Chunk::Line(event_line("ERROR", &status.to_json())))
                }
                WatchFault::DropConnection => chunks.push(Chunk::Drop),
                WatchFault::MalformedLine => chunks.push(Chunk::Line(Bytes::from_static(
                    b"{\"type\": \"ADDED\", \"object\": {not json\n",
                ))),
                WatchFault::UnknownEventType => {
                    let mut object = type_meta;
                    object["metadata"] =
                        json!({"name": "surprise", "namespace": "default", "resourceVersion": "1"});
                    chunks.push(Chunk::Line(event_line("SURPRISE", &object)));
                }
                WatchFault::ObjectWithoutMetadata => {
                    chunks.push(Chunk::Line(event_line("ADDED", &type_meta)))
                }
                WatchFault::ObjectWithoutName => {
                    let mut object = type_meta;
                    object["metadata"] = json!({"namespace": "default", "resourceVersion": "1"});
                    chunks.push(Chunk::Line(event_line("ADDED", &object)));
                }
                WatchFault::WrongKind => {
                    let object = json!({
                        "kind": "Unexpected",
                        "apiVersion": "example.com/v1",
                        "metadata": {"name": "stranger", "namespace": "default", "resourceVersion": "1"},
                    });
                    chunks.push(Chunk::Line(event_line("ADDED", &object)));
                }
                WatchFault::End => chunks.push(Chunk::End),
            }
            if ends {
                break;
            }
        }
        chunks
    }
}

/// Turns one log entry into what this watch sees, given its selectors: an
/// object entering the selection is ADDED, one leaving it is DELETED.
fn watch_event(
    event: &LogEvent,
    query: &Query,
    namespace: Option<&str>,
) -> Option<(&'static str, Value)> {
    let selects = |o: &Value| query.selects(namespace, o);
    let was = event.old.as_deref().is_some_and(selects);
    let is = selects(&event.new);
    let kind = match (event.change, was, is) {
        (ChangeType::Added, _, true) => "ADDED",
        (ChangeType::Modified, true, true) => "MODIFIED",
        (ChangeType::Modified, false, true) => "ADDED",
        (ChangeType::Modified, true, false) => "DELETED",
        (ChangeType::Deleted, true, _) => "DELETED",
        _ => return None,
    };
    Some((kind, query.render(&event.new)))
}

fn watch(
    shared: Arc<Shared>,
    path: CollectionPath,
    query: Query,
    request: &RecordedRequest,
) -> Response {
    let settings = shared.settings.lock().clone();
    if query.send_initial_events {
        if !settings.streaming_list_supported {
            return status_response(&ApiStatus::new(
                422,
                "Invalid",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
        if query.version_match.as_deref() != Some("NotOlderThan") {
            return status_response(&ApiStatus::new(
                422,
                "Invalid",
                "sendInitialEvents requires resourceVersionMatch=NotOlderThan",
            ));
        }
    }
    let start_rv = match parse_rv(query.resource_version.as_deref()) {
        Ok(rv) => rv,
        Err(status) => return status_response(&status),
    };
    let (kind, api_version) = {
        let state = shared.state.lock();
        let Some(c) = state.collections.get(&path.resource) else {
            return status_response(&ApiStatus::new(
                404,
                "NotFound",
                &format!("unknown resource {}", path.resource),
            ));
        };
        if query.metadata_only {
            (
                "PartialObjectMetadata".to_owned(),
                "meta.k8s.io/v1".to_owned(),
            )
        } else {
            (c.kind.clone(), c.api_version.clone())
        }
    };
    let faults = shared.faults.lock().take_watch_faults(request);
    let timeout = query.timeout.unwrap_or(settings.default_watch_timeout);
    let mut outbox = Outbox {
        sent: 0,
        faults: faults.into(),
        kind: kind.clone(),
        api_version: api_version.clone(),
    };

    let body = async_stream::stream! {
        let _open = OpenWatch::new(&shared);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut bookmark_epoch = shared.bookmark_epoch.load(Ordering::SeqCst);
        let close_epoch = shared.close_epoch.load(Ordering::SeqCst);
        let bookmark = |rv: u64, initial_end: bool| {
            let mut metadata = json!({"resourceVersion": rv.to_string()});
            if initial_end {
                metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            event_line("BOOKMARK", &json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}))
        };

        // The first lines: synthetic ADDED events for a start "from now", the
        // replayed log for a start from a resourceVersion, or 410 when that
        // resourceVersion was compacted away.
        let (mut pos, mut lines) = {
            let state = shared.state.lock();
            let mut lines = Vec::new();
            let pos = match start_rv {
                Some(rv) if rv < state.compacted && !query.send_initial_events => {
                    let status = ApiStatus::new(410, "Expired", &format!("too old resource version: {rv} ({})", state.compacted));
                    lines.push(event_line("ERROR", &status.to_json()));
                    None
                }
                Some(rv) if !query.send_initial_events => Some(rv),
                _ => {
                    if let Some(c) = state.collections.get(&path.resource) {
                        for (_, object) in c.snapshot_at(state.rv, None) {
                            if query.selects(path.namespace.as_deref(), object) {
                                lines.push(event_line("ADDED", &query.render(object)));
                            }
                        }
                    }
                    if query.send_initial_events {
                        lines.push(bookmark(state.rv, true));
                    }
                    Some(state.rv)
                }
            };
            (pos, lines)
        };
        for chunk in outbox.due() {
            match chunk { Chunk::Line(b) => yield Ok(b), Chunk::Drop => { yield Err(std::io::Error::other("connection dropped by the fake server")); return; } Chunk::End => return }
        }
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(p) = pos {
                let state = shared.state.lock();
                if p < state.compacted {
                    let status = ApiStatus::new(410, "Expired", &format!("too old resource version: {p} ({})", state.compacted));
                    lines.push(event_line("ERROR", &status.to_json()));
                    pos = None;
                } else {
                    for event in state.log.iter().filter(|e| e.rv > p && e.resource == path.resource) {
                        if let Some((kind, object)) = watch_event(event, &query, path.namespace.as_deref()) {
                            lines.push(event_line(kind, &object));
                        }
                    }
                    pos = Some(state.rv);
                }
                let epoch = shared.bookmark_epoch.load(Ordering::SeqCst);
                if epoch != bookmark_epoch && query.bookmarks && pos.is_some() {
                    lines.push(bookmark(state.rv, false));
                }
                bookmark_epoch = epoch;
            }
            for line in lines.drain(..) {
                for chunk in outbox.push(line) {
                    match chunk { Chunk::Line(b) => yield Ok(b), Chunk::Drop => { yield Err(std::io::Error::other("connection dropped by the fake server")); return; } Chunk::End => return }
                }
            }
            if pos.is_none() || shared.close_epoch.load(Ordering::SeqCst) != close_epoch {
                return;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = &mut deadline => return,
            }
        }
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(body))
        .expect("static response parts are valid")
}

/// Counts open watch streams while it lives.
struct OpenWatch(Arc<Shared>);

impl OpenWatch {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.open_watches.fetch_add(1, Ordering::SeqCst);
        shared.requests_changed.notify_waiters();
        Self(shared.clone())
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
        self.0.requests_changed.notify_waiters();
    }
}
