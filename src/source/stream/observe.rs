//! Counting what the list/watch loop does, from the outside of its phases:
//! which phase starts and what each yields. The phases themselves stay free
//! of bookkeeping; only the LIST request count needs a line inside one.

use std::sync::Arc;

use tokio::time::Instant;

use super::{failure::is_unavailable_resource_version, phase::Next};
use crate::{
    metrics::{RelistCause, SourceRecorder, WatchEventType},
    source::{error::Error, event::Event},
};

/// Feeds the source's counters as the loop runs.
pub(super) struct Observer {
    recorder: Arc<SourceRecorder>,
    streaming: bool,
    /// No relist yet: the next one is the initial list.
    first: bool,
    /// The last error said the resourceVersion is gone.
    expired: bool,
    /// When the relist under way started.
    list_started: Option<Instant>,
}

impl Observer {
    pub(super) fn new(recorder: Arc<SourceRecorder>, streaming: bool, bookmarks: bool) -> Self {
        recorder.bookmarks_enabled(bookmarks);
        Self {
            recorder,
            streaming,
            first: true,
            expired: false,
            list_started: None,
        }
    }

    /// A phase is about to start. `carried` says a streaming list left its
    /// watch open, so a watch phase sends no new request.
    pub(super) fn phase(&mut self, next: Next, carried: bool) {
        match next {
            Next::Relist | Next::PagedList => {
                let cause = if self.first {
                    RelistCause::Initial
                } else if next == Next::PagedList {
                    RelistCause::StreamingFallback
                } else if self.expired {
                    RelistCause::Expired
                } else {
                    RelistCause::Error
                };
                tracing::debug!(cause = cause.as_str(), "relist");
                self.recorder.relist(cause);
                self.first = false;
                self.expired = false;
                self.list_started = Some(Instant::now());
                if next == Next::Relist && self.streaming {
                    self.recorder.watch_start();
                }
            }
            Next::Watch if !carried => self.recorder.watch_start(),
            Next::Watch | Next::BackoffThenRelist | Next::BackoffThenWatch => {}
        }
    }

    /// The loop is about to yield `item`.
    pub(super) fn emitted<T>(&mut self, item: &Result<Event<T>, Error>) {
        let kind = match item {
            Ok(Event::Added(_)) => WatchEventType::Added,
            Ok(Event::Modified(_)) => WatchEventType::Modified,
            Ok(Event::Deleted(_)) => WatchEventType::Deleted,
            Ok(Event::Bookmark { .. }) => WatchEventType::Bookmark,
            Ok(Event::Listed(_)) => return self.recorder.listed(),
            Ok(Event::ListStart) => return,
            Ok(Event::ListDone { .. }) => {
                if let Some(started) = self.list_started.take() {
                    self.recorder.list_done(started.elapsed());
                }
                return;
            }
            Err(error) => {
                self.expired = is_unavailable_resource_version(error)
                    || error.class() == crate::metrics::ErrorClass::Gone;
                return self.recorder.error(error.class());
            }
        };
        self.recorder.watch_event(kind);
    }
}
