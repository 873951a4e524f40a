//! The loopback server of wire mode: answers `GET /api/v1/pods` as a
//! kube-apiserver would, from a [`WireWorkload`] serialized beforehand.
//!
//! - **List** (`GET /api/v1/pods[?limit=L][&continue=T]`): a `PodList` of the
//!   N Pods, L per page with a `continue` token and `remainingItemCount`
//!   while more remain, the last page without a token. Every page carries
//!   the list's resourceVersion. Without `limit` (or `limit=0`) the whole
//!   list comes in one answer. A `continue` token wins over
//!   `resourceVersion`, as on the real server.
//! - **Watch** (`…&watch=true&resourceVersion=R[&timeoutSeconds=T]`): the
//!   events after R, one JSON line each, held back until the runner releases
//!   them through the control endpoints, so it can read its memory between
//!   the initial sync and the burst. Once everything released is sent the
//!   watch idles (the runner reaches quiescence) until `timeoutSeconds`
//!   passes or the server is told to expire watches. A watch from a
//!   resourceVersion older than the last expiry gets a 410 `ERROR` event at
//!   once, as after an etcd compaction.
//!
//! The answers are JSON unless the request's `Accept` header asks for what
//! kube-apiserver also serves (see [`accept`]): Kubernetes' protobuf (a
//! `PodList` envelope per page, length-prefixed `WatchEvent` frames; see
//! [`protobuf`]) when the server was given the encoder, and metadata only
//! (`PartialObjectMetadataList` and `PartialObjectMetadata`, in JSON when
//! the server was started with `--metadata`, in protobuf with the encoder;
//! see [`metadata`]). An `Accept` header the server cannot satisfy gets 406.
//!
//! Control endpoints (used by the runners, never by the informers):
//! `POST /bench/reset`, `POST /bench/release?phase=updates|all`,
//! `POST /bench/expire` (every open watch gets a 410 `ERROR` event and ends;
//! the list's resourceVersion moves past every event, so the relist that
//! follows is a full list), `GET /bench/info`, `GET /bench/stats`.
//!
//! The server listens on 127.0.0.1 only and runs on one thread, so it takes
//! at most one core away from the runner it serves.

pub mod accept;
pub mod metadata;
pub mod protobuf;

use self::{accept::Encoding, metadata::MetadataWorkload, protobuf::ProtobufWorkload};
use super::pods::WireWorkload;
use bytes::{Bytes, BytesMut};
use futures::Stream;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::{body::Frame, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::{
    collections::HashMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};
use tokio::{net::TcpListener, sync::watch};

/// Bytes of event lines copied into one body chunk in [`Chunking::Backlog`]:
/// big enough that a burst costs few writes, small enough that the client
/// decodes while more arrive.
const CHUNK_BYTES: usize = 64 * 1024;

/// How released watch events reach the client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Chunking {
    /// As a backlog read at once: up to 64 KiB of events per body chunk,
    /// written as fast as the client reads. The best case for a client
    /// that decodes batches.
    Backlog,
    /// One body chunk per event, flushed before the next is written, as
    /// kube-apiserver writes a watch when the client keeps up (it flushes
    /// whenever its queue of events is empty).
    PerEvent,
    /// One chunk per event at a steady rate (events per second): the regime
    /// of a live cluster, where the CPU per event is what users pay.
    Rate(u32),
}

impl Chunking {
    /// `backlog`, `event`, or `rate=N`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "backlog" => Ok(Self::Backlog),
            "event" => Ok(Self::PerEvent),
            _ => text
                .strip_prefix("rate=")
                .and_then(|rate| rate.parse::<u32>().ok())
                .filter(|rate| *rate > 0)
                .map(Self::Rate)
                .ok_or_else(|| format!("--chunking wants backlog, event or rate=N, not {text:?}")),
        }
    }

    /// The name `parse` reads, for reports.
    pub fn name(&self) -> String {
        match self {
            Self::Backlog => "backlog".to_owned(),
            Self::PerEvent => "event".to_owned(),
            Self::Rate(rate) => format!("rate={rate}"),
        }
    }
}

/// What the runner has released so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Gates {
    /// Watch events that may be sent (a prefix of the workload's events).
    released: usize,
    /// How many times watches were expired.
    expirations: u64,
}

/// Counters the runners read back to check what their informer did.
#[derive(Debug, Default)]
struct Stats {
    lists: AtomicU64,
    pages: AtomicU64,
    watches: AtomicU64,
    events_sent: AtomicU64,
    expired_watches: AtomicU64,
}

impl Stats {
    fn reset(&self) {
        for counter in [
            &self.lists,
            &self.pages,
            &self.watches,
            &self.events_sent,
            &self.expired_watches,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

/// The encodings the server has besides the Pods' JSON, each composed
/// before the server listens.
#[derive(Debug, Clone, Default)]
pub struct Encodings {
    /// The Pods and their metadata in protobuf.
    pub protobuf: Option<ProtobufWorkload>,
    /// The Pods' metadata in JSON.
    pub metadata: Option<MetadataWorkload>,
}

/// The server's shared state.
#[derive(Debug)]
pub struct WireServer {
    workload: WireWorkload,
    encodings: Encodings,
    chunking: Chunking,
    gates: watch::Sender<Gates>,
    stats: Stats,
}

type Body = BoxBody<Bytes, Infallible>;

impl WireServer {
    /// A server for `workload`, all gates closed, writing watch events in
    /// backlog chunks.
    pub fn new(workload: WireWorkload) -> Arc<Self> {
        Self::with_chunking(workload, Chunking::Backlog)
    }

    /// A server for `workload` that writes watch events as `chunking` says.
    pub fn with_chunking(workload: WireWorkload, chunking: Chunking) -> Arc<Self> {
        Self::with_encodings(workload, chunking, Encodings::default())
    }

    /// A server for `workload` that also answers in `encodings`.
    pub fn with_encodings(
        workload: WireWorkload,
        chunking: Chunking,
        encodings: Encodings,
    ) -> Arc<Self> {
        Arc::new(Self {
            workload,
            encodings,
            chunking,
            gates: watch::channel(Gates::default()).0,
            stats: Stats::default(),
        })
    }

    /// Binds 127.0.0.1:`port` (0 picks a free port) and serves until the
    /// returned future is dropped. The address is known before serving
    /// starts.
    pub async fn bind(
        self: Arc<Self>,
        port: u16,
    ) -> std::io::Result<(SocketAddr, impl Future<Output = ()> + Send + 'static)> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        Ok((address, self.serve(listener)))
    }

    async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let server = Arc::clone(&self);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let server = Arc::clone(&server);
                    async move { Ok::<_, Infallible>(server.handle(request)) }
                });
                // A runner that exits mid-stream closes its connections;
                // nothing to report.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    fn handle<B>(self: &Arc<Self>, request: Request<B>) -> Response<Body> {
        let query = parse_query(request.uri().query().unwrap_or(""));
        match (request.method(), request.uri().path()) {
            (&Method::GET, "/api/v1/pods") => {
                let watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
                let accept = request
                    .headers()
                    .get(header::ACCEPT)
                    .and_then(|accept| accept.to_str().ok());
                let Some(encoding) =
                    accept::negotiate(accept, watch, |encoding| self.has(encoding))
                else {
                    return status(
                        StatusCode::NOT_ACCEPTABLE,
                        "NotAcceptable",
                        &format!(
                            "only the following media types are accepted: application/json, {}",
                            protobuf::MEDIA_TYPE
                        ),
                    );
                };
                if watch {
                    self.watch(&query, encoding)
                } else {
                    self.list(&query, encoding)
                }
            }
            (&Method::POST, "/bench/reset") => {
                self.gates.send_replace(Gates::default());
                self.stats.reset();
                json_response(StatusCode::OK, json!({"reset": true}).to_string())
            }
            (&Method::POST, "/bench/release") => {
                let events = &self.workload.events;
                let released = match query.get("phase").map(String::as_str) {
                    Some("updates") => self.workload.spec.updates.min(events.len()),
                    Some("all") => events.len(),
                    _ => return status(StatusCode::BAD_REQUEST, "BadRequest", "phase=updates|all"),
                };
                self.gates
                    .send_modify(|gates| gates.released = gates.released.max(released));
                json_response(StatusCode::OK, json!({"released": released}).to_string())
            }
            (&Method::POST, "/bench/expire") => {
                self.gates.send_modify(|gates| gates.expirations += 1);
                json_response(
                    StatusCode::OK,
                    json!({"list_resource_version": self.list_resource_version().to_string()})
                        .to_string(),
                )
            }
            (&Method::GET, "/bench/info") => {
                let spec = self.workload.spec;
                json_response(
                    StatusCode::OK,
                    json!({
                        "chunking": self.chunking.name(),
                        "objects": spec.objects,
                        "updates": spec.updates,
                        "deletes": spec.deletes,
                        "seed": spec.seed,
                        "list_resource_version": self.list_resource_version().to_string(),
                        "mean_item_bytes": self.workload.mean_item_bytes(),
                        "mean_item_protobuf_bytes": self.encodings.protobuf.as_ref().map(|protobuf| protobuf.mean_item_bytes),
                        "metadata_json": self.encodings.metadata.is_some(),
                    })
                    .to_string(),
                )
            }
            (&Method::GET, "/bench/stats") => {
                let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
                json_response(
                    StatusCode::OK,
                    json!({
                        "lists": load(&self.stats.lists),
                        "pages": load(&self.stats.pages),
                        "watches": load(&self.stats.watches),
                        "events_sent": load(&self.stats.events_sent),
                        "expired_watches": load(&self.stats.expired_watches),
                    })
                    .to_string(),
                )
            }
            _ => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            ),
        }
    }

    /// Whether the server can answer in `encoding`.
    fn has(&self, encoding: Encoding) -> bool {
        match encoding {
            Encoding::Json => true,
            Encoding::JsonMetadata => self.encodings.metadata.is_some(),
            Encoding::Protobuf | Encoding::ProtobufMetadata => self.encodings.protobuf.is_some(),
        }
    }

    /// The listed objects in `encoding` (one JSON object or one protobuf
    /// message each).
    fn items(&self, encoding: Encoding) -> &[Bytes] {
        match (encoding, &self.encodings.protobuf, &self.encodings.metadata) {
            (Encoding::JsonMetadata, _, Some(metadata)) => &metadata.items,
            (Encoding::Protobuf, Some(protobuf), _) => &protobuf.items,
            (Encoding::ProtobufMetadata, Some(protobuf), _) => &protobuf.metadata_items,
            _ => &self.workload.items,
        }
    }

    /// The watch events in `encoding` (a JSON line or a protobuf frame
    /// each).
    fn events(&self, encoding: Encoding) -> &[Bytes] {
        match (encoding, &self.encodings.protobuf, &self.encodings.metadata) {
            (Encoding::JsonMetadata, _, Some(metadata)) => &metadata.events,
            (Encoding::Protobuf, Some(protobuf), _) => &protobuf.events,
            (Encoding::ProtobufMetadata, Some(protobuf), _) => &protobuf.metadata_events,
            _ => &self.workload.events,
        }
    }

    /// The list's resourceVersion: N at first; after an expiry, past every
    /// event, so no watch from before it can resume.
    fn list_resource_version(&self) -> u64 {
        let expirations = self.gates.borrow().expirations;
        if expirations == 0 {
            self.workload.list_resource_version()
        } else {
            self.workload.last_resource_version() + expirations
        }
    }

    fn list(&self, query: &HashMap<String, String>, encoding: Encoding) -> Response<Body> {
        let items = self.items(encoding);
        let rv = self.list_resource_version();
        let limit = match query.get("limit").map(|limit| limit.parse::<usize>()) {
            None => 0,
            Some(Ok(limit)) => limit,
            Some(Err(_)) => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    "limit must be a number",
                );
            }
        };
        let start = match query.get("continue").filter(|token| !token.is_empty()) {
            None => {
                self.stats.lists.fetch_add(1, Ordering::Relaxed);
                0
            }
            Some(token) => match parse_continue(token) {
                Some((token_rv, offset)) if token_rv == rv && offset <= items.len() => offset,
                // A token from before an expiry: the snapshot is gone.
                Some(_) => {
                    return status(
                        StatusCode::GONE,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                    );
                }
                None => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        "invalid continue token",
                    );
                }
            },
        };
        self.stats.pages.fetch_add(1, Ordering::Relaxed);
        let end = if limit == 0 {
            items.len()
        } else {
            (start + limit).min(items.len())
        };
        let page = &items[start..end];
        if encoding.is_protobuf() {
            let (api_version, kind) = if encoding.is_metadata() {
                (protobuf::META_API_VERSION, "PartialObjectMetadataList")
            } else {
                ("v1", "PodList")
            };
            let (token, remaining) = if end < items.len() {
                (format!("{rv}-{end}"), Some((items.len() - end) as u64))
            } else {
                (String::new(), None)
            };
            let list_meta = protobuf::list_meta(&rv.to_string(), &token, remaining);
            let body = protobuf::list(
                api_version,
                kind,
                &list_meta,
                page.iter().map(|item| item.as_ref()),
            );
            return Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, protobuf::MEDIA_TYPE)
                .body(Full::new(Bytes::from(body)).boxed())
                .expect("a fixed response is valid");
        }
        let (api_version, kind) = if encoding.is_metadata() {
            (protobuf::META_API_VERSION, "PartialObjectMetadataList")
        } else {
            ("v1", "PodList")
        };
        let metadata = if end < items.len() {
            json!({
                "resourceVersion": rv.to_string(),
                "continue": format!("{rv}-{end}"),
                "remainingItemCount": items.len() - end,
            })
        } else {
            json!({"resourceVersion": rv.to_string()})
        };
        let head = format!(
            r#"{{"kind":"{kind}","apiVersion":"{api_version}","metadata":{metadata},"items":["#
        );
        let mut body = Vec::with_capacity(
            head.len() + page.iter().map(|item| item.len() + 1).sum::<usize>() + 2,
        );
        body.extend_from_slice(head.as_bytes());
        for (index, item) in page.iter().enumerate() {
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item);
        }
        body.extend_from_slice(b"]}");
        json_response(StatusCode::OK, body)
    }

    fn watch(
        self: &Arc<Self>,
        query: &HashMap<String, String>,
        encoding: Encoding,
    ) -> Response<Body> {
        self.stats.watches.fetch_add(1, Ordering::Relaxed);
        let gates = *self.gates.borrow();
        let list_rv = self.workload.list_resource_version();
        let total = self.workload.events.len();
        let requested = query
            .get("resourceVersion")
            .map(String::as_str)
            .unwrap_or("");
        let start = match requested {
            // "Any": start from what has been released by now.
            "" | "0" => gates.released,
            rv => match rv.parse::<u64>() {
                Ok(rv) if gates.expirations > 0 && rv < self.list_resource_version() => {
                    self.stats.expired_watches.fetch_add(1, Ordering::Relaxed);
                    return Response::builder()
                        .status(StatusCode::OK)
                        .header(header::CONTENT_TYPE, watch_content_type(encoding))
                        .body(Full::new(Bytes::from(expired_event(rv, encoding))).boxed())
                        .expect("a fixed response is valid");
                }
                Ok(rv) => (rv.saturating_sub(list_rv) as usize).min(total),
                Err(_) => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        "invalid resourceVersion",
                    );
                }
            },
        };
        let timeout = query
            .get("timeoutSeconds")
            .and_then(|seconds| seconds.parse::<u64>().ok())
            .filter(|seconds| *seconds > 0)
            .map_or(Duration::from_secs(1800), Duration::from_secs);
        let events = self.watch_stream(start, gates.expirations, timeout, encoding);
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, watch_content_type(encoding))
            .body(StreamBody::new(events).boxed())
            .expect("a fixed response is valid")
    }

    fn watch_stream(
        self: &Arc<Self>,
        start: usize,
        expirations: u64,
        timeout: Duration,
        encoding: Encoding,
    ) -> impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + 'static {
        let server = Arc::clone(self);
        let mut gates = self.gates.subscribe();
        async_stream::stream! {
            let deadline = tokio::time::Instant::now() + timeout;
            let mut next = start;
            loop {
                let waited = tokio::time::timeout_at(
                    deadline,
                    gates.wait_for(|gates| gates.released > next || gates.expirations != expirations),
                )
                .await
                .map(|found| found.map(|now| *now));
                let now = match waited {
                    Ok(Ok(now)) => now,
                    // The timeout passed (the watch ends cleanly, as on the
                    // real server) or the server is shutting down.
                    Ok(Err(_)) | Err(_) => break,
                };
                if now.expirations != expirations {
                    server.stats.expired_watches.fetch_add(1, Ordering::Relaxed);
                    let rv = server.workload.list_resource_version() + next as u64;
                    yield Ok(Frame::data(Bytes::from(expired_event(rv, encoding))));
                    break;
                }
                let events = server.events(encoding);
                let paced_from = tokio::time::Instant::now();
                let paced_first = next;
                while next < now.released {
                    let first = next;
                    let chunk = match server.chunking {
                        Chunking::Backlog => {
                            let mut chunk = BytesMut::with_capacity(CHUNK_BYTES + 8 * 1024);
                            while next < now.released && chunk.len() < CHUNK_BYTES {
                                chunk.extend_from_slice(&events[next]);
                                next += 1;
                            }
                            chunk.freeze()
                        }
                        Chunking::PerEvent | Chunking::Rate(_) => {
                            if let Chunking::Rate(rate) = server.chunking {
                                let due = paced_from
                                    + Duration::from_secs_f64((next - paced_first) as f64 / f64::from(rate));
                                tokio::time::sleep_until(due).await;
                            }
                            next += 1;
                            Bytes::copy_from_slice(&events[first])
                        }
                    };
                    server.stats.events_sent.fetch_add((next - first) as u64, Ordering::Relaxed);
                    yield Ok(Frame::data(chunk));
                    if server.chunking != Chunking::Backlog {
                        // The body is not ready for a moment, so hyper
                        // flushes this event's chunk before the next.
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }
}

/// The Content-Type of a watch in `encoding`.
fn watch_content_type(encoding: Encoding) -> String {
    if encoding.is_protobuf() {
        format!("{};stream=watch", protobuf::MEDIA_TYPE)
    } else {
        "application/json".to_owned()
    }
}

/// The `ERROR` event a kube-apiserver sends when a watch's resourceVersion
/// has been compacted away.
fn expired_event(rv: u64, encoding: Encoding) -> Vec<u8> {
    let message = format!("too old resource version: {rv}");
    if encoding.is_protobuf() {
        return protobuf::expired_frame(&message);
    }
    let mut line = json!({
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "Expired",
            "code": 410
        }
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16()
    });
    json_response(code, body.to_string())
}

fn json_response(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.into()).boxed())
        .expect("a fixed response is valid")
}

fn parse_continue(token: &str) -> Option<(u64, usize)> {
    let (rv, offset) = token.split_once('-')?;
    Some((rv.parse().ok()?, offset.parse().ok()?))
}

fn parse_query(query: &str) -> HashMap<String, String> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}
