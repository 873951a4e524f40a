//! The list/watch loop: a short loop over three phases (paginated list,
//! streaming list, watch), each a stream of events that ends by saying what
//! comes next. The rules R1–R10 live in the phase that applies them; the
//! transition table is in the module docs of `source`.
//!
//! Each phase runs inside a `tracing` span named after it (`list`, `watch`)
//! that names the resource, so its debug events (relist started/done,
//! watch started, idle deadline, backoff) say what they are about. Errors
//! are yielded, not logged: whoever reads the stream reports them once.

mod observe;
mod paginated;
mod session;
mod streaming;
mod watching;

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use futures::{Stream, StreamExt};

use crate::{metrics::SourceRecorder, resource::WatchedResource};

use super::{
    Watchable, Wiring,
    backoff::Backoff,
    config::{ListStrategy, Settings},
    decode::Decoder,
    error::{
        Error, api_status, is_expired, is_retriable_watch_start, is_too_large_resource_version,
    },
    event::Event,
    list::PageSizePolicy,
    target::{Target, WatchQuery},
};
use session::Session;

/// How much longer than its requested timeout a watch may stay silent
/// before its connection is taken for dead (R10). The server ends a healthy
/// watch at its timeout; the margin covers its timer's slack and the
/// network.
pub(crate) const WATCH_IDLE_MARGIN: Duration = Duration::from_secs(30);

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A relist with the configured strategy.
    Relist,
    /// A relist that falls back to a paginated list (R8).
    PagedList,
    /// A watch from the last resourceVersion (or the one a streaming list
    /// left open).
    Watch,
    BackoffThenRelist,
    BackoffThenWatch,
}

/// What a phase produces: items for the caller, and finally what comes next.
enum Step<T> {
    Emit(Result<Event<T>, Error>),
    Then(Next),
}

/// What the phases share and carry from one to the next.
struct State<T> {
    target: Target,
    config: Settings,
    /// Where the source counts what it does.
    metrics: Arc<SourceRecorder>,
    decoder: Decoder,
    backoff: Backoff,
    policy: PageSizePolicy,
    /// The newest resourceVersion seen in a list, an event or a bookmark.
    last_rv: String,
    /// Set when the server said `last_rv` is gone or ahead of it; relists
    /// then read consistently ("") until one succeeds (R1).
    rv_unavailable: bool,
    /// A watch opened by a streaming list, which goes on after the list (R8).
    carried: Option<Session<T>>,
}

impl<T: Watchable> State<T> {
    /// A watch request from `resource_version`, with a fresh timeout (R3),
    /// and how long it may stay silent (R10).
    fn watch_query(&self, resource_version: String, send_initial_events: bool) -> WatchQuery {
        WatchQuery {
            resource_version,
            timeout: Duration::from_secs(self.config.draw_watch_timeout().into()),
            send_initial_events,
            bookmarks: self.config.bookmarks,
        }
    }
}

/// Opens a watch; a start that hangs past the idle limit counts as idle
/// (R10). Takes the target alone: the state holds a session, which is not
/// `Sync`, and this future must be `Send`.
async fn open_watch<T>(target: &Target, query: &WatchQuery) -> Result<Session<T>, Error>
where
    T: Watchable,
{
    let idle = query.timeout.saturating_add(WATCH_IDLE_MARGIN);
    tracing::debug!(
        resource_version = %query.resource_version,
        timeout_secs = query.timeout.as_secs(),
        streaming = query.send_initial_events,
        "watch started"
    );
    match tokio::time::timeout(idle, target.watch(query)).await {
        Ok(Ok(body)) => Ok(Session::new(body, idle)),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(idle_error(target, idle)),
    }
}

/// R10: the watch said nothing for `idle`.
fn idle_error(target: &Target, idle: Duration) -> Error {
    tracing::debug!(?idle, "watch idle deadline passed");
    Error::WatchIdle {
        resource: target.name().to_owned(),
        idle,
    }
}

/// Where a failed watch start goes (R4): 429 and refused connections
/// re-watch after a backoff, the rest relists after one.
fn after_watch_start_error(error: &Error) -> Next {
    match error {
        Error::WatchStart { source, .. } if is_retriable_watch_start(source) => {
            Next::BackoffThenWatch
        }
        _ => Next::BackoffThenRelist,
    }
}

/// Whether a watch failed because its resourceVersion is unavailable.
fn is_unavailable_resource_version(error: &Error) -> bool {
    match error {
        Error::WatchStart { source, .. } => api_status(source)
            .is_some_and(|s| is_expired(s.code, &s.reason) || is_too_large_resource_version(s)),
        Error::WatchEvent { code, reason, .. } => is_expired(*code, reason),
        _ => false,
    }
}

/// Whether a line error means the rest of the stream cannot be trusted.
fn ends_watch(error: &Error) -> bool {
    matches!(error, Error::Decode { what, .. } if what.breaks_watch())
}

/// A span for one phase of the source (`list`, `watch` or `backoff`),
/// carrying the resource's names so every event and log line inside says
/// what it is about.
fn span(resource: &WatchedResource, phase: &'static str) -> tracing::Span {
    tracing::debug_span!(
        "source",
        phase,
        group = %resource.group,
        version = %resource.version,
        resource = %resource.resource,
        namespace = resource.namespace.as_deref().unwrap_or(""),
        labels = resource.label_selector.as_deref().unwrap_or(""),
        fields = resource.field_selector.as_deref().unwrap_or(""),
    )
}

/// The source stream over `target`.
pub(crate) fn run<T>(
    target: Target,
    config: Settings,
    wiring: Wiring,
) -> impl Stream<Item = Result<Event<T>, Error>> + Send + 'static
where
    T: Watchable,
{
    let resource = target.resource().clone();
    let streaming = config.list_strategy == ListStrategy::Streaming;
    let mut observer = observe::Observer::new(wiring.metrics.clone(), streaming, config.bookmarks);
    let mut state = State {
        target,
        metrics: wiring.metrics,
        decoder: Decoder::new()
            .skip_managed_fields(wiring.skip_managed_fields)
            .plain(wiring.decode.plain)
            .max_threads(wiring.decode.threads),
        backoff: Backoff::new(config.backoff),
        policy: PageSizePolicy {
            explicit: config.page_size,
            paginated_at_rv0: false,
        },
        config,
        last_rv: String::new(),
        rv_unavailable: false,
        carried: None,
    };
    async_stream::stream! {
        let mut next = Next::Relist;
        loop {
            observer.phase(next, state.carried.is_some());
            let (phase, steps) = match next {
                Next::BackoffThenRelist | Next::BackoffThenWatch => {
                    let delay = state.backoff.next_delay();
                    span(&resource, "backoff").in_scope(|| tracing::debug!(?delay, "backing off"));
                    tokio::time::sleep(delay).await;
                    next = if next == Next::BackoffThenRelist { Next::Relist } else { Next::Watch };
                    continue;
                }
                Next::Relist if streaming => ("list", streaming::list(&mut state)),
                Next::Relist | Next::PagedList => ("list", paginated::list(&mut state)),
                Next::Watch => ("watch", watching::watch(&mut state)),
            };
            let mut steps = InSpan { inner: steps, span: span(&resource, phase) };
            let mut then = None;
            while let Some(step) = steps.next().await {
                match step {
                    Step::Emit(item) => { observer.emitted(&item); yield item }
                    Step::Then(next) => then = Some(next),
                }
            }
            debug_assert!(then.is_some(), "every phase says what comes next");
            next = then.unwrap_or(Next::BackoffThenRelist);
        }
    }
}

/// A phase's steps.
type Steps<'a, T> = Pin<Box<dyn Stream<Item = Step<T>> + Send + 'a>>;

/// Polls a phase inside its span.
struct InSpan<S> {
    inner: S,
    span: tracing::Span,
}

impl<S: Stream + Unpin> Stream for InSpan<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        this.inner.poll_next_unpin(cx)
    }
}
