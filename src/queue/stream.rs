//! [`WorkQueue::stream`]: the queue as a `Stream` of guards.

use std::{
    fmt,
    hash::Hash,
    pin::Pin,
    task::{Context, Poll},
};

use futures::Stream;
use tokio_util::sync::ReusableBoxFuture;

use super::{WorkQueue, guard::WorkItem};

/// Stream for the [`stream`](WorkQueue::stream) method.
#[must_use = "streams do nothing unless polled"]
pub(crate) struct WorkStream<T: Hash + Eq + Clone + Send + 'static> {
    queue: WorkQueue<T>,
    next: ReusableBoxFuture<'static, Option<WorkItem<T>>>,
}

impl<T: Hash + Eq + Clone + Send + 'static> WorkQueue<T> {
    /// The queue as a [`Stream`] of [`WorkItem`]s, ending when
    /// [`next`](Self::next) would return `None`.
    ///
    /// Each item is a [`WorkItem`] guard, exactly as
    /// [`next`](Self::next) returns it; the stream ends when the queue is
    /// shutting down and nothing is queued (W9). Dropping the stream between
    /// polls loses nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use kube_informer::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add(1);
    /// queue.add(2);
    /// queue.shutdown();
    /// let items: Vec<i32> = queue.stream().map(|item| *item).collect().await;
    /// assert_eq!(items, [1, 2]);
    /// # }
    /// ```
    pub fn stream(&self) -> impl Stream<Item = WorkItem<T>> + Send + Unpin + 'static {
        WorkStream::new(self.clone())
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> WorkStream<T> {
    fn new(queue: WorkQueue<T>) -> Self {
        let next = ReusableBoxFuture::new(next_owned(queue.clone()));
        Self { queue, next }
    }
}

async fn next_owned<T: Hash + Eq + Clone + Send + 'static>(
    queue: WorkQueue<T>,
) -> Option<WorkItem<T>> {
    queue.next().await
}

impl<T: Hash + Eq + Clone + Send + 'static> Stream for WorkStream<T> {
    type Item = WorkItem<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WorkItem<T>>> {
        let item = std::task::ready!(self.next.poll(cx));
        let queue = self.queue.clone();
        self.next.set(next_owned(queue));
        Poll::Ready(item)
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> fmt::Debug for WorkStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkStream")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
