//! Watch lag (FT1): a stream that hands on each item of another a fixed
//! time after that one produced it.
//!
//! A task of its own drains the inner stream as soon as items are ready and
//! stamps each with its due time, so an item falls due `lag` after the
//! server produced it, not after the client got round to reading: two
//! events a second apart under a 5 s lag arrive 5 s after each was written,
//! a second apart, in order. The task ends when the client hangs up.

use std::{future::poll_fn, time::Duration};

use futures_core::Stream;
use tokio::{sync::mpsc, time::Instant};

/// `inner` with every item (and its end) delivered `lag` late, on tokio's clock.
pub(crate) fn lagged<S>(inner: S, lag: Duration) -> impl Stream<Item = S::Item> + Send + 'static
where
    S: Stream<Item: Send + 'static> + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut inner = Box::pin(inner);
        loop {
            let item = tokio::select! {
                // The client hung up: stop reading (and drop) the watch.
                biased;
                _ = tx.closed() => return,
                item = poll_fn(|cx| inner.as_mut().poll_next(cx)) => item,
            };
            let end = item.is_none();
            if tx.send((Instant::now() + lag, item)).is_err() || end {
                return;
            }
        }
    });
    async_stream::stream! {
        while let Some((due, item)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            match item {
                Some(item) => yield item,
                None => return,
            }
        }
    }
}
