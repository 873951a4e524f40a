//! The streaming list phase (R8): one watch with `sendInitialEvents=true`
//! whose first events are the state, ended by the initial-events-end
//! bookmark; that same watch then goes on as the watch phase. When it is
//! refused or fails before the bookmark, this relist falls back to a
//! paginated list.

use futures::Stream;

use super::{
    failure::{after_watch_start_error, ends_watch, is_unavailable_resource_version},
    phase::{Next, State, Step, Steps},
    session::{Received, idle_error, open_watch},
};
use crate::source::{
    Watchable,
    error::Error,
    event::Event,
    watch::{Change, WatchLine},
};

/// One streaming relist.
pub(super) fn list<T: Watchable>(state: &mut State<T>) -> Steps<'_, T> {
    Box::pin(steps(state))
}

fn steps<T: Watchable>(state: &mut State<T>) -> impl Stream<Item = Step<T>> + Send + '_ {
    async_stream::stream! {
        let next = 'list: {
            let resource_version = if state.rv_unavailable {
                String::new()
            } else {
                state.last_rv.clone()
            };
            let query = state.watch_query(resource_version, true);
            let mut session = match open_watch(&state.target, &query).await {
                Ok(session) => session,
                Err(error) => {
                    let next = after_failure(state, &error);
                    yield Step::Emit(Err(error));
                    break 'list next;
                }
            };
            tracing::debug!(resource_version = %query.resource_version, "relist started");
            yield Step::Emit(Ok(Event::ListStart));
            let mut objects = 0usize;
            let failure = loop {
                let line = match session.next(&state.decoder).await {
                    Received::Line(line) => line,
                    Received::Ended => break Error::StreamingListIncomplete,
                    Received::Broke(io) => break Error::WatchStream(io),
                    Received::Idle(idle) => break idle_error(&state.target, idle),
                };
                match line {
                    Ok(WatchLine::Object(Change::Deleted, _)) => {
                        break Error::UnexpectedInitialEvent("DELETED");
                    }
                    Ok(WatchLine::Object(_, object)) => {
                        session.events += 1;
                        objects += 1;
                        yield Step::Emit(Ok(Event::Listed(object)));
                    }
                    Ok(WatchLine::Bookmark { resource_version, initial_events_end }) => {
                        session.events += 1;
                        if initial_events_end {
                            state.last_rv.clone_from(&resource_version);
                            state.rv_unavailable = false;
                            state.carried = Some(session);
                            tracing::debug!(%resource_version, objects, "relist done");
                            yield Step::Emit(Ok(Event::ListDone { resource_version }));
                            break 'list Next::Watch;
                        }
                    }
                    Ok(WatchLine::Error { code, reason, message }) => {
                        break Error::WatchEvent {
                            resource: state.target.name().to_owned(),
                            code,
                            reason,
                            message,
                        };
                    }
                    Err(error) if ends_watch(&error) => break error,
                    // R7: a bad object is reported and skipped.
                    Err(error) => yield Step::Emit(Err(error)),
                }
            };
            let next = after_failure(state, &failure);
            yield Step::Emit(Err(failure));
            next
        };
        yield Step::Then(next);
    }
}

/// Where a failed streaming list goes: a consistent streaming list at once
/// when its resourceVersion was unavailable (once, R1); a relist after a
/// backoff when the server is busy (429, refused connection); otherwise a
/// paginated list at once.
fn after_failure<T>(state: &mut State<T>, error: &Error) -> Next {
    if is_unavailable_resource_version(error) && !state.rv_unavailable {
        state.rv_unavailable = true;
        Next::Relist
    } else if is_busy(error) {
        Next::BackoffThenRelist
    } else {
        Next::PagedList
    }
}

/// 429 (on the start or as an `ERROR` event) or a refused connection.
fn is_busy(error: &Error) -> bool {
    match error {
        Error::WatchEvent { code, .. } => *code == 429,
        Error::WatchStart { .. } => after_watch_start_error(error) == Next::BackoffThenWatch,
        _ => false,
    }
}
