//! Fan-out of runtime errors: every error the informer meets while running
//! reaches every [`Informer::errors`](super::Informer::errors) stream, the
//! builder's callback and the error counter (R9), and is logged once (ER2).

use std::{
    any::Any,
    future::Future,
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

use super::error::{Callback, Chain, Error};
use crate::{
    dispatch::{Ended, Life},
    panic,
};

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

    /// Counts, logs (once, at WARN, inside the caller's span: the informer's
    /// run span) and delivers one error. Listeners whose stream was dropped
    /// are forgotten here.
    ///
    /// L9: a panicking `on_error` callback does not unwind into the
    /// informer: its panic is counted, logged and delivered to the error
    /// streams like any other error (not to the callback again).
    pub(crate) fn report(&self, error: Error) {
        self.deliver(&error);
        if let Some(callback) = &self.callback
            && let Err(message) = panic::catch(|| callback(&error))
        {
            self.deliver(&Error::Panicked {
                callback: Callback::OnError,
                message,
            });
        }
    }

    fn deliver(&self, error: &Error) {
        self.count.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %Chain(error), "informer error");
        if let Some(listeners) = &mut *self.listeners.lock() {
            listeners.retain(|listener| listener.send(error.clone()).is_ok());
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn listen(
        &self,
        keep_alive: Arc<dyn Any + Send + Sync>,
        life: Arc<Life>,
    ) -> ErrorStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Some(listeners) = &mut *self.listeners.lock() {
            listeners.push(sender);
        }
        ErrorStream {
            receiver,
            _keep_alive: keep_alive,
            end: Some(Box::pin(life.ended())),
        }
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
#[must_use = "streams do nothing unless polled"]
pub(crate) struct ErrorStream {
    receiver: mpsc::UnboundedReceiver<Error>,
    _keep_alive: Arc<dyn Any + Send + Sync>,
    /// The informer's end: a running informer closes the stream itself,
    /// one that ended without running (L7) leaves it to this; `None` once
    /// seen.
    end: Option<Pin<Box<Ended>>>,
}

impl std::fmt::Debug for ErrorStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorStream")
            .field("queued", &self.receiver.len())
            .finish_non_exhaustive()
    }
}

impl Stream for ErrorStream {
    type Item = Error;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Error>> {
        loop {
            if let Poll::Ready(item) = self.receiver.poll_recv(cx) {
                return Poll::Ready(item);
            }
            let Some(end) = &mut self.end else {
                return Poll::Pending;
            };
            if end.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Ended: what is queued is the last of it.
            self.end = None;
            self.receiver.close();
        }
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
