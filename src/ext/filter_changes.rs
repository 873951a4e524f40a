use std::{
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use pin_project::pin_project;

use super::changed::ChangeFilter;
use crate::notification::Notification;

/// Stream for the [`filter_changes`](super::NotificationStreamExt::filter_changes)
/// method.
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct FilterChanges<S, P> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
    filter: P,
}

impl<S: Stream, P> FilterChanges<S, P> {
    pub(super) fn new(stream: S, filter: P) -> Self {
        Self {
            stream: stream.fuse(),
            filter,
        }
    }
}

/// P1 and P2: only a watched update is judged; additions, deletions and
/// resyncs always pass.
fn passes<K, P: ChangeFilter<K>>(filter: &P, n: &Notification<K>) -> bool {
    match n {
        Notification::Updated {
            old,
            new,
            resync: false,
        } => filter.passes(old, new),
        Notification::Updated { resync: true, .. }
        | Notification::Added { .. }
        | Notification::Deleted { .. } => true,
    }
}

impl<K, S, P> Stream for FilterChanges<S, P>
where
    S: Stream<Item = Notification<K>>,
    P: ChangeFilter<K>,
{
    type Item = Notification<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            match ready!(this.stream.as_mut().poll_next(cx)) {
                Some(n) if !passes(this.filter, &n) => continue,
                other => return Poll::Ready(other),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.stream.size_hint().1)
    }
}

impl<K, S, P> FusedStream for FilterChanges<S, P>
where
    S: Stream<Item = Notification<K>>,
    P: ChangeFilter<K>,
{
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}
