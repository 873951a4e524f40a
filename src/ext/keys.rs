use std::{
    pin::Pin,
    task::{Context, Poll},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use kube::Resource;
use pin_project::pin_project;

use crate::{
    key::{Error, ObjectKey},
    notification::Notification,
};

/// Stream for the [`keys`](super::NotificationStreamExt::keys) method.
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct Keys<S> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
}

impl<S: Stream> Keys<S> {
    pub(super) fn new(stream: S) -> Self {
        Self {
            stream: stream.fuse(),
        }
    }
}

impl<K: Resource, S: Stream<Item = Notification<K>>> Stream for Keys<S> {
    type Item = Result<ObjectKey, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project()
            .stream
            .poll_next(cx)
            .map(|n| n.map(|n| ObjectKey::from_object(&**n.object())))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.size_hint()
    }
}

impl<K: Resource, S: Stream<Item = Notification<K>>> FusedStream for Keys<S> {
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}
