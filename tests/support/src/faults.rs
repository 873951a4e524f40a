//! Misbehaviour on request: error answers, delays, and things that go wrong
//! in the middle of a watch.

use std::time::Duration;

use serde_json::{Value, json};

use crate::record::RecordedRequest;

/// Which requests a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestMatch {
    /// Every request.
    Any,
    /// Every list request (first pages and continuations).
    List,
    /// List requests that carry a `continue` token.
    ListContinue,
    /// Every watch request (plain and streaming lists).
    Watch,
    /// Watch requests with `sendInitialEvents=true`.
    StreamingList,
    /// Every write: `POST`, `PUT`, `PATCH` and `DELETE`.
    Write,
    /// Every update of an existing object: `PUT` and `PATCH`.
    Update,
}

impl RequestMatch {
    pub(crate) fn matches(self, request: &RecordedRequest) -> bool {
        match self {
            Self::Any => true,
            Self::List => request.is_list(),
            Self::ListContinue => request.is_list() && request.param("continue").is_some(),
            Self::Watch => request.is_watch(),
            Self::StreamingList => {
                request.is_watch() && request.param("sendInitialEvents") == Some("true")
            }
            Self::Write => request.is_write(),
            Self::Update => matches!(request.method.as_str(), "PUT" | "PATCH"),
        }
    }
}

/// How the server answers a request that a fault matched.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// An HTTP error with a Kubernetes `Status` body.
    Status(ApiStatus),
    /// Wait this long (on tokio's clock), then answer normally.
    Delay(Duration),
    /// Hold the request this long (on tokio's clock), neither applied nor
    /// answered, then serve it to the end even if the client has gone.
    Hold(Duration),
}

/// A Kubernetes `Status` failure: HTTP code, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiStatus {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason, e.g. `Expired`, `Forbidden`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// `details.causes[].reason` values, e.g. `ResourceVersionTooLarge`.
    pub causes: Vec<String>,
}

impl ApiStatus {
    /// A status with no causes.
    pub fn new(code: u16, reason: &str, message: &str) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            causes: Vec::new(),
        }
    }

    /// 410 Gone, reason `Expired`: the resourceVersion or continue token is too old.
    pub fn expired() -> Self {
        Self::new(410, "Expired", "too old resource version")
    }

    /// 504 with cause `ResourceVersionTooLarge`: the resourceVersion is ahead of the server.
    pub fn too_large_resource_version() -> Self {
        Self {
            causes: vec!["ResourceVersionTooLarge".to_owned()],
            ..Self::new(504, "Timeout", "Too large resource version")
        }
    }

    /// 403 Forbidden.
    pub fn forbidden() -> Self {
        Self::new(403, "Forbidden", "forbidden by the fake server")
    }

    /// 429 Too Many Requests.
    pub fn too_many_requests() -> Self {
        Self::new(429, "TooManyRequests", "too many requests, try again later")
    }

    /// 500 Internal Server Error.
    pub fn internal_error() -> Self {
        Self::new(
            500,
            "InternalError",
            "internal error injected by the fake server",
        )
    }

    /// The JSON `Status` object.
    pub fn to_json(&self) -> Value {
        let causes: Vec<Value> = self
            .causes
            .iter()
            .map(|c| json!({"reason": c, "message": self.message}))
            .collect();
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
            "details": {"causes": causes},
        })
    }
}

/// Something that goes wrong inside a watch stream, after it has sent a
/// number of events.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchFault {
    /// Send an `ERROR` event carrying this status, then end the stream.
    ErrorEvent(ApiStatus),
    /// Abort the connection without ending the chunked body.
    DropConnection,
    /// Send a line that is not JSON; the stream goes on.
    MalformedLine,
    /// Send an event whose type is not one Kubernetes defines; the stream goes on.
    UnknownEventType,
    /// Send an `ADDED` event whose object has no metadata; the stream goes on.
    ObjectWithoutMetadata,
    /// Send an `ADDED` event whose object has metadata but no name; the stream goes on.
    ObjectWithoutName,
    /// Send an `ADDED` event whose object is of another kind; the stream goes on.
    WrongKind,
    /// End the stream normally, as at its timeout.
    End,
    /// Go silent and stay open: send nothing more (no event, no bookmark)
    /// and never end, whatever the timeout or
    /// [`close_watches`](crate::FakeApiServer::close_watches) say, until
    /// the client hangs up. This is what a half-open connection looks like
    /// from the client.
    Stall,
}

impl WatchFault {
    /// Whether the stream ends after this fault.
    pub(crate) fn ends_stream(&self) -> bool {
        matches!(
            self,
            Self::ErrorEvent(_) | Self::DropConnection | Self::End | Self::Stall
        )
    }
}

/// A request fault waiting for matching requests.
#[derive(Debug, Clone)]
pub(crate) struct RequestFault {
    pub(crate) matcher: RequestMatch,
    /// Only requests to the object of this name (the last segment of
    /// their path), when set.
    pub(crate) name: Option<String>,
    pub(crate) answer: Answer,
    pub(crate) remaining: usize,
}

impl RequestFault {
    fn matches(&self, request: &RecordedRequest) -> bool {
        self.matcher.matches(request)
            && self
                .name
                .as_deref()
                .is_none_or(|name| request.path.rsplit('/').next() == Some(name))
    }
}

/// A watch fault waiting for the next watch that matches.
#[derive(Debug, Clone)]
pub(crate) struct PendingWatchFault {
    pub(crate) matcher: RequestMatch,
    pub(crate) after_events: usize,
    pub(crate) fault: WatchFault,
}

/// All faults not yet used up.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pub(crate) requests: Vec<RequestFault>,
    pub(crate) watches: Vec<PendingWatchFault>,
}

impl Faults {
    /// The answers for one request, in order (delays first); each use
    /// counts against its fault.
    pub(crate) fn take_answers(&mut self, request: &RecordedRequest) -> Vec<Answer> {
        let mut answers = Vec::new();
        for fault in &mut self.requests {
            if fault.remaining > 0 && fault.matches(request) {
                fault.remaining -= 1;
                answers.push(fault.answer.clone());
            }
        }
        self.requests.retain(|f| f.remaining > 0);
        answers.sort_by_key(|a| matches!(a, Answer::Status(_)));
        answers
    }

    /// The watch faults for a new watch, each used once.
    pub(crate) fn take_watch_faults(
        &mut self,
        request: &RecordedRequest,
    ) -> Vec<(usize, WatchFault)> {
        let mut taken = Vec::new();
        self.watches.retain(|f| {
            if f.matcher.matches(request) {
                taken.push((f.after_events, f.fault.clone()));
                false
            } else {
                true
            }
        });
        taken.sort_by_key(|(n, _)| *n);
        taken
    }
}
