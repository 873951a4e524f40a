use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use pin_project::pin_project;

use crate::notification::Notification;

/// Stream for the [`objects`](super::NotificationStreamExt::objects) method.
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct Objects<S> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
}

impl<S: Stream> Objects<S> {
    pub(super) fn new(stream: S) -> Self {
        Self {
            stream: stream.fuse(),
        }
    }
}

fn newest<K>(n: Notification<K>) -> Arc<K> {
    match n {
        Notification::Added { object, .. } | Notification::Deleted { object, .. } => object,
        Notification::Updated { new, .. } => new,
    }
}

impl<K, S: Stream<Item = Notification<K>>> Stream for Objects<S> {
    type Item = Arc<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project().stream.poll_next(cx).map(|n| n.map(newest))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.size_hint()
    }
}

impl<K, S: Stream<Item = Notification<K>>> FusedStream for Objects<S> {
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}
