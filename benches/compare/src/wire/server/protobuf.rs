//! Kubernetes' protobuf encoding of the wire workload, for clients that ask
//! for `application/vnd.kubernetes.protobuf`.
//!
//! Each Pod is encoded once, before any runner connects, by the Go runner
//! binary in its encoder mode (`client-go-runner -encode-protobuf`, which
//! uses k8s.io/api's own encoder): an envelope, the 4 bytes `k8s\0` and a
//! `runtime.Unknown` message (field 1 the type: apiVersion and kind; field 2
//! the object's own message; fields 3 and 4 the content encoding and type,
//! written empty). This module only composes bytes around those encodings:
//!
//! - a list page is one envelope whose object is a `PodList` (field 1 the
//!   `ListMeta`: selfLink, resourceVersion, continue, remainingItemCount;
//!   field 2 once per item, the Pod's message);
//! - a watch is a stream of frames, each a 4-byte big-endian length and a
//!   `WatchEvent` message without an envelope (field 1 the type, field 2 a
//!   `RawExtension` whose field 1 holds the object's envelope);
//! - the metadata-only forms take a Pod message's field 1 (its
//!   `ObjectMeta`) as it is: a `PartialObjectMetadata` message is that one
//!   field, and a `PartialObjectMetadataList` lists them.

use bytes::Bytes;
use std::{
    io::{BufReader, BufWriter, Read, Write},
    ops::Range,
    path::Path,
    process::{Command, Stdio},
};

/// The media type of Kubernetes' protobuf encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What starts every envelope.
pub const PREFIX: &[u8] = b"k8s\0";

/// The API version of the metadata-only kinds.
pub const META_API_VERSION: &str = "meta.k8s.io/v1";

/// Wire types of protobuf fields.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LENGTH_DELIMITED: u8 = 2;
const FIXED32: u8 = 5;

/// Appends `value` as a protobuf varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// Appends field `field` holding `bytes` (a string, bytes or a message).
pub fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, LENGTH_DELIMITED);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends field `field` holding the integer `value`.
pub fn put_integer(out: &mut Vec<u8>, field: u32, value: u64) {
    put_tag(out, field, VARINT);
    put_varint(out, value);
}

/// `raw`, an object's message, in an envelope naming its type.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(PREFIX.len() + type_meta.len() + raw.len() + 16);
    out.extend_from_slice(PREFIX);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

/// A list's `ListMeta` message.
pub fn list_meta(resource_version: &str, continue_token: &str, remaining: Option<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(resource_version.len() + continue_token.len() + 16);
    put_bytes(&mut out, 1, b"");
    put_bytes(&mut out, 2, resource_version.as_bytes());
    put_bytes(&mut out, 3, continue_token.as_bytes());
    if let Some(remaining) = remaining {
        put_integer(&mut out, 4, remaining);
    }
    out
}

/// A list page in its envelope: `list_meta` then each item's message.
pub fn list<'a>(
    api_version: &str,
    kind: &str,
    list_meta: &[u8],
    items: impl ExactSizeIterator<Item = &'a [u8]> + Clone,
) -> Vec<u8> {
    let size = items.clone().map(|item| item.len() + 6).sum::<usize>();
    let mut raw = Vec::with_capacity(list_meta.len() + 6 + size);
    put_bytes(&mut raw, 1, list_meta);
    for item in items {
        put_bytes(&mut raw, 2, item);
    }
    envelope(api_version, kind, &raw)
}

/// One watch frame: the length, then a `WatchEvent` of `event_type` whose
/// object is `object_envelope`.
pub fn watch_frame(event_type: &str, object_envelope: &[u8]) -> Vec<u8> {
    let mut extension = Vec::with_capacity(object_envelope.len() + 6);
    put_bytes(&mut extension, 1, object_envelope);
    let mut event = Vec::with_capacity(event_type.len() + extension.len() + 8);
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &extension);
    let mut frame = Vec::with_capacity(4 + event.len());
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

/// The `ERROR` watch frame a kube-apiserver sends when a watch's
/// resourceVersion has been compacted away: a 410 `Status`.
pub fn expired_frame(message: &str) -> Vec<u8> {
    let mut status = Vec::with_capacity(message.len() + 32);
    put_bytes(&mut status, 1, &list_meta("", "", None));
    put_bytes(&mut status, 2, b"Failure");
    put_bytes(&mut status, 3, message.as_bytes());
    put_bytes(&mut status, 4, b"Expired");
    put_integer(&mut status, 6, 410);
    watch_frame("ERROR", &envelope("v1", "Status", &status))
}

/// Bad protobuf input.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    /// The bytes end inside a field.
    #[error("the message ends inside a field")]
    Truncated,
    /// A wire type protobuf does not have (or a group, which Kubernetes
    /// does not use).
    #[error("unsupported wire type {0}")]
    WireType(u8),
    /// The envelope does not start with `k8s\0`.
    #[error("not a Kubernetes protobuf envelope")]
    NoPrefix,
    /// A field the message must have is absent.
    #[error("field {0} is missing")]
    Missing(u32),
}

fn read_varint(message: &[u8], at: &mut usize) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *message.get(*at).ok_or(DecodeError::Truncated)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::Truncated)
}

/// One field of a message: its number, where the whole field (tag
/// included) lies, and where its value lies (for a length-delimited field,
/// the bytes after the length).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field number.
    pub number: u32,
    /// Tag, length and value.
    pub whole: Range<usize>,
    /// The value alone.
    pub value: Range<usize>,
}

/// The top-level fields of `message`, in order.
pub fn fields(message: &[u8]) -> Result<Vec<Field>, DecodeError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let start = at;
        let tag = read_varint(message, &mut at)?;
        let number = (tag >> 3) as u32;
        let value = match (tag & 7) as u8 {
            VARINT => {
                let from = at;
                read_varint(message, &mut at)?;
                from..at
            }
            FIXED64 => at..at + 8,
            LENGTH_DELIMITED => {
                let length = read_varint(message, &mut at)? as usize;
                at..at.checked_add(length).ok_or(DecodeError::Truncated)?
            }
            FIXED32 => at..at + 4,
            other => return Err(DecodeError::WireType(other)),
        };
        if value.end > message.len() {
            return Err(DecodeError::Truncated);
        }
        at = value.end;
        out.push(Field {
            number,
            whole: start..at,
            value,
        });
    }
    Ok(out)
}

/// The first field numbered `number` in `message`.
pub fn field(message: &[u8], number: u32) -> Result<Field, DecodeError> {
    fields(message)?
        .into_iter()
        .find(|field| field.number == number)
        .ok_or(DecodeError::Missing(number))
}

/// Where the object's message lies in `envelope`.
pub fn envelope_object(envelope: &[u8]) -> Result<Range<usize>, DecodeError> {
    let body = envelope.strip_prefix(PREFIX).ok_or(DecodeError::NoPrefix)?;
    let raw = field(body, 2)?.value;
    Ok(raw.start + PREFIX.len()..raw.end + PREFIX.len())
}

/// The workload in protobuf: what the server sends to clients that ask for
/// it, all composed before any runner connects.
#[derive(Debug, Clone)]
pub struct ProtobufWorkload {
    /// Each listed Pod's message (a `PodList` item).
    pub items: Vec<Bytes>,
    /// Each listed Pod's metadata as a `PartialObjectMetadata` message (a
    /// slice of the Pod's message: its field 1).
    pub metadata_items: Vec<Bytes>,
    /// Each watch event's frame.
    pub events: Vec<Bytes>,
    /// Each watch event's frame with a `PartialObjectMetadata` object.
    pub metadata_events: Vec<Bytes>,
    /// Mean size of a listed Pod's message, in bytes.
    pub mean_item_bytes: f64,
}

impl ProtobufWorkload {
    /// Composes the lists' items and the watch frames from each listed
    /// Pod's envelope and each watch event's type and envelope.
    pub fn from_envelopes(
        item_envelopes: &[Bytes],
        event_types: &[&str],
        event_envelopes: &[Bytes],
    ) -> Result<Self, DecodeError> {
        let mut items = Vec::with_capacity(item_envelopes.len());
        let mut metadata_items = Vec::with_capacity(item_envelopes.len());
        for envelope in item_envelopes {
            let item = envelope.slice(envelope_object(envelope)?);
            metadata_items.push(item.slice(field(&item, 1)?.whole));
            items.push(item);
        }
        let mut events = Vec::with_capacity(event_envelopes.len());
        let mut metadata_events = Vec::with_capacity(event_envelopes.len());
        for (event_type, envelope) in event_types.iter().zip(event_envelopes) {
            let object = &envelope[envelope_object(envelope)?];
            let metadata = &object[field(object, 1)?.whole];
            events.push(Bytes::from(watch_frame(event_type, envelope)));
            metadata_events.push(Bytes::from(watch_frame(
                event_type,
                &self::envelope(META_API_VERSION, "PartialObjectMetadata", metadata),
            )));
        }
        let mean_item_bytes = if items.is_empty() {
            0.0
        } else {
            items.iter().map(Bytes::len).sum::<usize>() as f64 / items.len() as f64
        };
        Ok(Self {
            items,
            metadata_items,
            events,
            metadata_events,
            mean_item_bytes,
        })
    }

    /// Encodes the workload's Pods (`items`, then `event_objects`, each
    /// JSON) with `encoder`, the Go runner binary, and composes the result.
    pub fn encode_with(
        encoder: &Path,
        items: &[Bytes],
        event_types: &[&str],
        event_objects: &[Bytes],
    ) -> Result<Self, String> {
        let mut envelopes = run_encoder(encoder, items.iter().chain(event_objects))?;
        if envelopes.len() != items.len() + event_objects.len() {
            return Err(format!(
                "the encoder returned {} objects for {}",
                envelopes.len(),
                items.len() + event_objects.len()
            ));
        }
        let event_envelopes = envelopes.split_off(items.len());
        Self::from_envelopes(&envelopes, event_types, &event_envelopes)
            .map_err(|error| format!("the encoder's output does not decode: {error}"))
    }
}

/// Runs `encoder -encode-protobuf`: it reads length-prefixed JSON objects
/// on its input and writes each one's envelope, length-prefixed, on its
/// output. The input is written from a second thread so neither pipe fills
/// up while the other waits.
fn run_encoder<'a>(
    encoder: &Path,
    objects: impl Iterator<Item = &'a Bytes> + Send,
) -> Result<Vec<Bytes>, String> {
    let mut child = Command::new(encoder)
        .arg("-encode-protobuf")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run {}: {error}", encoder.display()))?;
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let read = std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<()> {
            let mut stdin = BufWriter::new(stdin);
            for object in objects {
                stdin.write_all(&(object.len() as u32).to_be_bytes())?;
                stdin.write_all(object)?;
            }
            stdin.flush()
        });
        let mut stdout = BufReader::new(stdout);
        let mut envelopes = Vec::new();
        let mut length = [0u8; 4];
        let read = loop {
            match stdout.read_exact(&mut length) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => break Ok(()),
                Err(error) => break Err(error),
            }
            let mut envelope = vec![0; u32::from_be_bytes(length) as usize];
            if let Err(error) = stdout.read_exact(&mut envelope) {
                break Err(error);
            }
            envelopes.push(Bytes::from(envelope));
        };
        let written = writer.join().expect("the writer thread does not panic");
        written.and(read).map(|()| envelopes)
    });
    let status = child
        .wait()
        .map_err(|error| format!("the encoder: {error}"))?;
    let envelopes = read.map_err(|error| format!("talking to the encoder: {error}"))?;
    if !status.success() {
        return Err(format!("the encoder exited with {status}"));
    }
    Ok(envelopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message shaped like a Pod's: metadata, spec, status.
    fn fake_pod(name: &str) -> Vec<u8> {
        let mut meta = Vec::new();
        put_bytes(&mut meta, 1, name.as_bytes());
        put_integer(&mut meta, 9, 300);
        let mut pod = Vec::new();
        put_bytes(&mut pod, 1, &meta);
        put_bytes(&mut pod, 2, b"spec");
        put_bytes(&mut pod, 3, &[7u8; 200]);
        pod
    }

    #[test]
    fn varints_take_seven_bits_a_byte() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut at = 0;
        assert_eq!(read_varint(&out, &mut at), Ok(300));
        assert_eq!(at, 2);
    }

    #[test]
    fn envelopes_carry_the_type_and_unwrap_to_the_object() {
        let pod = fake_pod("a");
        let envelope = envelope("v1", "Pod", &pod);
        assert!(envelope.starts_with(b"k8s\0"));
        let type_meta = field(&envelope[4..], 1).unwrap();
        let type_meta = &envelope[4..][type_meta.value];
        assert_eq!(&type_meta[field(type_meta, 2).unwrap().value], b"Pod");
        assert_eq!(
            &envelope[envelope_object(&envelope).unwrap()],
            pod.as_slice()
        );
        assert_eq!(envelope_object(&pod), Err(DecodeError::NoPrefix));
    }

    #[test]
    fn metadata_forms_are_the_pods_field_one() {
        let envelopes: Vec<Bytes> = ["a", "b"]
            .iter()
            .map(|name| Bytes::from(envelope("v1", "Pod", &fake_pod(name))))
            .collect();
        let workload =
            ProtobufWorkload::from_envelopes(&envelopes[..1], &["DELETED"], &envelopes[1..])
                .unwrap();
        let metadata = &workload.metadata_items[0];
        let only = fields(metadata).unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].number, 1);
        let meta = &metadata[only[0].value.clone()];
        assert_eq!(&meta[field(meta, 1).unwrap().value], b"a");

        let frame = &workload.metadata_events[0];
        let length = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(length, frame.len() - 4);
        let event = &frame[4..];
        assert_eq!(&event[field(event, 1).unwrap().value], b"DELETED");
        let extension = &event[field(event, 2).unwrap().value];
        let object = &extension[field(extension, 1).unwrap().value];
        let partial = &object[envelope_object(object).unwrap()];
        assert_eq!(fields(partial).unwrap().len(), 1);
    }

    #[test]
    fn truncated_messages_are_errors_not_panics() {
        let pod = fake_pod("a");
        assert_eq!(fields(&pod[..pod.len() - 1]), Err(DecodeError::Truncated));
        assert_eq!(fields(&[0x0b]), Err(DecodeError::WireType(3)));
        assert_eq!(field(&pod, 5), Err(DecodeError::Missing(5)));
    }
}
