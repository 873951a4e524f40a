//! The watch phase (R3, R4, R6, R7, R10): events from the last
//! resourceVersion until the watch ends, breaks, goes quiet or reports an
//! error; then what the rules say comes next.

use futures::Stream;

use super::{
    failure::{after_watch_start_error, ends_watch},
    phase::{Next, State, Step, Steps},
    session::{Received, idle_error, open_watch},
};
use crate::source::{
    Watchable,
    error::Error,
    event::Event,
    watch::{Change, WatchLine},
};

/// One watch, from the session a streaming list left open or a new one.
pub(super) fn watch<T: Watchable>(state: &mut State<T>) -> Steps<'_, T> {
    Box::pin(steps(state))
}

fn steps<T: Watchable>(state: &mut State<T>) -> impl Stream<Item = Step<T>> + Send + '_ {
    async_stream::stream! {
        let next = 'watch: {
            let mut session = match state.carried.take() {
                Some(session) => session,
                None => {
                    let query = state.watch_query(state.last_rv.clone(), false);
                    match open_watch(&state.target, &query).await {
                        Ok(session) => session,
                        Err(error) => {
                            // R10: a start that hangs is retried at once.
                            let next = match &error {
                                Error::WatchIdle { .. } => Next::Watch,
                                other => after_watch_start_error(other),
                            };
                            yield Step::Emit(Err(error));
                            break 'watch next;
                        }
                    }
                }
            };
            loop {
                let line = match session.next(&state.decoder).await {
                    Received::Line(line) => line,
                    // R3: a normal end re-watches at once, unless the
                    // watch died young and empty.
                    Received::Ended => match session.check_lifetime() {
                        Ok(()) => break 'watch Next::Watch,
                        Err(error) => {
                            yield Step::Emit(Err(error));
                            break 'watch Next::BackoffThenRelist;
                        }
                    },
                    Received::Broke(io) => {
                        yield Step::Emit(Err(Error::WatchStream(io)));
                        match session.check_lifetime() {
                            Ok(()) => break 'watch Next::Watch,
                            Err(error) => {
                                yield Step::Emit(Err(error));
                                break 'watch Next::BackoffThenRelist;
                            }
                        }
                    }
                    // R10: silence past the timeout and its margin means a
                    // dead connection; re-watch from the last resourceVersion.
                    Received::Idle(idle) => {
                        yield Step::Emit(Err(idle_error(&state.target, idle)));
                        break 'watch Next::Watch;
                    }
                };
                match line {
                    Ok(WatchLine::Object(change, object)) => {
                        session.events += 1;
                        if let Some(rv) = object.meta().resource_version.as_ref() {
                            state.last_rv.clone_from(rv);
                        }
                        yield Step::Emit(Ok(match change {
                            Change::Added => Event::Added(object),
                            Change::Modified => Event::Modified(object),
                            Change::Deleted => Event::Deleted(object),
                        }));
                    }
                    // R6: bookmarks move the resourceVersion.
                    Ok(WatchLine::Bookmark { resource_version, .. }) => {
                        session.events += 1;
                        state.last_rv.clone_from(&resource_version);
                        yield Step::Emit(Ok(Event::Bookmark { resource_version }));
                    }
                    // R4: an ERROR event ends the watch; 429 re-watches
                    // after a backoff, the rest relists after one.
                    Ok(WatchLine::Error { code, reason, message }) => {
                        yield Step::Emit(Err(Error::WatchEvent {
                            resource: state.target.name().to_owned(),
                            code,
                            reason,
                            message,
                        }));
                        break 'watch if code == 429 {
                            Next::BackoffThenWatch
                        } else {
                            Next::BackoffThenRelist
                        };
                    }
                    // A line that is not JSON may have carried a lost event.
                    Err(error) if ends_watch(&error) => {
                        yield Step::Emit(Err(error));
                        break 'watch Next::BackoffThenRelist;
                    }
                    // R7: a bad event is reported and skipped.
                    Err(error) => {
                        session.events += 1;
                        yield Step::Emit(Err(error));
                    }
                }
            }
        };
        yield Step::Then(next);
    }
}
