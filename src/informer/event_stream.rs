//! [`EventStream`]: the events an informer runs on.

use futures::stream::BoxStream;

use super::error::Error;
use crate::source::Event;

/// The events an informer consumes, errors already wrapped.
pub(crate) type EventStream<K> = BoxStream<'static, Result<Event<K>, Error>>;
