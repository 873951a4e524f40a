//! [`DeltaFifo::stream`]: the FIFO's consumer half as a `Stream`.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::FusedStream;
use kube::Resource;
use tokio::sync::futures::OwnedNotified;

use super::consume::DeltaFifo;
use crate::delta::Deltas;

/// Stream for the [`DeltaFifo::stream`] method.
#[must_use = "streams do nothing unless polled"]
pub(crate) struct DeltaStream<K> {
    fifo: DeltaFifo<K>,
    /// Registered only while the queue is empty: a registration kept across
    /// yields would swallow wakeups meant for other consumers.
    waiter: Option<Pin<Box<OwnedNotified>>>,
    done: bool,
}

impl<K> fmt::Debug for DeltaStream<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaStream")
            .field("waiting", &self.waiter.is_some())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// A stream of popped [`Deltas`], oldest key first, that ends once the
    /// FIFO is closed and empty, and stays ended.
    ///
    /// Several streams and `pop` calls may consume the same FIFO; each item
    /// goes to exactly one of them.
    ///
    /// # Cancel safety
    ///
    /// An item leaves the queue only in the poll that yields it, so dropping
    /// the stream (or a `next()` future on it) between polls loses nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::fifo::{DeltaFifo, FifoOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::store::Error> {
    /// let fifo = DeltaFifo::new(FifoOptions::default());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(cm)?;
    /// fifo.close();
    /// let keys: Vec<String> = fifo.stream().map(|d| d.key().to_string()).collect().await;
    /// assert_eq!(keys, ["a"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stream(&self) -> impl FusedStream<Item = Deltas<K>> + Send + Sync + Unpin + 'static {
        DeltaStream::new(self.clone())
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaStream<K> {
    fn new(fifo: DeltaFifo<K>) -> Self {
        Self {
            fifo,
            waiter: None,
            done: false,
        }
    }
}

impl<K: Resource + Send + Sync + 'static> Stream for DeltaStream<K> {
    type Item = Deltas<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            match this.fifo.poll_queue() {
                Some(Ok(deltas)) => {
                    this.waiter = None;
                    return Poll::Ready(Some(deltas));
                }
                Some(Err(_closed)) => {
                    this.waiter = None;
                    this.done = true;
                    return Poll::Ready(None);
                }
                None => {}
            }
            match &mut this.waiter {
                None => {
                    let mut waiter = Box::pin(this.fifo.notify().clone().notified_owned());
                    // Register, then look at the queue once more (loop).
                    waiter.as_mut().enable();
                    this.waiter = Some(waiter);
                }
                Some(waiter) => match waiter.as_mut().poll(cx) {
                    Poll::Ready(()) => this.waiter = None,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> FusedStream for DeltaStream<K> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
