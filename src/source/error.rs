//! What can go wrong while listing and watching.
//!
//! Messages say what failed and name the resource; the cause is reached
//! through [`source()`](std::error::Error::source), never repeated in the
//! message, so `anyhow`'s `{:#}` prints each part once. For a failed
//! request the next link is the cause inside `kube::Error` (for an API
//! error the server's `Status`, whose message is the server's words),
//! because `kube::Error`'s own message already repeats its cause; the
//! `kube::Error` itself stays reachable with a `match` on the variant.

use std::{fmt, time::Duration};

/// A failure of the list/watch source. The source yields it as an `Err`
/// item and keeps going (R9): it retries, relists or skips the bad event as
/// the variant's docs say. The source does not log it: whoever reads the
/// stream (the informer) reports it once.
///
/// # Examples
///
/// ```
/// use kube_informer::source::Error;
///
/// let error = Error::WatchEvent {
///     resource: "configmaps in namespace default".into(),
///     code: 410,
///     reason: "Expired".into(),
///     message: "too old resource version".into(),
/// };
/// assert_eq!(error.status_code(), Some(410));
/// assert_eq!(
///     error.to_string(),
///     "watch of configmaps in namespace default ended with error 410 Expired: too old resource version"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A list request (first page, continuation or full list) failed.
    /// The source retries: at once with resourceVersion "" after 410 or
    /// "too large resource version", at once with a full list after an
    /// expired continue token, otherwise after a backoff.
    List {
        /// The collection, e.g. `configmaps in namespace default`.
        resource: String,
        /// What the client reported.
        source: kube::Error,
    },
    /// A list request got no complete answer within [`LIST_DEADLINE`]
    /// (the request was abandoned); the source relists after a backoff.
    ///
    /// [`LIST_DEADLINE`]: super::LIST_DEADLINE
    ListTimeout {
        /// The collection, e.g. `configmaps in namespace default`.
        resource: String,
        /// How long the request had waited.
        after: Duration,
    },
    /// A watch request (or a streaming list) could not be started. 429 and
    /// refused connections re-watch after a backoff; anything else relists
    /// after a backoff.
    WatchStart {
        /// The collection, e.g. `configmaps in namespace default`.
        resource: String,
        /// What the client reported.
        source: kube::Error,
    },
    /// The server sent an `ERROR` event, which ends the watch. 429 re-watches
    /// after a backoff; 410 and anything else relist after a backoff.
    WatchEvent {
        /// The collection, e.g. `configmaps in namespace default`.
        resource: String,
        /// HTTP-like status code of the event (e.g. 410).
        code: u16,
        /// Machine-readable reason (e.g. `Expired`).
        reason: String,
        /// Human-readable message.
        message: String,
    },
    /// The watch connection broke mid-stream. The source re-watches at once
    /// from the last resourceVersion (relisting after a backoff if the
    /// watch died within a second without any event).
    WatchStream(std::io::Error),
    /// The watch sent nothing (no event, no bookmark, no byte) for longer
    /// than the timeout it was opened with plus a margin, so its connection
    /// is taken for dead (R10). The source drops it and re-watches at once
    /// from the last resourceVersion; during a streaming list, that relist
    /// falls back to a paginated list.
    WatchIdle {
        /// The collection, e.g. `configmaps in namespace default`.
        resource: String,
        /// How long the watch had been silent.
        idle: Duration,
    },
    /// A watch ended within a second without delivering anything, which
    /// hints at a server in trouble; the source relists after a backoff.
    VeryShortWatch(Duration),
    /// A streaming list ended before its `k8s.io/initial-events-end`
    /// bookmark; this relist falls back to a paginated list.
    StreamingListIncomplete,
    /// A streaming list sent a `DELETED` event before its initial-events-end
    /// bookmark, which a relist cannot express; this relist falls back to a
    /// paginated list.
    UnexpectedInitialEvent(&'static str),
    /// Bytes from the server were not what they should be. A watch line that
    /// is not JSON ends that watch (an event may be lost) and relists after a
    /// backoff; a bad object is skipped.
    Decode {
        /// What was being decoded.
        what: DecodeTarget,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A watch event of a type Kubernetes does not define; skipped.
    UnknownEventType(String),
    /// An object of another kind than the list announced; skipped.
    WrongKind {
        /// The kind the list response announced.
        expected: String,
        /// The kind the object had.
        found: String,
    },
    /// An object (or bookmark) without `metadata`; skipped.
    MissingMetadata,
    /// An object without `metadata.name`; skipped.
    MissingName,
    /// A request could not be built (e.g. a selector that makes an invalid URL).
    BuildRequest(http::Error),
}

/// What the source was decoding when [`Error::Decode`] happened. Its
/// `Display` is the words the error message uses (`failed to decode watch
/// line`): `list`, `list item`, `watch line`, `watch object`, `watch error
/// status`.
///
/// # Examples
///
/// ```
/// use kube_informer::source::DecodeTarget;
///
/// assert_eq!(DecodeTarget::WatchLine.to_string(), "watch line");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeTarget {
    /// A list response (`list`): the page could not be read at all.
    List,
    /// One object of a list (`list item`); it is skipped.
    ListItem,
    /// A watch line that is not a watch event (`watch line`); the watch
    /// ends and the source relists.
    WatchLine,
    /// The object of a watch event (`watch object`); it is skipped.
    WatchObject,
    /// The `Status` of an `ERROR` watch event (`watch error status`); the
    /// watch ends and the source relists.
    WatchErrorStatus,
}

impl DecodeTarget {
    /// The words for it in messages (what `Display` writes).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::List => "list",
            Self::ListItem => "list item",
            Self::WatchLine => "watch line",
            Self::WatchObject => "watch object",
            Self::WatchErrorStatus => "watch error status",
        }
    }

    /// Whether failing to decode it breaks the watch itself, not one
    /// object: a watch line or an error event may have carried a lost
    /// event, so the rest of the stream cannot be trusted.
    pub(crate) fn breaks_watch(self) -> bool {
        match self {
            Self::WatchLine | Self::WatchErrorStatus => true,
            Self::List | Self::ListItem | Self::WatchObject => false,
        }
    }
}

impl fmt::Display for DecodeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::List { resource, .. } => write!(f, "list of {resource} failed"),
            Self::ListTimeout { resource, after } => {
                write!(f, "list of {resource} got no answer within {after:?}")
            }
            Self::WatchStart { resource, .. } => write!(f, "watch of {resource} could not start"),
            Self::WatchEvent {
                resource,
                code,
                reason,
                message,
            } => write!(
                f,
                "watch of {resource} ended with error {code} {reason}: {message}"
            ),
            Self::WatchStream(_) => f.write_str("watch stream broke"),
            Self::WatchIdle { resource, idle } => {
                write!(f, "watch of {resource} was silent for {idle:?}")
            }
            Self::VeryShortWatch(lived) => {
                write!(f, "watch ended after {lived:?} without any event")
            }
            Self::StreamingListIncomplete => {
                f.write_str("streaming list ended before the initial-events-end bookmark")
            }
            Self::UnexpectedInitialEvent(kind) => {
                write!(f, "unexpected {kind} event during a streaming list")
            }
            Self::Decode { what, .. } => write!(f, "failed to decode {what}"),
            Self::UnknownEventType(kind) => write!(f, "unknown watch event type {kind:?}"),
            Self::WrongKind { expected, found } => {
                write!(
                    f,
                    "object of kind {found:?} where {expected:?} was expected"
                )
            }
            Self::MissingMetadata => f.write_str("object has no metadata"),
            Self::MissingName => f.write_str("object has no name"),
            Self::BuildRequest(_) => f.write_str("failed to build request"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::List { source, .. } | Self::WatchStart { source, .. } => Some(cause(source)),
            Self::WatchStream(source) => Some(source),
            Self::Decode { source, .. } => Some(source),
            Self::BuildRequest(source) => Some(source),
            _ => None,
        }
    }
}

/// The link after ours for a client error: what `kube::Error` wraps when it
/// wraps something (its own message repeats that cause), else itself.
fn cause(error: &kube::Error) -> &(dyn std::error::Error + 'static) {
    std::error::Error::source(error).unwrap_or(error)
}

impl Error {
    /// The HTTP status code involved, when there is one: the API server's
    /// answer to a list or watch request, or the code of an `ERROR` event.
    ///
    /// ```
    /// use kube_informer::source::Error;
    /// let gone = Error::WatchEvent {
    ///     resource: "pods".into(),
    ///     code: 410,
    ///     reason: "Expired".into(),
    ///     message: "too old".into(),
    /// };
    /// assert_eq!(gone.status_code(), Some(410));
    /// assert_eq!(Error::MissingName.status_code(), None);
    /// ```
    pub fn status_code(&self) -> Option<u16> {
        self.api_answer().map(|(code, _)| code)
    }

    /// The status code with the server's message, when the API server
    /// answered with a failure: what the informer's sync wait names in a
    /// refusal.
    pub(crate) fn api_answer(&self) -> Option<(u16, &str)> {
        match self {
            Self::List { source, .. } | Self::WatchStart { source, .. } => {
                api_status(source).map(|status| (status.code, status.message.as_str()))
            }
            Self::WatchEvent { code, message, .. } => Some((*code, message.as_str())),
            _ => None,
        }
    }
}

/// The status of an API error, if it is one.
pub(crate) fn api_status(error: &kube::Error) -> Option<&kube::core::Status> {
    match error {
        kube::Error::Api(status) => Some(status),
        _ => None,
    }
}

/// 410 Gone / reason Expired: the resourceVersion or continue token is too old.
pub(crate) fn is_expired(code: u16, reason: &str) -> bool {
    code == 410 || reason == "Expired" || reason == "Gone"
}

/// The server does not have the requested resourceVersion yet.
pub(crate) fn is_too_large_resource_version(status: &kube::core::Status) -> bool {
    let by_cause = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "ResourceVersionTooLarge")
    });
    let by_message = (status.code == 504 || status.reason == "Timeout")
        && (status.message.contains("Too large resource version")
            || status.details.as_ref().is_some_and(|d| {
                d.causes
                    .iter()
                    .any(|c| c.message == "Too large resource version")
            }));
    by_cause || by_message
}

/// 429, or a refused connection: the server is alive but busy or
/// restarting, so re-watching (rather than relisting) is safe and cheaper.
pub(crate) fn is_retriable_watch_start(error: &kube::Error) -> bool {
    if api_status(error).is_some_and(|s| s.code == 429) {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R4: the io error sits several layers deep in what kube's client
    /// returns (kube → hyper-util → connect error → io); the walk must
    /// reach it for a real refused connection.
    #[tokio::test]
    async fn r4_a_really_refused_connection_is_a_retriable_watch_start() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("https://127.0.0.1:{port}").parse().unwrap();
        let client = kube::Client::try_from(kube::Config::new(url)).unwrap();
        let request = http::Request::get("/api/v1/configmaps?watch=true")
            .body(Vec::new())
            .unwrap();
        let error = client.request_text(request).await.unwrap_err();
        assert!(is_retriable_watch_start(&error), "{error:?}");
        assert!(api_status(&error).is_none());
    }
}
