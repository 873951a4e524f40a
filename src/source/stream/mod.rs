//! The list/watch loop: a short loop over three phases (paginated list,
//! streaming list, watch), each a stream of events that ends by saying what
//! comes next. The rules R1–R10 live in the phase that applies them; the
//! transition table is in the module docs of `source`.
//!
//! Each phase runs inside a `tracing` span named after it (`list`, `watch`)
//! that names the resource, so its debug events (relist started/done,
//! watch started, idle deadline, backoff) say what they are about. Errors
//! are yielded, not logged: whoever reads the stream reports them once.

mod failure;
mod observe;
mod paginated;
mod phase;
mod session;
mod streaming;
mod watching;

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use futures::{Stream, StreamExt};

use crate::resource::WatchedResource;

use super::{
    SourceSetup, Watchable,
    backoff::Backoff,
    config::{ListStrategy, Settings},
    decode::Decoder,
    error::Error,
    event::Event,
    list::PageSizePolicy,
    target::Target,
};
use phase::{Next, State, Step};

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
    setup: SourceSetup,
) -> impl Stream<Item = Result<Event<T>, Error>> + Send + 'static
where
    T: Watchable,
{
    let resource = target.resource().clone();
    let streaming = config.list_strategy == ListStrategy::Streaming;
    let mut observer = observe::Observer::new(setup.metrics.clone(), streaming, config.bookmarks);
    let decoder = Decoder::new()
        .skip_managed_fields(setup.skip_managed_fields)
        .plain(setup.decode.plain)
        .max_threads(setup.decode.threads)
        .protobuf(target.protobuf());
    let mut state = State {
        target,
        metrics: setup.metrics,
        decoder,
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
