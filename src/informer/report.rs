//! Fan-out of runtime errors: every error the informer meets while running
//! reaches every [`Informer::errors`](super::Informer::errors) stream, the
//! builder's callback and the error counter (R9).

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
};

use futures::{Stream, stream::FusedStream};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::error::Error;

/// The callback given to [`InformerBuilder::on_error`](super::InformerBuilder::on_error).
pub(crate) type ErrorCallback = Arc<dyn Fn(&Error) + Send + Sync>;

/// Where runtime errors go. Shared by the informer's handles and its run loop.
pub(crate) struct ErrorReporter {
    count: AtomicU64,
    callback: Option<ErrorCallback>,
    /// `None` once closed: later listeners get a stream that has ended.
    listeners: Mutex<Option<Vec<mpsc::UnboundedSender<Error>>>>,
}

impl ErrorReporter {
    pub(crate) fn new(callback: Option<ErrorCallback>) -> Self {
        Self {
            count: AtomicU64::new(0),
            callback,
            listeners: Mutex::new(Some(Vec::new())),
        }
    }

    /// Counts, logs and delivers one error. Listeners whose stream was
    /// dropped are forgotten here.
    pub(crate) fn report(&self, error: Error) {
        self.count.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %error, "informer error");
        if let Some(callback) = &self.callback {
            callback(&error);
        }
        if let Some(listeners) = &mut *self.listeners.lock() {
            listeners.retain(|listener| listener.send(error.clone()).is_ok());
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn listen(&self) -> ErrorStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Some(listeners) = &mut *self.listeners.lock() {
            listeners.push(sender);
        }
        ErrorStream { receiver }
    }

    /// Ends every error stream once the informer has stopped.
    pub(crate) fn close(&self) {
        self.listeners.lock().take();
    }
}

impl std::fmt::Debug for ErrorReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorReporter")
            .field("count", &self.count())
            .field("listeners", &self.listeners.lock().as_ref().map(Vec::len))
            .finish_non_exhaustive()
    }
}

/// Stream for the [`Informer::errors`](super::Informer::errors) method: every
/// runtime error reported after it was created, until the informer stops.
///
/// Errors queue without bound until read; drop the stream if you stop
/// reading.
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct ErrorStream {
    receiver: mpsc::UnboundedReceiver<Error>,
}

impl Stream for ErrorStream {
    type Item = Error;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Error>> {
        self.receiver.poll_recv(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.receiver.len(), None)
    }
}

impl FusedStream for ErrorStream {
    fn is_terminated(&self) -> bool {
        self.receiver.is_closed() && self.receiver.is_empty()
    }
}
