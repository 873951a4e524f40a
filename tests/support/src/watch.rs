//! Watch answers: chunked JSON lines (or protobuf frames) from the event
//! log, with bookmarks, streaming-list initial events, timeouts and injected
//! faults.

use std::{collections::VecDeque, sync::Arc, sync::atomic::Ordering};

use axum::{body::Body, http::header, response::Response};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::{
    Shared,
    faults::{ApiStatus, WatchFault},
    http::{
        Query, negotiated_status, not_acceptable, parse_rv, protobuf_type, unencodable,
        unknown_resource,
    },
    protobuf::{self, Wire},
    record::RecordedRequest,
    resource::CollectionPath,
    store::{ChangeType, LogEvent},
};

/// A piece of a watch body.
enum Chunk {
    Line(Bytes),
    Drop,
    End,
    /// Nothing more, ever, while the connection stays open.
    Stall,
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// One event as the watch writes it: a JSON line, or a protobuf frame. An
/// object the table cannot write becomes an ERROR event that says why, where
/// the client reports it.
fn encoded_event(wire: Wire, kind: &str, object: &Value) -> Bytes {
    match wire {
        Wire::Json => event_line(kind, object),
        Wire::Protobuf => protobuf::watch_frame(kind, object).unwrap_or_else(|error| {
            protobuf::watch_frame("ERROR", &unencodable(&error).to_json())
                .unwrap_or_else(|_| protobuf::malformed_watch_frame())
        }),
    }
}

/// What a client cannot read as an event of this encoding.
fn malformed(wire: Wire) -> Bytes {
    match wire {
        Wire::Json => Bytes::from_static(b"{\"type\": \"ADDED\", \"object\": {not json\n"),
        Wire::Protobuf => protobuf::malformed_watch_frame(),
    }
}

/// Counts what a watch sent and releases the faults that are due.
struct Outbox {
    sent: usize,
    faults: VecDeque<(usize, WatchFault)>,
    kind: String,
    api_version: String,
    wire: Wire,
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
                    // The API server ends a watch after an ERROR event.
                    chunks.push(Chunk::Line(encoded_event(
                        self.wire,
                        "ERROR",
                        &status.to_json(),
                    )));
                    chunks.push(Chunk::End);
                }
                WatchFault::DropConnection => chunks.push(Chunk::Drop),
                WatchFault::MalformedLine => chunks.push(Chunk::Line(malformed(self.wire))),
                WatchFault::UnknownEventType => {
                    let mut object = type_meta;
                    object["metadata"] =
                        json!({"name": "surprise", "namespace": "default", "resourceVersion": "1"});
                    chunks.push(Chunk::Line(encoded_event(self.wire, "SURPRISE", &object)));
                }
                WatchFault::ObjectWithoutMetadata => {
                    chunks.push(Chunk::Line(encoded_event(self.wire, "ADDED", &type_meta)))
                }
                WatchFault::ObjectWithoutName => {
                    let mut object = type_meta;
                    object["metadata"] = json!({"namespace": "default", "resourceVersion": "1"});
                    chunks.push(Chunk::Line(encoded_event(self.wire, "ADDED", &object)));
                }
                WatchFault::WrongKind => {
                    let object = json!({
                        "kind": "Unexpected",
                        "apiVersion": "example.com/v1",
                        "metadata": {"name": "stranger", "namespace": "default", "resourceVersion": "1"},
                    });
                    chunks.push(Chunk::Line(encoded_event(self.wire, "ADDED", &object)));
                }
                WatchFault::End => chunks.push(Chunk::End),
                WatchFault::Stall => chunks.push(Chunk::Stall),
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

pub(crate) fn watch(
    shared: Arc<Shared>,
    path: CollectionPath,
    query: Query,
    request: &RecordedRequest,
) -> Response {
    let settings = shared.settings.lock().clone();
    if query.send_initial_events {
        if !settings.streaming_list_supported {
            return negotiated_status(
                query.accept,
                &ApiStatus::new(
                    422,
                    "Invalid",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                ),
            );
        }
        if query.version_match.as_deref() != Some("NotOlderThan") {
            return negotiated_status(
                query.accept,
                &ApiStatus::new(
                    422,
                    "Invalid",
                    "sendInitialEvents requires resourceVersionMatch=NotOlderThan",
                ),
            );
        }
    }
    let start_rv = match parse_rv(query.resource_version.as_deref()) {
        Ok(rv) => rv,
        Err(status) => return negotiated_status(query.accept, &status),
    };
    let (kind, api_version) = {
        let state = shared.state.lock();
        let Some(c) = state.collections.get(&path.resource) else {
            return negotiated_status(query.accept, &unknown_resource(&path.resource));
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
    let Some(wire) = query.accept.wire_for(&api_version, &kind) else {
        return negotiated_status(query.accept, &not_acceptable());
    };
    let content_type = match wire {
        Wire::Json => "application/json".to_owned(),
        Wire::Protobuf => protobuf_type(&kind),
    };
    let setup = shared.faults.lock().take_watch_setup(request);
    let timeout = query.timeout.unwrap_or(settings.default_watch_timeout);
    let mut outbox = Outbox {
        sent: 0,
        faults: setup.faults.into(),
        kind: kind.clone(),
        api_version: api_version.clone(),
        wire,
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
            encoded_event(wire, "BOOKMARK", &json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}))
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
                    lines.push(encoded_event(wire, "ERROR", &status.to_json()));
                    None
                }
                Some(rv) if !query.send_initial_events => Some(rv),
                _ => {
                    if let Some(c) = state.collections.get(&path.resource) {
                        for (_, object) in c.snapshot_at(state.rv, None) {
                            if query.selects(path.namespace.as_deref(), object) {
                                lines.push(encoded_event(wire, "ADDED", &query.render(object)));
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
            match chunk { Chunk::Line(b) => yield Ok(b), Chunk::Drop => { yield Err(std::io::Error::other("connection dropped by the fake server")); return; } Chunk::End => return, Chunk::Stall => std::future::pending::<()>().await }
        }
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(p) = pos {
                let state = shared.state.lock();
                if p < state.compacted {
                    let status = ApiStatus::new(410, "Expired", &format!("too old resource version: {p} ({})", state.compacted));
                    lines.push(encoded_event(wire, "ERROR", &status.to_json()));
                    pos = None;
                } else {
                    // The log is in resourceVersion order: skip what this watch saw.
                    let unseen = state.log.partition_point(|e| e.rv <= p);
                    for event in state.log[unseen..].iter().filter(|e| e.resource == path.resource) {
                        if let Some((kind, object)) = watch_event(event, &query, path.namespace.as_deref()) {
                            lines.push(encoded_event(wire, kind, &object));
                        }
                    }
                    pos = Some(state.rv);
                    // Its CRD was deleted: the watch ends after the last events (CR6).
                    if !state.collections.contains_key(&path.resource) {
                        pos = None;
                    }
                }
                let epoch = shared.bookmark_epoch.load(Ordering::SeqCst);
                if epoch != bookmark_epoch && query.bookmarks && pos.is_some() {
                    lines.push(bookmark(state.rv, false));
                }
                bookmark_epoch = epoch;
            }
            for line in lines.drain(..) {
                for chunk in outbox.push(line) {
                    match chunk { Chunk::Line(b) => yield Ok(b), Chunk::Drop => { yield Err(std::io::Error::other("connection dropped by the fake server")); return; } Chunk::End => return, Chunk::Stall => std::future::pending::<()>().await }
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
    let body = match setup.lag {
        Some(lag) => Body::from_stream(crate::faults::lagged(body, lag)),
        None => Body::from_stream(body),
    };
    Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
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
