//! What can go wrong while listing and watching.

use std::time::Duration;

/// A failure of the list/watch source. The source yields it as an `Err`
/// item and keeps going (R9): it retries, relists or skips the bad event as
/// the variant's docs say.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A list request (first page, continuation or full list) failed.
    /// The source retries: at once with resourceVersion "" after 410 or
    /// "too large resource version", at once with a full list after an
    /// expired continue token, otherwise after a backoff.
    #[error("list request failed: {0}")]
    List(#[source] kube::Error),
    /// A watch request (or a streaming list) could not be started. 429 and
    /// refused connections re-watch after a backoff; anything else relists
    /// after a backoff.
    #[error("watch request failed: {0}")]
    WatchStart(#[source] kube::Error),
    /// The server sent an `ERROR` event, which ends the watch. 429 re-watches
    /// after a backoff; 410 and anything else relist after a backoff.
    #[error("watch error event {code} {reason}: {message}")]
    WatchEvent {
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
    #[error("watch stream broke: {0}")]
    WatchStream(#[source] std::io::Error),
    /// A watch ended within a second without delivering anything, which
    /// hints at a server in trouble; the source relists after a backoff.
    #[error("watch ended after {0:?} without any event")]
    VeryShortWatch(Duration),
    /// A streaming list ended before its `k8s.io/initial-events-end`
    /// bookmark; this relist falls back to a paginated list.
    #[error("streaming list ended before the initial-events-end bookmark")]
    StreamingListIncomplete,
    /// A streaming list sent a `DELETED` event before its initial-events-end
    /// bookmark, which a relist cannot express; this relist falls back to a
    /// paginated list.
    #[error("unexpected {0} event during a streaming list")]
    UnexpectedInitialEvent(&'static str),
    /// Bytes from the server were not what they should be. A watch line that
    /// is not JSON ends that watch (an event may be lost) and relists after a
    /// backoff; a bad object is skipped.
    #[error("failed to decode {what}: {source}")]
    Decode {
        /// What was being decoded: `list`, `list item`, `watch line`,
        /// `watch object`, `watch error status`.
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A watch event of a type Kubernetes does not define; skipped.
    #[error("unknown watch event type {0:?}")]
    UnknownEventType(String),
    /// An object of another kind than the list announced; skipped.
    #[error("object of kind {found:?} where {expected:?} was expected")]
    WrongKind {
        /// The kind the list response announced.
        expected: String,
        /// The kind the object had.
        found: String,
    },
    /// An object (or bookmark) without `metadata`; skipped.
    #[error("object has no metadata")]
    MissingMetadata,
    /// An object without `metadata.name`; skipped.
    #[error("object has no name")]
    MissingName,
    /// A request could not be built (e.g. a selector that makes an invalid URL).
    #[error("failed to build request: {0}")]
    BuildRequest(#[source] http::Error),
}

impl Error {
    /// The HTTP status code involved, when there is one.
    ///
    /// ```
    /// use kube_informer::source::Error;
    /// let gone = Error::WatchEvent { code: 410, reason: "Expired".into(), message: "too old".into() };
    /// assert_eq!(gone.status_code(), Some(410));
    /// assert_eq!(Error::MissingName.status_code(), None);
    /// ```
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Self::List(e) | Self::WatchStart(e) => match e {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            Self::WatchEvent { code, .. } => Some(*code),
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
