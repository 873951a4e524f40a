//! What a phase of the loop works on and what it yields: the state the
//! phases share and carry from one to the next, and the steps that end by
//! saying which phase comes next.

use std::{pin::Pin, sync::Arc, time::Duration};

use futures::Stream;

use super::session::Session;
use crate::{
    metrics::SourceRecorder,
    source::{
        Watchable,
        backoff::Backoff,
        config::Settings,
        decode::Decoder,
        error::Error,
        event::Event,
        list::PageSizePolicy,
        target::{Target, WatchQuery},
    },
};

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
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
pub(super) enum Step<T> {
    Emit(Result<Event<T>, Error>),
    Then(Next),
}

/// What the phases share and carry from one to the next.
pub(super) struct State<T> {
    pub(super) target: Target,
    pub(super) config: Settings,
    /// Where the source counts what it does.
    pub(super) metrics: Arc<SourceRecorder>,
    pub(super) decoder: Decoder,
    pub(super) backoff: Backoff,
    pub(super) policy: PageSizePolicy,
    /// The newest resourceVersion seen in a list, an event or a bookmark.
    pub(super) last_rv: String,
    /// Set when the server said `last_rv` is gone or ahead of it; relists
    /// then read consistently ("") until one succeeds (R1).
    pub(super) rv_unavailable: bool,
    /// A watch opened by a streaming list, which goes on after the list (R8).
    pub(super) carried: Option<Session<T>>,
}

impl<T: Watchable> State<T> {
    /// A watch request from `resource_version`, with a fresh timeout (R3),
    /// and how long it may stay silent (R10).
    pub(super) fn watch_query(
        &self,
        resource_version: String,
        send_initial_events: bool,
    ) -> WatchQuery {
        WatchQuery {
            resource_version,
            timeout: Duration::from_secs(self.config.draw_watch_timeout().into()),
            send_initial_events,
            bookmarks: self.config.bookmarks,
        }
    }
}

/// A phase's steps.
pub(super) type Steps<'a, T> = Pin<Box<dyn Stream<Item = Step<T>> + Send + 'a>>;
