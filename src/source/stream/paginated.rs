//! The paginated list phase (R1, R2): `ListStart`, the objects page by
//! page, `ListDone`; then a watch from the list's resourceVersion, or a
//! relist after a backoff.

use futures::Stream;

use super::phase::{Next, State, Step, Steps};
use crate::source::{
    Watchable,
    config::ListSemantic,
    event::Event,
    list::{PageOutcome, Pager},
};

/// One paginated relist.
pub(super) fn list<T: Watchable>(state: &mut State<T>) -> Steps<'_, T> {
    Box::pin(steps(state))
}

fn steps<T: Watchable>(state: &mut State<T>) -> impl Stream<Item = Step<T>> + Send + '_ {
    async_stream::stream! {
        // R1: the first list reads from the cache ("0") or consistently
        // (""), later ones from the last resourceVersion seen, and after
        // that became unavailable, consistently until a list succeeds.
        let list_rv = if state.rv_unavailable {
            String::new()
        } else if state.last_rv.is_empty() {
            match state.config.list_semantic {
                ListSemantic::Any => "0".to_owned(),
                ListSemantic::MostRecent => String::new(),
            }
        } else {
            state.last_rv.clone()
        };
        let limit = state.policy.limit_for(&list_rv);
        tracing::debug!(resource_version = %list_rv, ?limit, "relist started");
        let mut pager = Pager::new(list_rv, limit);
        let mut objects = 0usize;
        let next = loop {
            state.metrics.list_request();
            match pager.next_page(&state.target, &mut state.decoder).await {
                PageOutcome::Page { fresh, items, done } => {
                    if fresh {
                        objects = 0;
                        yield Step::Emit(Ok(Event::ListStart));
                    }
                    for item in items {
                        objects += usize::from(item.is_ok());
                        yield Step::Emit(item.map(Event::Listed));
                    }
                    if let Some(resource_version) = done {
                        // R2: a first list that came back in pages means no
                        // watch cache; later lists page too.
                        if pager.requested_resource_version() == "0" && pager.paginated() {
                            state.policy.paginated_at_rv0 = true;
                        }
                        state.rv_unavailable = false;
                        state.last_rv.clone_from(&resource_version);
                        tracing::debug!(%resource_version, objects, "relist done");
                        yield Step::Emit(Ok(Event::ListDone { resource_version }));
                        break Next::Watch;
                    }
                }
                // An expired continue token or an unavailable
                // resourceVersion: the pager retries at once (R1, R2).
                PageOutcome::Retry(error) => yield Step::Emit(Err(error)),
                PageOutcome::Failed(error) => {
                    state.rv_unavailable |= pager.resource_version_unavailable();
                    yield Step::Emit(Err(error));
                    break Next::BackoffThenRelist;
                }
            }
        };
        yield Step::Then(next);
    }
}
