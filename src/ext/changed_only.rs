use std::{
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use kube::Resource;
use pin_project::pin_project;

use crate::notification::{Notification, same_resource_version};

/// Stream for the [`changed_only`](super::NotificationStreamExt::changed_only)
/// method.
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct ChangedOnly<S> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
}

impl<S: Stream> ChangedOnly<S> {
    pub(crate) fn new(stream: S) -> Self {
        Self {
            stream: stream.fuse(),
        }
    }
}

/// An update that [`same_resource_version`] calls a resync, whatever its
/// `resync` flag says: a stream built by hand may leave the flag unset.
fn unchanged<K: Resource>(n: &Notification<K>) -> bool {
    match n {
        Notification::Updated { old, new, .. } => same_resource_version(&**old, &**new),
        Notification::Added { .. } | Notification::Deleted { .. } => false,
    }
}

impl<K: Resource, S: Stream<Item = Notification<K>>> Stream for ChangedOnly<S> {
    type Item = Notification<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            match ready!(this.stream.as_mut().poll_next(cx)) {
                Some(n) if unchanged(&n) => continue,
                other => return Poll::Ready(other),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.stream.size_hint().1)
    }
}

impl<K: Resource, S: Stream<Item = Notification<K>>> FusedStream for ChangedOnly<S> {
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}
