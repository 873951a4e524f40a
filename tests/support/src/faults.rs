//! Misbehaviour on request: error answers, delays, and things that go wrong
//! in the middle of a watch.
//!
//! Rules (the tests in `tests/faults.rs` name them):
//! - FT1: a lagged watch delivers every line `lag` after the server produced
//!   it, in the order produced, the end of the stream included; other
//!   watches are not delayed.
//! - FT2: an injected write conflict lets `after_writes` matching writes
//!   through, then answers the next one 409 `Conflict` with the API
//!   server's message (`Operation cannot be fulfilled on <resource> "<name>":
//!   the object has been modified; …`) without applying it; it counts only
//!   writes to one object (`PUT`, `PATCH`, `DELETE` of a named object).
//! - FT3: latency delays the answer to every matching request, failed ones
//!   included, until the faults are cleared; on a paused clock it advances
//!   virtual time only.
//! - FT4: [`FakeApiServer::clear_faults`](crate::FakeApiServer::clear_faults)
//!   drops every pending fault, latency, lag and schedule; watches already
//!   open keep the faults they were given.
//! - FT5: a fault schedule (what a `Simulation` installs) is asked once per
//!   request and once per watch, in the order they arrive, after the faults
//!   set by hand.
//! - FT6: an error answer's `Status` carries `details` only when the
//!   status has them (rules of `status.rs`): kube-apiserver leaves out a
//!   `details` it has not set.

mod inject;
mod lag;

use std::time::Duration;

pub use crate::status::ApiStatus;
use crate::{record::RecordedRequest, resource::CollectionPath};

pub(crate) use lag::lagged;

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
    /// Deliver every line of a watch this much later than it was produced;
    /// taken only by watches (FT1).
    Lag(Duration),
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

/// Which writes an injected conflict counts (FT2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
    /// Writes to any one object that `RequestMatch` matches
    /// (e.g. [`RequestMatch::Update`]: `PUT` and `PATCH`).
    Matching(RequestMatch),
    /// Writes (`PUT`, `PATCH`, `DELETE`) to one object.
    Object {
        /// The object's API group (`""` for the core group).
        group: String,
        /// Its resource's plural, e.g. `configmaps`.
        plural: String,
        /// Its namespace (`None` for a cluster-scoped object).
        namespace: Option<String>,
        /// Its name.
        name: String,
    },
}

impl WriteTarget {
    /// Writes to the typed object `namespace/name`.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer_testing::WriteTarget;
    ///
    /// let target = WriteTarget::object::<ConfigMap>(Some("default"), "settings");
    /// assert!(matches!(target, WriteTarget::Object { ref plural, .. } if plural == "configmaps"));
    /// ```
    pub fn object<K: crate::StaticResource>(namespace: Option<&str>, name: &str) -> Self {
        Self::object_of(&crate::ResourceType::of::<K>(), namespace, name)
    }

    /// Writes to the object `namespace/name` of any resource.
    pub fn object_of(resource: &crate::ResourceType, namespace: Option<&str>, name: &str) -> Self {
        Self::Object {
            group: resource.group.clone(),
            plural: resource.plural.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    fn matches(&self, request: &RecordedRequest, path: &CollectionPath, name: &str) -> bool {
        match self {
            Self::Matching(matcher) => matcher.matches(request),
            Self::Object {
                group,
                plural,
                namespace,
                name: target,
            } => {
                path.resource.group == *group
                    && path.resource.plural == *plural
                    && path.namespace == *namespace
                    && name == target
            }
        }
    }
}

impl From<RequestMatch> for WriteTarget {
    fn from(matcher: RequestMatch) -> Self {
        Self::Matching(matcher)
    }
}

/// The object a write names, when it is a `PUT`, `PATCH` or `DELETE` of one
/// object: the only writes the API server answers with a conflict.
pub(crate) fn written_object(request: &RecordedRequest) -> Option<(CollectionPath, String)> {
    if !matches!(request.method.as_str(), "PUT" | "PATCH" | "DELETE") {
        return None;
    }
    match CollectionPath::parse_with_name(&request.path)? {
        (path, Some(name)) => Some((path, name)),
        _ => None,
    }
}

/// The 409 the API server gives a write to this object.
pub(crate) fn conflict_for(path: &CollectionPath, name: &str) -> ApiStatus {
    let resource = &path.resource;
    let qualified = if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    ApiStatus::conflict(&qualified, name)
}

/// An injected conflict waiting for its write.
#[derive(Debug, Clone)]
pub(crate) struct ConflictFault {
    pub(crate) target: WriteTarget,
    /// Matching writes still to let through.
    pub(crate) skip: usize,
}

/// What a new watch is given: faults in the order they fall due, and lag.
#[derive(Debug, Default)]
pub(crate) struct WatchSetup {
    pub(crate) faults: Vec<(usize, WatchFault)>,
    pub(crate) lag: Option<Duration>,
}

/// Faults decided per request by a schedule rather than set up front
/// (FT5): a `Simulation` draws them from its seed.
pub(crate) trait FaultPlan: std::fmt::Debug + Send {
    /// The answers for one request (a `Status`, a `Delay`), given its body.
    fn request(&mut self, request: &RecordedRequest, body: &[u8]) -> Vec<Answer>;
    /// The faults and lag of one new watch.
    fn watch(&mut self, request: &RecordedRequest) -> WatchSetup;
}

/// All faults not yet used up.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pub(crate) requests: Vec<RequestFault>,
    pub(crate) watches: Vec<PendingWatchFault>,
    pub(crate) conflicts: Vec<ConflictFault>,
    pub(crate) plan: Option<Box<dyn FaultPlan>>,
}

impl Faults {
    /// The answers for one request, in order (delays first); each use
    /// counts against its fault.
    pub(crate) fn take_answers(&mut self, request: &RecordedRequest, body: &[u8]) -> Vec<Answer> {
        let mut answers = Vec::new();
        for fault in &mut self.requests {
            let lag = matches!(fault.answer, Answer::Lag(_));
            if fault.remaining > 0 && !lag && fault.matches(request) {
                fault.remaining -= 1;
                answers.push(fault.answer.clone());
            }
        }
        self.requests.retain(|f| f.remaining > 0);
        if let Some((path, name)) = written_object(request) {
            let mut due = false;
            self.conflicts.retain_mut(|c| {
                if !c.target.matches(request, &path, &name) {
                    return true;
                }
                match c.skip.checked_sub(1) {
                    Some(left) => {
                        c.skip = left;
                        true
                    }
                    // Used by this write; another one due now is used too.
                    None => {
                        due = true;
                        false
                    }
                }
            });
            if due {
                answers.push(Answer::Status(conflict_for(&path, &name)));
            }
        }
        if let Some(plan) = &mut self.plan {
            answers.extend(plan.request(request, body));
        }
        answers.sort_by_key(|a| matches!(a, Answer::Status(_)));
        answers
    }

    /// The faults and lag of a new watch, each watch fault used once, each
    /// lag counted against its fault.
    pub(crate) fn take_watch_setup(&mut self, request: &RecordedRequest) -> WatchSetup {
        let mut setup = WatchSetup {
            faults: self.take_watch_faults(request),
            lag: None,
        };
        for fault in &mut self.requests {
            if let Answer::Lag(lag) = fault.answer
                && fault.remaining > 0
                && fault.matches(request)
            {
                fault.remaining -= 1;
                setup.lag = setup.lag.max(Some(lag));
            }
        }
        self.requests.retain(|f| f.remaining > 0);
        if let Some(plan) = &mut self.plan {
            let planned = plan.watch(request);
            setup.faults.extend(planned.faults);
            setup.lag = setup.lag.max(planned.lag);
        }
        setup.faults.sort_by_key(|(n, _)| *n);
        setup
    }

    /// The watch faults for a new watch, each used once.
    fn take_watch_faults(&mut self, request: &RecordedRequest) -> Vec<(usize, WatchFault)> {
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A schedule that writes down each time it is asked.
    #[derive(Debug)]
    struct Recording(Arc<Mutex<Vec<String>>>);

    impl FaultPlan for Recording {
        fn request(&mut self, request: &RecordedRequest, _body: &[u8]) -> Vec<Answer> {
            let asked = format!("request {} {}", request.method, request.path);
            self.0.lock().unwrap().push(asked);
            vec![Answer::Delay(Duration::from_millis(2))]
        }

        fn watch(&mut self, request: &RecordedRequest) -> WatchSetup {
            self.0
                .lock()
                .unwrap()
                .push(format!("watch {}", request.path));
            WatchSetup {
                faults: Vec::new(),
                lag: Some(Duration::from_millis(5)),
            }
        }
    }

    fn request(method: &str, path: &str, query: &[(&str, &str)]) -> RecordedRequest {
        RecordedRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            accept: None,
            received_at: tokio::time::Instant::now(),
        }
    }

    #[test]
    fn ft5_a_schedule_is_asked_once_per_request_and_watch_in_arrival_order_after_hand_faults() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let mut faults = Faults {
            plan: Some(Box::new(Recording(Arc::clone(&asked)))),
            ..Faults::default()
        };
        faults.requests.push(RequestFault {
            matcher: RequestMatch::Any,
            name: None,
            answer: Answer::Delay(Duration::from_millis(1)),
            remaining: 1,
        });

        let pods = "/api/v1/pods";
        let first = faults.take_answers(&request("GET", pods, &[]), b"");
        // The fault set by hand answers first, then the schedule's.
        assert_eq!(
            first,
            [
                Answer::Delay(Duration::from_millis(1)),
                Answer::Delay(Duration::from_millis(2))
            ]
        );
        let put = "/api/v1/namespaces/default/configmaps/a";
        let second = faults.take_answers(&request("PUT", put, &[]), b"{}");
        assert_eq!(second, [Answer::Delay(Duration::from_millis(2))]);
        let setup = faults.take_watch_setup(&request("GET", pods, &[("watch", "true")]));
        assert_eq!(setup.lag, Some(Duration::from_millis(5)));

        assert_eq!(
            *asked.lock().unwrap(),
            [
                format!("request GET {pods}"),
                format!("request PUT {put}"),
                format!("watch {pods}"),
            ]
        );
    }
}
