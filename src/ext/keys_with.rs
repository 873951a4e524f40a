use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll},
};

use futures::{
    Stream, StreamExt,
    stream::{Fuse, FusedStream},
};
use pin_project::pin_project;

use crate::{
    key::{Error, ObjectKey},
    notification::Notification,
};

/// Stream for the [`keys_with`](super::NotificationStreamExt::keys_with)
/// method.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct KeysWith<S, F> {
    // Fused, so the adapter is a `FusedStream` whatever `S` is.
    #[pin]
    stream: Fuse<S>,
    key_fn: F,
}

impl<S: Stream, F> KeysWith<S, F> {
    pub(super) fn new(stream: S, key_fn: F) -> Self {
        Self {
            stream: stream.fuse(),
            key_fn,
        }
    }
}

impl<K, S, F> Stream for KeysWith<S, F>
where
    S: Stream<Item = Notification<K>>,
    F: FnMut(&K) -> Result<ObjectKey, Error>,
{
    type Item = Result<ObjectKey, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let key_fn = this.key_fn;
        this.stream
            .poll_next(cx)
            .map(|n| n.map(|n| key_fn(&**n.object())))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.size_hint()
    }
}

impl<K, S, F> FusedStream for KeysWith<S, F>
where
    S: Stream<Item = Notification<K>>,
    F: FnMut(&K) -> Result<ObjectKey, Error>,
{
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}

impl<S: fmt::Debug, F> fmt::Debug for KeysWith<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeysWith")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}
