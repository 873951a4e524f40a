//! Feeding the FIFO from the source: the producer half of the informer,
//! the [`Handoff`] between it and the writer, and [`together`], which
//! drives both on one task.
//!
//! This side only ever touches the FIFO (and the error reporter); the store
//! and the subscribers belong to the writer.

use std::{
    panic::AssertUnwindSafe,
    sync::atomic::{AtomicBool, Ordering},
    task::Poll,
};

use futures::{FutureExt, Stream, StreamExt};
use kube::Resource;
use tokio::sync::Notify;

use super::{
    error::{Callback, Error},
    report::ErrorReporter,
    sync_progress::SyncProgress,
};
use crate::{fifo::DeltaFifo, panic::panic_message, source::Event};

/// The most deltas the FIFO holds before the pump stops reading the source
/// until the writer has caught up (L10). One event adds at most one delta,
/// except a relist's end, which adds one tombstone per vanished key.
pub(crate) const PUMP_HIGH_WATER: usize = 1024;

/// What the pump and the writer tell each other; each owns everything
/// else it works with.
///
/// From the pump: an event was fed (`fed`, so the writer notices a FIFO
/// that became synced with nothing to pop, such as an empty initial list),
/// a relist completed (`relisted`, for the resync check timer, L3), the
/// source ended (the FIFO is closed, then `fed`). From the writer (L10,
/// back-pressure): deltas were popped, or it waits (or not) for a full
/// [`Lag::Bounded`](crate::dispatch::Lag::Bounded) subscriber. The pump
/// reads the source only while the writer is not waiting and the FIFO holds
/// fewer than [`PUMP_HIGH_WATER`] deltas, so a subscriber that stops reading
/// stops the source being read, and the FIFO stays bounded.
#[derive(Debug, Default)]
pub(crate) struct Handoff {
    fed: AtomicBool,
    relisted: AtomicBool,
    writer_waiting: AtomicBool,
    room: Notify,
}

impl Handoff {
    /// The writer is about to wait (or not) for subscribers to make room.
    pub(crate) fn writer_waiting(&self, waiting: bool) {
        self.writer_waiting.store(waiting, Ordering::Relaxed);
        if !waiting {
            self.room.notify_one();
        }
    }

    /// The writer took deltas out of the FIFO.
    pub(crate) fn popped(&self) {
        self.room.notify_one();
    }

    /// Whether a relist completed since the writer last asked.
    pub(crate) fn take_relisted(&self) -> bool {
        self.relisted.swap(false, Ordering::Relaxed)
    }

    /// Resolves once the pump fed something or the source ended.
    ///
    /// This registers no waker, and the pump wakes no one: the writer
    /// waits here only inside [`together`], which polls it again whenever
    /// the pump has fed.
    pub(crate) fn progress(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|_| {
            if self.fed.swap(false, Ordering::Relaxed) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    /// The pump fed an event, or closed the FIFO.
    fn feed_done(&self) {
        self.fed.store(true, Ordering::Relaxed);
    }

    fn open<K: Resource + Send + Sync + 'static>(&self, fifo: &DeltaFifo<K>) -> bool {
        !self.writer_waiting.load(Ordering::Relaxed) && fifo.pending_deltas() < PUMP_HIGH_WATER
    }

    /// Waits until the pump may read the next event.
    async fn wait_for_room<K: Resource + Send + Sync + 'static>(&self, fifo: &DeltaFifo<K>) {
        loop {
            if self.open(fifo) {
                return;
            }
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if self.open(fifo) {
                return;
            }
            room.await;
        }
    }
}

/// Runs the writer and the pump on the caller's task until both end (IR1), and
/// gives how the pump ended.
///
/// Each poll runs the writer, then the pump, then the writer again if the
/// pump fed something, so what arrived is written in the poll that read
/// it. The pump's signal to the writer is a flag rather than a wake: in one
/// task a wake is the task waking itself, which tokio's multi-threaded
/// runtime treats as a yield, queueing the task behind the others and
/// waking an idle worker to take it. For a watch that delivers one event
/// per read, as a live API server does, that was a futex or eventfd write,
/// a second poll and often a move to the other core for every event.
pub(crate) async fn together<W, S>(writer: W, source: S, handoff: &Handoff) -> SourceEnd
where
    W: Future<Output = ()>,
    S: Future<Output = SourceEnd>,
{
    let mut writer = std::pin::pin!(writer);
    let mut source = std::pin::pin!(source);
    let mut written = false;
    let mut end = None;
    std::future::poll_fn(|cx| {
        if !written {
            written = writer.as_mut().poll(cx).is_ready();
        }
        if end.is_none() {
            if let Poll::Ready(ended) = source.as_mut().poll(cx) {
                end = Some(ended);
            }
            if !written && handoff.fed.load(Ordering::Relaxed) {
                written = writer.as_mut().poll(cx).is_ready();
            }
        }
        match end.take() {
            Some(ended) if written => Poll::Ready(ended),
            ended => {
                end = ended;
                Poll::Pending
            }
        }
    })
    .await
}

/// How the pump ended.
#[derive(Debug)]
pub(crate) enum SourceEnd {
    /// The source ended.
    Ended,
    /// A stop was asked for; the source was left unread.
    Stopped,
    /// The source panicked, with this message; it cannot be polled again.
    Panicked(String),
}

/// Moves every source event into `fifo` until the source ends, then closes
/// the FIFO so the writer drains what is queued and ends; or until `stop`
/// resolves, and then reads nothing more and leaves the FIFO as it is (the
/// writer stops at the end of its batch, L12).
///
/// Source errors and objects the FIFO refuses go to `reporter`; the source is
/// expected to retry by itself, so an error never ends the pump. Source
/// errors and the start of each relist also go to `progress`, for sync
/// waiters (I7, I8).
pub(crate) async fn pump<K, S>(
    events: S,
    fifo: &DeltaFifo<K>,
    reporter: &ErrorReporter,
    progress: &SyncProgress,
    handoff: &Handoff,
    stop: impl Future<Output = ()>,
) -> SourceEnd
where
    K: Resource + Send + Sync + 'static,
    S: Stream<Item = Result<Event<K>, Error>>,
{
    let end = tokio::select! {
        biased;
        () = stop => SourceEnd::Stopped,
        end = feed_all(events, fifo, reporter, progress, handoff) => end,
    };
    if !matches!(end, SourceEnd::Stopped) {
        fifo.close();
    }
    // Either way the writer looks again: at a closed FIFO to drain, or at
    // the stop.
    handoff.feed_done();
    end
}

async fn feed_all<K, S>(
    events: S,
    fifo: &DeltaFifo<K>,
    reporter: &ErrorReporter,
    progress: &SyncProgress,
    handoff: &Handoff,
) -> SourceEnd
where
    K: Resource + Send + Sync + 'static,
    S: Stream<Item = Result<Event<K>, Error>>,
{
    let mut events = std::pin::pin!(events);
    let mut listed = 0usize;
    loop {
        handoff.wait_for_room(fifo).await;
        // L9: the stream is user code when the informer was built from one.
        let item = match AssertUnwindSafe(events.next()).catch_unwind().await {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(payload) => {
                let message = panic_message(payload);
                reporter.report(Error::Panicked {
                    callback: Callback::EventStream,
                    message: message.clone(),
                });
                return SourceEnd::Panicked(message);
            }
        };
        match item {
            Ok(event) => {
                let list_done = matches!(event, Event::ListDone { .. });
                match feed(fifo, event, &mut listed, progress) {
                    Ok(()) if list_done => handoff.relisted.store(true, Ordering::Relaxed),
                    Ok(()) => {}
                    Err(error) => reporter.report(Error::from_fifo(error)),
                }
            }
            Err(error) => {
                progress.failed(&error);
                reporter.report(error);
            }
        }
        handoff.feed_done();
        // An always-ready source (an in-memory stream) must still let the
        // writer, which shares this task, make progress.
        tokio::task::coop::consume_budget().await;
    }
    tracing::debug!("source ended");
    SourceEnd::Ended
}

/// One source event as FIFO calls (F13 for relists; bookmarks change nothing
/// here). The start of a relist also tells `progress` that a list was
/// answered.
fn feed<K>(
    fifo: &DeltaFifo<K>,
    event: Event<K>,
    listed: &mut usize,
    progress: &SyncProgress,
) -> Result<(), crate::store::Error>
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
            progress.list_answered();
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
