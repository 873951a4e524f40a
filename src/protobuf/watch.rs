//! A protobuf watch stream: frames of a 4-byte big-endian length and a
//! `WatchEvent` message (no envelope) whose `type` is a string and whose
//! `object` is a `RawExtension` holding the event's object as a whole
//! body (`k8s\0` and its envelope): the object for ADDED, MODIFIED and
//! DELETED, an object with only `metadata.resourceVersion` (and perhaps the
//! `k8s.io/initial-events-end` annotation) for BOOKMARK, a `Status` for
//! ERROR. Rules PB7 (the events, in any pieces) and PB8 (bad streams).

use k8s_openapi::{Resource, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::core::Status;
use serde::de::DeserializeOwned;

use super::schema::Kind;
use super::wire::{self, Value};
use super::{Envelope, Error, de, decode_message, decode_status, lookup};

/// The most one frame may hold unless told otherwise: 16 MiB, client-go's
/// limit for one streamed object.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// The annotation a bookmark carries when it ends a watch's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Splits a watch stream into frames, whatever pieces its bytes arrive in.
///
/// [`push`](Self::push) each chunk as it comes, then take frames with
/// [`next_frame`](Self::next_frame) until it gives `None`; at the end of
/// the stream, [`finish`](Self::finish) says whether a frame was cut short.
///
/// ```
/// use kube_informer::unstable::protobuf::{Error, FrameSplitter};
///
/// let mut frames = FrameSplitter::new(1024);
/// frames.push(&[0, 0, 0]); // a length, in pieces
/// assert_eq!(frames.next_frame()?, None);
/// frames.push(&[2, b'h', b'i', 0]);
/// assert_eq!(frames.next_frame()?, Some(&b"hi"[..]));
/// assert_eq!(frames.next_frame()?, None);
/// assert!(frames.finish().is_err()); // a byte of the next length is left
///
/// frames.push(&[0, 0x10, 0, 0]); // 1 MiB, above this splitter's limit
/// assert!(matches!(frames.next_frame(), Err(Error::FrameTooLarge { .. })));
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug)]
pub struct FrameSplitter {
    buf: Vec<u8>,
    /// Where the next frame starts in `buf`.
    start: usize,
    max_frame: usize,
}

impl FrameSplitter {
    /// A splitter that refuses frames longer than `max_frame` bytes
    /// ([`DEFAULT_MAX_FRAME`] is client-go's limit).
    pub fn new(max_frame: usize) -> Self {
        FrameSplitter {
            buf: Vec::new(),
            start: 0,
            max_frame,
        }
    }

    /// Adds the next bytes of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame (without its length), or `None` until more
    /// bytes arrive. A length above the limit is an error, and the stream
    /// cannot be read past it.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, Error> {
        let rest = self.buf.get(self.start..).unwrap_or_default();
        let Some((length, body)) = rest.split_first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(*length);
        if len as usize > self.max_frame {
            return Err(Error::FrameTooLarge {
                len: u64::from(len),
                max: self.max_frame,
            });
        }
        let Some(frame) = body.get(..len as usize) else {
            return Ok(None);
        };
        self.start += 4 + len as usize;
        Ok(Some(frame))
    }

    /// At the end of the stream: an error if it stopped inside a frame.
    pub fn finish(&self) -> Result<(), Error> {
        if self.start < self.buf.len() {
            return Err(Error::Truncated("the watch stream ends inside a frame"));
        }
        Ok(())
    }
}

/// One watch event, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// An object was created (or is in the initial state).
    Added(K),
    /// An object changed.
    Modified(K),
    /// An object was deleted: its last state.
    Deleted(K),
    /// The collection reached `resource_version`.
    Bookmark {
        /// The bookmark's `metadata.resourceVersion`.
        resource_version: String,
        /// Whether it ends the initial events (the
        /// `k8s.io/initial-events-end: "true"` annotation).
        initial_events_end: bool,
    },
    /// The watch failed (e.g. 410 Expired: the resourceVersion is too old).
    Error(Box<Status>),
}

/// Decodes one frame of a protobuf watch stream of `K` (a `WatchEvent`
/// message, as [`FrameSplitter::next_frame`] gives it).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::unstable::protobuf::{decode_watch_event, Error, WatchEvent};
///
/// // WatchEvent { type: "BOOKMARK", object: { raw: `k8s\0` + Unknown {
/// //     typeMeta: { "v1", "ConfigMap" }, raw: { metadata: { resourceVersion: "9" } } } } }
/// let frame = b"\x0a\x08BOOKMARK\x12\x1e\x0a\x1ck8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x05\x0a\x03\x32\x019";
/// let event = decode_watch_event::<ConfigMap>(frame)?;
/// assert_eq!(
///     event,
///     WatchEvent::Bookmark { resource_version: "9".into(), initial_events_end: false }
/// );
/// # Ok::<(), Error>(())
/// ```
pub fn decode_watch_event<K>(frame: &[u8]) -> Result<WatchEvent<K>, Error>
where
    K: Resource + DeserializeOwned,
{
    let event = watch_event_of(frame, K::API_VERSION, K::KIND, |raw| {
        decode_message(raw, K::API_VERSION, K::KIND)
    })?;
    Ok(match event {
        WatchEvent::Added(object) => WatchEvent::Added(object?),
        WatchEvent::Modified(object) => WatchEvent::Modified(object?),
        WatchEvent::Deleted(object) => WatchEvent::Deleted(object?),
        WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        } => WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        },
        WatchEvent::Error(status) => WatchEvent::Error(status),
    })
}

/// One frame of a watch of `kind`, each object's message (no envelope)
/// decoded by `object`. The event's own errors (the frame, its type, a
/// bookmark, an ERROR's `Status`) are the outer error; an object's (its
/// envelope, its message) stay in the event, the frame around it whole.
pub(crate) fn watch_event_of<T>(
    frame: &[u8],
    api_version: &'static str,
    kind: &'static str,
    object: impl Fn(&[u8]) -> Result<T, Error>,
) -> Result<WatchEvent<Result<T, Error>>, Error> {
    #[derive(Clone, Copy)]
    enum Type {
        Added,
        Modified,
        Deleted,
        Bookmark,
        Error,
    }
    let [event_type, extension] = wire::scalar_fields::<2>(frame)?;
    let event_type = match bytes_of("WatchEvent", 1, event_type)?.unwrap_or_default() {
        b"ADDED" => Type::Added,
        b"MODIFIED" => Type::Modified,
        b"DELETED" => Type::Deleted,
        b"BOOKMARK" => Type::Bookmark,
        b"ERROR" => Type::Error,
        other => {
            return Err(Error::UnknownEventType(
                String::from_utf8_lossy(other).into_owned(),
            ));
        }
    };
    let extension =
        bytes_of("WatchEvent", 2, extension)?.ok_or(Error::Missing("the event's object"))?;
    let [raw] = wire::scalar_fields::<1>(extension)?;
    let body = bytes_of("RawExtension", 1, raw)?.ok_or(Error::Missing("the event's object"))?;

    let object = |body: &[u8]| -> Result<T, Error> {
        let envelope = Envelope::open(body)?;
        envelope.expect(api_version, kind, kind)?;
        object(envelope.raw)
    };
    Ok(match event_type {
        Type::Added => WatchEvent::Added(object(body)),
        Type::Modified => WatchEvent::Modified(object(body)),
        Type::Deleted => WatchEvent::Deleted(object(body)),
        Type::Bookmark => bookmark(body, api_version, kind)?,
        Type::Error => WatchEvent::Error(Box::new(decode_status(body)?)),
    })
}

/// A bookmark: only the object's metadata is read.
fn bookmark<T>(
    body: &[u8],
    api_version: &'static str,
    kind: &'static str,
) -> Result<WatchEvent<T>, Error> {
    let envelope = Envelope::open(body)?;
    envelope.expect(api_version, kind, kind)?;
    let message =
        lookup::kind(api_version, kind).ok_or(Error::UnknownKind { api_version, kind })?;
    let metadata = match message.field(1) {
        Some((_, field)) if field.name == "metadata" => match field.kind {
            Kind::Msg(i) => lookup::message(i),
            _ => return Err(Error::Missing("metadata in the kind's schema")),
        },
        _ => return Err(Error::Missing("metadata in the kind's schema")),
    };
    let [meta] = wire::scalar_fields::<1>(envelope.raw)?;
    let meta = bytes_of(message.name, 1, meta)?.unwrap_or_default();
    let meta: ObjectMeta = serde::Deserialize::deserialize(de::MessageDe::new(meta, metadata, 1)?)?;
    let resource_version = meta
        .resource_version
        .ok_or(Error::Missing("the bookmark's metadata.resourceVersion"))?;
    let initial_events_end = meta
        .annotations
        .is_some_and(|a| a.get(INITIAL_EVENTS_END).is_some_and(|v| v == "true"));
    Ok(WatchEvent::Bookmark {
        resource_version,
        initial_events_end,
    })
}

/// The bytes of a length-delimited field, if present.
fn bytes_of<'a>(
    message: &'static str,
    field: u32,
    value: Option<Value<'a>>,
) -> Result<Option<&'a [u8]>, Error> {
    match value {
        None => Ok(None),
        Some(Value::Len(b)) => Ok(Some(b)),
        Some(v) => Err(Error::WrongWireType {
            message,
            field,
            expected: wire::LEN,
            found: v.wire_type(),
        }),
    }
}
