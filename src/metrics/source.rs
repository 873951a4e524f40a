//! What the list/watch source did: requests, events, relists and errors,
//! recorded with relaxed atomic adds by the source's own task.

use std::{
    fmt,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::Duration,
};

use tokio::time::Instant;

use super::{
    counts::{Counts, label},
    histogram::{DurationHistogram, Histogram},
};

/// Why the source listed the whole collection again.
///
/// Displays as its `cause` label value: `initial`, `expired`, `error`,
/// `streaming_fallback`.
///
/// ```
/// use kube_informer::metrics::RelistCause;
///
/// assert_eq!(RelistCause::StreamingFallback.to_string(), "streaming_fallback");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RelistCause {
    /// The first list of a source.
    Initial,
    /// The last resourceVersion was gone (410 Expired / Gone, or "too
    /// large"), so the watch could not resume.
    Expired,
    /// Any other failure of a list or a watch.
    Error,
    /// A streaming list was refused or failed, and the relist fell back to
    /// a paginated one.
    StreamingFallback,
}

impl RelistCause {
    /// Every cause, in the order of [`SourceMetrics::relists`].
    pub const ALL: [Self; 4] = [
        Self::Initial,
        Self::Expired,
        Self::Error,
        Self::StreamingFallback,
    ];

    /// The `cause` label value (what `Display` writes).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::Expired => "expired",
            Self::Error => "error",
            Self::StreamingFallback => "streaming_fallback",
        }
    }
}

/// The kind of a source error, a bounded set fit for a metric label.
///
/// Displays as its `class` label value: `http_410`, `http_429`,
/// `http_4xx`, `http_5xx`, `transport`, `decode`, `malformed_line`,
/// `timeout`, `other`.
///
/// ```
/// use kube_informer::metrics::ErrorClass;
///
/// assert_eq!(ErrorClass::Gone.to_string(), "http_410");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// HTTP 410 Gone: a resourceVersion or continue token too old.
    Gone,
    /// HTTP 429 Too Many Requests.
    TooManyRequests,
    /// Any other 4xx status (403 Forbidden, 404 Not Found, …).
    ClientStatus,
    /// A 5xx status.
    ServerStatus,
    /// The connection failed or broke.
    Transport,
    /// An object that did not decode into the expected type.
    Decode,
    /// A watch line that was not a watch event at all; the watch is
    /// restarted since it may have carried a lost event.
    MalformedLine,
    /// A watch that stayed silent past its deadline.
    Timeout,
    /// Anything else (a watch that died young, an incomplete streaming
    /// list, a request that could not be built).
    Other,
}

impl ErrorClass {
    /// Every class, in the order of [`SourceMetrics::errors`].
    pub const ALL: [Self; 9] = [
        Self::Gone,
        Self::TooManyRequests,
        Self::ClientStatus,
        Self::ServerStatus,
        Self::Transport,
        Self::Decode,
        Self::MalformedLine,
        Self::Timeout,
        Self::Other,
    ];

    /// The class of an HTTP status code.
    pub(crate) fn from_status(code: u16) -> Self {
        match code {
            410 => Self::Gone,
            429 => Self::TooManyRequests,
            400..=499 => Self::ClientStatus,
            500..=599 => Self::ServerStatus,
            _ => Self::Other,
        }
    }

    /// The `class` label value (what `Display` writes).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Gone => "http_410",
            Self::TooManyRequests => "http_429",
            Self::ClientStatus => "http_4xx",
            Self::ServerStatus => "http_5xx",
            Self::Transport => "transport",
            Self::Decode => "decode",
            Self::MalformedLine => "malformed_line",
            Self::Timeout => "timeout",
            Self::Other => "other",
        }
    }
}

/// The kind of a watch event, for [`SourceMetrics::watch_events`].
///
/// Displays as its `type` label value, as the API server spells it:
/// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`.
///
/// ```
/// use kube_informer::metrics::WatchEventType;
///
/// assert_eq!(WatchEventType::Bookmark.to_string(), "BOOKMARK");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WatchEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
}

impl WatchEventType {
    /// Every type, in the order of [`SourceMetrics::watch_events`].
    pub const ALL: [Self; 4] = [Self::Added, Self::Modified, Self::Deleted, Self::Bookmark];

    /// The `type` label value (what `Display` writes).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
        }
    }
}

impl fmt::Display for RelistCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for WatchEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

label!(WatchEventType, 4);
label!(RelistCause, 4);
label!(ErrorClass, 9);

/// The source's counters; written by the source's task, read by anyone.
#[derive(Debug)]
pub(crate) struct SourceRecorder {
    list_requests: AtomicU64,
    list_duration: Histogram,
    listed_objects: AtomicU64,
    watch_starts: AtomicU64,
    watch_events: [AtomicU64; 4],
    relists: [AtomicU64; 4],
    errors: [AtomicU64; 9],
    bookmarks: AtomicBool,
    /// When the source last learned a resourceVersion from a bookmark or a
    /// finished list, in nanoseconds after `base`, plus one (zero: never).
    rv_seen: AtomicU64,
    base: Instant,
}

impl Default for SourceRecorder {
    fn default() -> Self {
        Self {
            list_requests: AtomicU64::new(0),
            list_duration: Histogram::default(),
            listed_objects: AtomicU64::new(0),
            watch_starts: AtomicU64::new(0),
            watch_events: Default::default(),
            relists: Default::default(),
            errors: Default::default(),
            bookmarks: AtomicBool::new(false),
            rv_seen: AtomicU64::new(0),
            base: Instant::now(),
        }
    }
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl SourceRecorder {
    pub(crate) fn bookmarks_enabled(&self, enabled: bool) {
        self.bookmarks.store(enabled, Ordering::Relaxed);
    }

    pub(crate) fn list_request(&self) {
        add(&self.list_requests);
    }

    pub(crate) fn list_done(&self, took: Duration) {
        self.list_duration.observe(took);
        self.resource_version_seen();
    }

    pub(crate) fn listed(&self) {
        add(&self.listed_objects);
    }

    pub(crate) fn watch_start(&self) {
        add(&self.watch_starts);
    }

    pub(crate) fn watch_event(&self, kind: WatchEventType) {
        add(&self.watch_events[kind as usize]);
        if kind == WatchEventType::Bookmark {
            self.resource_version_seen();
        }
    }

    pub(crate) fn relist(&self, cause: RelistCause) {
        add(&self.relists[cause as usize]);
    }

    pub(crate) fn error(&self, class: ErrorClass) {
        add(&self.errors[class as usize]);
    }

    fn resource_version_seen(&self) {
        let nanos = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.rv_seen.store(nanos + 1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> SourceMetrics {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let seen = load(&self.rv_seen);
        let resource_version_age =
            (self.bookmarks.load(Ordering::Relaxed) && seen > 0).then(|| {
                let at = self.base + Duration::from_nanos(seen - 1);
                Instant::now().saturating_duration_since(at)
            });
        SourceMetrics {
            list_requests: load(&self.list_requests),
            list_duration: self.list_duration.snapshot(),
            listed_objects: load(&self.listed_objects),
            watch_starts: load(&self.watch_starts),
            watch_events: Counts::<WatchEventType>::new(self.watch_events.each_ref().map(load)),
            relists: Counts::<RelistCause>::new(self.relists.each_ref().map(load)),
            errors: Counts::<ErrorClass>::new(self.errors.each_ref().map(load)),
            resource_version_age,
        }
    }
}

/// What an informer's list/watch source did since it started.
///
/// An informer fed by a stream ([`Informer::builder_from_stream`]) has no
/// list/watch of its own: these stay zero.
///
/// [`Informer::builder_from_stream`]: crate::Informer::builder_from_stream
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceMetrics {
    /// LIST requests sent: one per page, retries included.
    pub list_requests: u64,
    /// How long each complete relist took, from its first request to its
    /// last object (a paginated list's pages together; a streaming list up
    /// to its initial-events-end bookmark).
    pub list_duration: DurationHistogram,
    /// Objects received by relists.
    pub listed_objects: u64,
    /// Watch requests opened, streaming lists' included.
    pub watch_starts: u64,
    /// Watch events received, by type: `watch_events[WatchEventType::Added]`.
    pub watch_events: Counts<WatchEventType>,
    /// Relists started, by cause: `relists[RelistCause::Expired]`.
    pub relists: Counts<RelistCause>,
    /// Errors the source met, by class: `errors[ErrorClass::Gone]`.
    pub errors: Counts<ErrorClass>,
    /// With bookmarks on (the default): how long ago the source last
    /// learned a resourceVersion from a bookmark or a finished list. The
    /// API server sends a bookmark about every minute, so an age well past
    /// that says the watch is not healthy. `None` with bookmarks off or
    /// before the first list.
    pub resource_version_age: Option<Duration>,
}
