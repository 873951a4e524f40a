//! Feeding the FIFO from the source: the producer half of the informer.
//!
//! This side only ever touches the FIFO (and the error reporter); the store
//! and the subscribers belong to the writer.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use futures::{Stream, StreamExt};
use kube::Resource;
use tokio::sync::Notify;

use super::{error::Error, report::ErrorReporter};
use crate::{fifo::DeltaFifo, source::Event};

/// Moves every source event into `fifo` until the source ends.
///
/// Source errors and objects the FIFO refuses go to `reporter`; the source is
/// expected to retry by itself, so an error never ends the pump. `progress`
/// is notified after each event so the writer can notice a FIFO that became
/// synced without anything to pop (an empty initial list). `relisted` is
/// set after each complete relist, for the writer to restart its resync
/// check timer.
pub(crate) async fn pump<K, S>(
    events: S,
    fifo: &DeltaFifo<K>,
    reporter: &ErrorReporter,
    progress: &Notify,
    relisted: &AtomicBool,
) where
    K: Resource + Send + Sync + 'static,
    S: Stream<Item = Result<Event<K>, Error>>,
{
    let mut events = std::pin::pin!(events);
    let mut listed = 0usize;
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => {
                let list_done = matches!(event, Event::ListDone { .. });
                match feed(fifo, event, &mut listed) {
                    Ok(()) if list_done => relisted.store(true, Ordering::Relaxed),
                    Ok(()) => {}
                    Err(error) => reporter.report(Error::Queue(Arc::new(error))),
                }
            }
            Err(error) => reporter.report(error),
        }
        progress.notify_one();
        // An always-ready source (an in-memory stream) must still let the
        // writer, which shares this task, make progress.
        tokio::task::coop::consume_budget().await;
    }
    tracing::debug!("source ended");
}

/// One source event as FIFO calls (F13 for relists; bookmarks change nothing
/// here).
fn feed<K>(
    fifo: &DeltaFifo<K>,
    event: Event<K>,
    listed: &mut usize,
) -> Result<(), crate::fifo::Error>
where
    K: Resource + Send + Sync + 'static,
{
    match event {
        Event::Added(object) => fifo.add(object),
        Event::Modified(object) => fifo.update(object),
        Event::Deleted(object) => fifo.delete(object),
        Event::Bookmark { .. } => Ok(()),
        Event::ListStart => {
            tracing::debug!("relist started");
            *listed = 0;
            fifo.list_start();
            Ok(())
        }
        Event::Listed(object) => {
            *listed += 1;
            fifo.listed(object)
        }
        Event::ListDone { resource_version } => {
            tracing::info!(objects = *listed, %resource_version, "relist done");
            fifo.list_done(&resource_version)
        }
    }
}
