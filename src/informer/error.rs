//! What can go wrong while an informer runs, and what its handle refuses.

use std::{error::Error as StdError, fmt, sync::Arc};

use crate::{fifo, source, store};

/// Errors of the [`informer`](super) module and of the
/// [`InformerFactory`](crate::InformerFactory) that hands informers out.
///
/// Errors reported while running (source and queueing failures, panics in
/// user code) are delivered to [`Informer::errors`](super::Informer::errors)
/// and to the builder's [`on_error`](super::InformerBuilder::on_error)
/// callback; the informer keeps going after them unless the variant says
/// otherwise. The others are returned by the call that failed: a
/// subscription to a stopped informer, a second `run`, a factory request
/// that does not agree with the informer the factory holds. Cloning is
/// cheap: the cause is shared.
///
/// ER1: the cause stays reachable. A list/watch failure is
/// [`Error::Source`] with the concrete [`source::Error`] (match on it, or
/// find it with `downcast_ref` along [`std::error::Error::source`]); any
/// other stream's error is [`Error::Stream`]. No message repeats its cause:
/// print the whole chain with `{:#}` in anyhow, or walk `source()`, and each
/// cause appears once. [`Error::status_code`] gives the HTTP status of an
/// API error.
///
/// # Examples
///
/// ```
/// use std::error::Error as _;
/// use kube_informer::{informer::Error, source};
///
/// # fn report(error: &Error) {
/// match error {
///     Error::Source(cause) if cause.status_code() == Some(403) => {
///         eprintln!("no permission to list or watch: {cause}");
///     }
///     other => eprintln!("{other}"),
/// }
/// // The same cause, found along the chain:
/// let cause = error.source().and_then(|e| e.downcast_ref::<source::Error>());
/// # let _ = cause;
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The list/watch source of an informer built with
    /// [`Informer::builder`](super::Informer::builder) (or a stream yielding
    /// [`source::Error`]) failed; it retries by itself (R9).
    Source(Arc<source::Error>),
    /// The event stream of an informer built with
    /// [`Informer::builder_from_stream`](super::Informer::builder_from_stream)
    /// yielded an error of its own type; find it with `downcast_ref`. It is
    /// behind an `Arc` so every listener of
    /// [`Informer::errors`](super::Informer::errors) shares the one error.
    Stream(Arc<dyn StdError + Send + Sync + 'static>),
    /// An event from the source could not be queued (for example an object
    /// without a name, or a transform that failed); that one object was
    /// skipped.
    Queue(Arc<store::Error>),
    /// An object could not be stored (an index function panicked); the
    /// store kept the object's previous state and no notification was sent
    /// for that change.
    Store(Arc<store::Error>),
    /// User code panicked (L9). What happened next depends on `callback`:
    /// a key function, transform or indexer panic skips that one object
    /// (the store keeps what it held); an `on_error` panic loses nothing;
    /// an event-stream panic stops the informer after handing out what was
    /// queued, and every subscription ends with
    /// [`EndReason::Panicked`](crate::dispatch::EndReason::Panicked).
    Panicked {
        /// Which user code panicked.
        callback: Callback,
        /// The panic message.
        message: String,
    },
    /// `run` was called on an informer that is already running or has run.
    AlreadyRunning,
    /// The informer has stopped: it accepts no new subscriptions (L6).
    Stopped,
    /// The [`InformerFactory`](crate::InformerFactory) holds an informer
    /// with this sharing key, built with other options; the request was
    /// refused rather than ignored (see
    /// [the sharing key](crate::factory#the-sharing-key)).
    OptionsDiffer {
        /// The list/watch URL of the resource, with its selectors.
        resource: String,
        /// The options the existing informer was built with.
        existing: String,
        /// The options this request asked for.
        requested: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ER1: never the cause's text; `source()` gives it.
        match self {
            Error::Source(_) => f.write_str("list/watch failed"),
            Error::Stream(_) => f.write_str("the event stream failed"),
            Error::Queue(_) => f.write_str("could not queue an event"),
            Error::Store(_) => f.write_str("could not store an object"),
            Error::Panicked { callback, message } => write!(f, "{callback} panicked: {message}"),
            Error::AlreadyRunning => f.write_str("informer is already running or has run"),
            Error::Stopped => f.write_str("informer has stopped"),
            Error::OptionsDiffer {
                resource,
                existing,
                requested,
            } => write!(
                f,
                "an informer for {resource} exists with other options \
                 (existing: {existing}; requested: {requested})"
            ),
        }
    }
}

impl StdError for Error {
    /// The cause itself, not its `Arc`, so `downcast_ref` finds its type.
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Source(e) => Some(&**e),
            Error::Stream(e) => Some(&**e),
            Error::Queue(e) => Some(&**e),
            Error::Store(e) => Some(&**e),
            _ => None,
        }
    }
}

/// User code an informer runs, named in [`Error::Panicked`] (L9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Callback {
    /// The key function: the object is skipped and reported.
    KeyFunction,
    /// The transform: the object is skipped and reported.
    Transform,
    /// An index function: that change is not applied (the store keeps what
    /// it held for the key, no notification is sent) and it is reported.
    Indexer,
    /// The FIFO's known-objects view: the call it was made for is skipped.
    KnownObjects,
    /// The `on_error` callback: the error still reaches every
    /// [`Informer::errors`](super::Informer::errors) stream and the count,
    /// and so does this panic; the callback stays installed.
    OnError,
    /// The event stream itself: it cannot be polled again, so the informer
    /// hands out what was queued and stops.
    EventStream,
    /// Code the informer could not attribute; the informer stops.
    Informer,
}

impl std::fmt::Display for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::KeyFunction => f.write_str("the key function"),
            Self::Transform => f.write_str("the transform"),
            Self::Indexer => f.write_str("an index function"),
            Self::KnownObjects => f.write_str("the known-objects view"),
            Self::OnError => f.write_str("the on_error callback"),
            Self::EventStream => f.write_str("the event stream"),
            Self::Informer => f.write_str("the informer"),
        }
    }
}

/// The FIFO's user code as the informer names it. Exhaustive on purpose
/// (the crate may match its own `#[non_exhaustive]` enums in full): a new
/// [`fifo::UserCode`] must choose its [`Callback`] here rather than be
/// reported as another one.
fn callback_of(code: fifo::UserCode) -> Callback {
    match code {
        fifo::UserCode::KeyFunction => Callback::KeyFunction,
        fifo::UserCode::Transform => Callback::Transform,
        fifo::UserCode::KnownObjects => Callback::KnownObjects,
    }
}

impl Error {
    /// Whether this error was reported while running (a source or queueing
    /// failure, a panic) rather than returned by a refused call.
    pub fn is_runtime(&self) -> bool {
        matches!(
            self,
            Error::Source(_)
                | Error::Stream(_)
                | Error::Queue(_)
                | Error::Store(_)
                | Error::Panicked { .. }
        )
    }

    /// The HTTP status code of the API error behind this one, if there is
    /// one (e.g. 403 when the informer may not list or watch, 404 when the
    /// resource is not installed).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_informer::{informer::Error, source};
    ///
    /// let forbidden = source::Error::WatchEvent {
    ///     code: 403,
    ///     reason: "Forbidden".into(),
    ///     message: "pods is forbidden".into(),
    ///     resource: "pods".into(),
    /// };
    /// assert_eq!(Error::Source(Arc::new(forbidden)).status_code(), Some(403));
    /// assert_eq!(Error::Stopped.status_code(), None);
    /// ```
    pub fn status_code(&self) -> Option<u16> {
        self.api_answer().map(|(code, _)| code)
    }

    /// The status code and the server's message of the API error behind
    /// this one, from the first link of the chain that has them: a
    /// [`source::Error`] or a `kube::Error::Api`.
    pub(crate) fn api_answer(&self) -> Option<(u16, &str)> {
        let mut next: Option<&(dyn StdError + 'static)> = Some(self);
        while let Some(error) = next {
            if let Some(answer) = error
                .downcast_ref::<source::Error>()
                .and_then(source::Error::api_answer)
            {
                return Some(answer);
            }
            if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
                return Some((status.code, status.message.as_str()));
            }
            next = error.source();
        }
        None
    }

    /// Wraps an event source's error: a [`source::Error`] becomes
    /// [`Error::Source`], anything else [`Error::Stream`].
    pub(crate) fn from_source_error<E>(error: E) -> Self
    where
        E: StdError + Send + Sync + 'static,
    {
        let boxed: Box<dyn StdError + Send + Sync> = Box::new(error);
        match boxed.downcast::<source::Error>() {
            Ok(source) => Error::Source(Arc::new(*source)),
            Err(other) => Error::Stream(Arc::from(other)),
        }
    }

    /// A panic caught in FIFO code, or any other queueing failure.
    pub(crate) fn from_fifo(error: store::Error) -> Self {
        match error {
            store::Error::Panicked { callback, message } => Error::Panicked {
                callback: callback_of(callback),
                message,
            },
            other => Error::Queue(Arc::new(other)),
        }
    }
}

/// The whole chain of an error on one line, `outer: cause: root cause`: what
/// the informer logs, once per error.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn StdError + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}
