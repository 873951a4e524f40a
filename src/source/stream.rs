//! The list/watch loop: list (or stream a list), then watch from the
//! list's resourceVersion, re-watching after normal ends and relisting
//! after errors, with backoff where client-go's reflector backs off.
//!
//! The transition table is in the module docs of `source` (R1–R9).

use std::{fmt::Debug, time::Duration};

use futures::{Stream, StreamExt};
use tokio::time::Instant;

use super::{
    backoff::Backoff,
    config::{Config, ListStrategy},
    decode::Decoder,
    error::{
        Error, api_status, is_expired, is_retriable_watch_start, is_too_large_resource_version,
    },
    event::Event,
    list::{PageOutcome, PageSizePolicy, Pager},
    target::{Target, WatchLines, WatchQuery},
    watch::{Change, WatchLine, parse_line},
};

/// A watch ending this fast without any event is treated as a failure.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    List,
    Watch,
    BackoffThenList,
    BackoffThenWatch,
}

/// An open watch and what it delivered so far.
struct Session {
    lines: WatchLines,
    started: Instant,
    events: usize,
}

impl Session {
    fn new(lines: WatchLines) -> Self {
        Self {
            lines,
            started: Instant::now(),
            events: 0,
        }
    }

    /// After the watch ended: re-watch at once, unless it died young and empty.
    fn after_end(&self) -> Result<Next, Error> {
        let lived = self.started.elapsed();
        if self.events == 0 && lived < VERY_SHORT_WATCH {
            Err(Error::VeryShortWatch(lived))
        } else {
            Ok(Next::Watch)
        }
    }
}

/// Where a failed watch start goes.
fn after_watch_start_error(error: &Error) -> Next {
    match error {
        Error::WatchStart(e) if is_retriable_watch_start(e) => Next::BackoffThenWatch,
        _ => Next::BackoffThenList,
    }
}

/// Whether a watch start failed because its resourceVersion is unavailable.
fn is_unavailable_resource_version(error: &Error) -> bool {
    match error {
        Error::WatchStart(e) => api_status(e)
            .is_some_and(|s| is_expired(s.code, &s.reason) || is_too_large_resource_version(s)),
        Error::WatchEvent { code, reason, .. } => is_expired(*code, reason),
        _ => false,
    }
}

/// Whether a line error means the rest of the stream cannot be trusted.
fn ends_watch(error: &Error) -> bool {
    matches!(
        error,
        Error::Decode {
            what: "watch line" | "watch error status",
            ..
        }
    )
}

fn report(error: &Error) {
    tracing::warn!(%error, "list/watch source");
}

/// The source stream over `target`.
pub(crate) fn run<T>(
    target: Target,
    config: Config<T>,
) -> impl Stream<Item = Result<Event<T>, Error>> + Send + 'static
where
    T: super::Watchable,
{
    async_stream::stream! {
        let mut decoder = Decoder::new(config.transform.clone());
        let mut backoff = Backoff::new(config.backoff);
        let mut policy = PageSizePolicy { explicit: config.page_size, paginated_at_rv0: false };
        // The newest resourceVersion seen in a list, an event or a bookmark.
        let mut last_rv = String::new();
        // Set when the server said `last_rv` is gone or ahead of it; relists
        // then read consistently ("") until one succeeds.
        let mut rv_unavailable = false;
        // A watch opened by a streaming list, which goes on after the list.
        let mut carried: Option<Session> = None;
        let mut next = Next::List;

        loop {
            match next {
                Next::BackoffThenList | Next::BackoffThenWatch => {
                    tokio::time::sleep(backoff.next_delay()).await;
                    next = if next == Next::BackoffThenList { Next::List } else { Next::Watch };
                }

                Next::List => {
                    if config.list_strategy == ListStrategy::Streaming {
                        let query = WatchQuery {
                            resource_version: if rv_unavailable { String::new() } else { last_rv.clone() },
                            timeout: Duration::from_secs(config.draw_watch_timeout().into()),
                            send_initial_events: true,
                        };
                        let mut fall_back = true;
                        match target.watch(&query).await {
                            Err(error) => {
                                report(&error);
                                if is_unavailable_resource_version(&error) && !rv_unavailable {
                                    rv_unavailable = true;
                                    fall_back = false;
                                    next = Next::List;
                                } else if after_watch_start_error(&error) == Next::BackoffThenWatch {
                                    fall_back = false;
                                    next = Next::BackoffThenList;
                                }
                                yield Err(error);
                            }
                            Ok(lines) => {
                                let mut session = Session::new(lines);
                                yield Ok(Event::ListStart);
                                let failure = loop {
                                    let line = match session.lines.next().await {
                                        None => break Error::StreamingListIncomplete,
                                        Some(Err(io)) => break Error::WatchStream(io),
                                        Some(Ok(line)) => line,
                                    };
                                    match parse_line(&line) {
                                        Ok(None) => {}
                                        Ok(Some(WatchLine::Object(Change::Deleted, _))) => {
                                            break Error::UnexpectedInitialEvent("DELETED");
                                        }
                                        Ok(Some(WatchLine::Object(_, value))) => {
                                            session.events += 1;
                                            match decoder.object(value, "watch object") {
                                                Ok(object) => yield Ok(Event::Listed(object)),
                                                Err(error) => { report(&error); yield Err(error); }
                                            }
                                        }
                                        Ok(Some(WatchLine::Bookmark { resource_version, initial_events_end })) => {
                                            session.events += 1;
                                            if initial_events_end {
                                                last_rv = resource_version.clone();
                                                rv_unavailable = false;
                                                carried = Some(session);
                                                fall_back = false;
                                                next = Next::Watch;
                                                yield Ok(Event::ListDone { resource_version });
                                                break Error::StreamingListIncomplete;
                                            }
                                        }
                                        Ok(Some(WatchLine::Error { code, reason, message })) => {
                                            break Error::WatchEvent { code, reason, message };
                                        }
                                        Err(error) if ends_watch(&error) => break error,
                                        Err(error) => { report(&error); yield Err(error); }
                                    }
                                };
                                if fall_back {
                                    report(&failure);
                                    if is_unavailable_resource_version(&failure) && !rv_unavailable {
                                        rv_unavailable = true;
                                        fall_back = false;
                                        next = Next::List;
                                    } else if matches!(failure, Error::WatchEvent { code: 429, .. }) {
                                        fall_back = false;
                                        next = Next::BackoffThenList;
                                    }
                                    yield Err(failure);
                                }
                            }
                        }
                        if !fall_back {
                            continue;
                        }
                    }

                    let list_rv = if rv_unavailable {
                        String::new()
                    } else if last_rv.is_empty() {
                        "0".to_owned()
                    } else {
                        last_rv.clone()
                    };
                    let limit = policy.limit_for(&list_rv);
                    let mut pager = Pager::new(list_rv, limit);
                    next = loop {
                        match pager.next_page(&target, &mut decoder).await {
                            PageOutcome::Page { fresh, items, done } => {
                                if fresh {
                                    yield Ok(Event::ListStart);
                                }
                                for item in items {
                                    match item {
                                        Ok(object) => yield Ok(Event::Listed(object)),
                                        Err(error) => { report(&error); yield Err(error); }
                                    }
                                }
                                if let Some(resource_version) = done {
                                    if pager.requested_resource_version() == "0" && pager.paginated() {
                                        policy.paginated_at_rv0 = true;
                                    }
                                    rv_unavailable = false;
                                    last_rv = resource_version.clone();
                                    yield Ok(Event::ListDone { resource_version });
                                    break Next::Watch;
                                }
                            }
                            PageOutcome::Retry(error) => { report(&error); yield Err(error); }
                            PageOutcome::Failed(error) => {
                                rv_unavailable |= pager.resource_version_unavailable();
                                report(&error);
                                yield Err(error);
                                break Next::BackoffThenList;
                            }
                        }
                    };
                }

                Next::Watch => {
                    let mut session = match carried.take() {
                        Some(session) => session,
                        None => {
                            let query = WatchQuery {
                                resource_version: last_rv.clone(),
                                timeout: Duration::from_secs(config.draw_watch_timeout().into()),
                                send_initial_events: false,
                            };
                            match target.watch(&query).await {
                                Ok(lines) => Session::new(lines),
                                Err(error) => {
                                    report(&error);
                                    next = after_watch_start_error(&error);
                                    yield Err(error);
                                    continue;
                                }
                            }
                        }
                    };
                    next = loop {
                        let line = match session.lines.next().await {
                            None => match session.after_end() {
                                Ok(next) => break next,
                                Err(error) => { report(&error); yield Err(error); break Next::BackoffThenList; }
                            },
                            Some(Err(io)) => {
                                let error = Error::WatchStream(io);
                                report(&error);
                                yield Err(error);
                                match session.after_end() {
                                    Ok(next) => break next,
                                    Err(error) => { report(&error); yield Err(error); break Next::BackoffThenList; }
                                }
                            }
                            Some(Ok(line)) => line,
                        };
                        match parse_line(&line) {
                            Ok(None) => {}
                            Ok(Some(WatchLine::Object(change, value))) => {
                                session.events += 1;
                                match decoder.object(value, "watch object") {
                                    Ok(object) => {
                                        if let Some(rv) = object.meta().resource_version.as_ref() {
                                            last_rv.clone_from(rv);
                                        }
                                        yield Ok(match change {
                                            Change::Added => Event::Added(object),
                                            Change::Modified => Event::Modified(object),
                                            Change::Deleted => Event::Deleted(object),
                                        });
                                    }
                                    Err(error) => { report(&error); yield Err(error); }
                                }
                            }
                            Ok(Some(WatchLine::Bookmark { resource_version, .. })) => {
                                session.events += 1;
                                last_rv.clone_from(&resource_version);
                                yield Ok(Event::Bookmark { resource_version });
                            }
                            Ok(Some(WatchLine::Error { code, reason, message })) => {
                                let error = Error::WatchEvent { code, reason, message };
                                report(&error);
                                yield Err(error);
                                break if code == 429 { Next::BackoffThenWatch } else { Next::BackoffThenList };
                            }
                            Err(error) if ends_watch(&error) => {
                                report(&error);
                                yield Err(error);
                                break Next::BackoffThenList;
                            }
                            Err(error) => {
                                session.events += 1;
                                report(&error);
                                yield Err(error);
                            }
                        }
                    };
                }
            }
        }
    }
}
