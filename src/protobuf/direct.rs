//! The second protobuf design, built to be measured beside the serde-driven
//! decoder: generated functions (`direct_generated.rs`, written by
//! `scripts/protobuf/gen_direct.py`) that match field numbers and fill
//! k8s-openapi's public struct fields directly, with no field names and
//! no serde between the wire and the struct. They exist for one
//! k8s-openapi version (v1_34) and for the messages reachable from a `Pod`;
//! the private `protobuf-generated` feature compiles them.
//!
//! Each special message is read as the serde path reads it (see the
//! module's "Where protobuf and JSON differ"), so both give the same value.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

pub(super) use super::Error;
use super::text::GO_ZERO_SECONDS;
pub(super) use super::wire::Cursor;
use super::wire::{self, Value};
use super::{Envelope, direct_generated};

/// Seconds of 9999-12-31T23:59:59Z, the last instant JSON's RFC 3339 text
/// can hold (as `text::rfc3339` bounds it).
const MAX_SECONDS: i64 = 253_402_300_799;

/// Decodes one `Pod` from a Kubernetes protobuf body with the generated
/// functions: the value [`decode_object`](super::decode_object) gives.
///
/// ```
/// use kube_informer::unstable::protobuf::{decode_object, generated};
/// use k8s_openapi::api::core::v1::Pod;
///
/// // `k8s\0`, then Unknown { typeMeta: { "v1", "Pod" }, raw: Pod {
/// //     metadata: { name: "a" } } }
/// let body = b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x05\x0a\x03\x0a\x01a";
/// let pod = generated::decode_pod(body)?;
/// assert_eq!(pod.metadata.name.as_deref(), Some("a"));
/// assert_eq!(pod, decode_object::<Pod>(body)?);
/// # Ok::<(), kube_informer::unstable::protobuf::Error>(())
/// ```
pub fn decode_pod(bytes: &[u8]) -> Result<Pod, Error> {
    use k8s_openapi::Resource;
    let envelope = Envelope::open(bytes)?;
    envelope.expect(Pod::API_VERSION, Pod::KIND, Pod::KIND)?;
    let mut pod = Pod::default();
    direct_generated::decode_pod(envelope.raw, &mut pod)?;
    Ok(pod)
}

/// Decodes the items of a `PodList` body with the generated functions: the
/// items [`decode_list`](super::decode_list) gives (the list's own metadata
/// is not read).
///
/// ```
/// use kube_informer::unstable::protobuf::{decode_list, generated};
/// use k8s_openapi::api::core::v1::Pod;
///
/// // `k8s\0`, then Unknown { typeMeta: { "v1", "PodList" }, raw: PodList {
/// //     items: [ { metadata: { name: "a" } } ] } }
/// let body = b"k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList\x12\x07\x12\x05\x0a\x03\x0a\x01a";
/// let pods = generated::decode_pod_list(body)?;
/// assert_eq!(pods[0].metadata.name.as_deref(), Some("a"));
/// assert_eq!(pods, decode_list::<Pod>(body)?.items);
/// # Ok::<(), kube_informer::unstable::protobuf::Error>(())
/// ```
pub fn decode_pod_list(bytes: &[u8]) -> Result<Vec<Pod>, Error> {
    use k8s_openapi::Resource;
    let envelope = Envelope::open(bytes)?;
    envelope.expect(Pod::API_VERSION, "PodList", Pod::KIND)?;
    let mut items = Vec::new();
    let mut cur = Cursor::new(envelope.raw);
    while !cur.at_end() {
        let (number, wire_type) = cur.tag()?;
        if number != 2 {
            cur.value(wire_type)?;
            continue;
        }
        let mut pod = Pod::default();
        direct_generated::decode_pod(len(&mut cur, wire_type, "PodList", 2)?, &mut pod)?;
        items.push(pod);
    }
    Ok(items)
}

/// The bytes of a length-delimited field; any other wire type is an error.
#[inline]
pub(super) fn len<'a>(
    cur: &mut Cursor<'a>,
    wire_type: u8,
    message: &'static str,
    field: u32,
) -> Result<&'a [u8], Error> {
    match cur.value(wire_type)? {
        Value::Len(b) => Ok(b),
        v => Err(wrong(message, field, wire::LEN, v.wire_type())),
    }
}

/// A varint field; any other wire type is an error.
#[inline]
pub(super) fn varint(
    cur: &mut Cursor<'_>,
    wire_type: u8,
    message: &'static str,
    field: u32,
) -> Result<u64, Error> {
    match cur.value(wire_type)? {
        Value::Varint(v) => Ok(v),
        v => Err(wrong(message, field, wire::VARINT, v.wire_type())),
    }
}

/// One occurrence of a repeated number field: a varint, or a packed run of
/// them.
pub(super) fn varints(
    cur: &mut Cursor<'_>,
    wire_type: u8,
    message: &'static str,
    field: u32,
    mut push: impl FnMut(u64),
) -> Result<(), Error> {
    match cur.value(wire_type)? {
        Value::Varint(v) => push(v),
        Value::Len(run) => {
            let mut run = Cursor::new(run);
            while !run.at_end() {
                push(run.varint()?);
            }
        }
        v => return Err(wrong(message, field, wire::VARINT, v.wire_type())),
    }
    Ok(())
}

fn wrong(message: &'static str, field: u32, expected: u8, found: u8) -> Error {
    Error::WrongWireType {
        message,
        field,
        expected,
        found,
    }
}

/// UTF-8 text; invalid bytes become U+FFFD, as Go's JSON encoder writes
/// them.
#[inline]
pub(super) fn string(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// A map entry: its key (field 1) and its value's bytes (field 2, empty
/// when absent: the zero value). Only string and message values reach
/// here; number-valued maps are not in the generated types.
pub(super) fn entry<'a>(
    entry: &'a [u8],
    message: &'static str,
    field: u32,
) -> Result<(&'a [u8], &'a [u8]), Error> {
    let [key, value] = wire::scalar_fields::<2>(entry)?;
    let bytes = |v: Option<Value<'a>>| match v {
        None => Ok(&[][..]),
        Some(Value::Len(b)) => Ok(b),
        Some(v) => Err(Error::BadMapEntry(message, field, v.wire_type())),
    };
    Ok((bytes(key)?, bytes(value)?))
}

/// Seconds and nanos of a `Time` or `MicroTime` message, `None` for Go's
/// zero time (no bytes at all).
fn seconds_nanos(buf: &[u8], name: &'static str) -> Result<Option<(i64, i64)>, Error> {
    if buf.is_empty() {
        return Ok(None);
    }
    let [seconds, nanos] = wire::scalar_fields::<2>(buf)?;
    let read = |v: Option<Value<'_>>| match v {
        None => Ok(0),
        Some(Value::Varint(v)) => Ok(v),
        Some(v) => Err(Error::BadSpecial(name, v.wire_type())),
    };
    Ok(Some((
        read(seconds)? as i64,
        i64::from(read(nanos)? as i32),
    )))
}

fn timestamp(seconds: i64, micros: i64) -> Result<Timestamp, Error> {
    if !(GO_ZERO_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err(Error::TimeOutOfRange(seconds));
    }
    Timestamp::new(seconds, (micros * 1000) as i32).map_err(|_| Error::TimeOutOfRange(seconds))
}

/// A `Time`: whole seconds (Go's unmarshal drops the nanos); `None` for the
/// zero time, which JSON writes as `null`.
pub(super) fn time(buf: &[u8]) -> Result<Option<Time>, Error> {
    match seconds_nanos(buf, "Time")? {
        None => Ok(None),
        Some((GO_ZERO_SECONDS, _)) => Ok(None),
        Some((seconds, _)) => timestamp(seconds, 0).map(|t| Some(Time(t))),
    }
}

/// A `MicroTime`: truncated to microseconds; `None` for the zero time.
/// (No message a `Pod` holds has one; the generator names it for other
/// kinds.)
#[allow(dead_code)]
pub(super) fn micro_time(buf: &[u8]) -> Result<Option<MicroTime>, Error> {
    let Some((seconds, nanos)) = seconds_nanos(buf, "MicroTime")? else {
        return Ok(None);
    };
    let nanos = nanos - nanos % 1000;
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or(Error::TimeOutOfRange(seconds))?;
    let micros = nanos.rem_euclid(1_000_000_000) / 1000;
    if seconds == GO_ZERO_SECONDS && micros == 0 {
        return Ok(None);
    }
    timestamp(seconds, micros).map(|t| Some(MicroTime(t)))
}

/// The bytes of field 1 (a quantity's text, raw JSON).
fn field_one<'a>(buf: &'a [u8], name: &'static str) -> Result<&'a [u8], Error> {
    match wire::scalar_fields::<1>(buf)? {
        [None] => Ok(&[]),
        [Some(Value::Len(b))] => Ok(b),
        [Some(v)] => Err(Error::BadSpecial(name, v.wire_type())),
    }
}

/// A `Quantity`: its text, `"0"` for Go's zero quantity.
pub(super) fn quantity(buf: &[u8]) -> Result<Quantity, Error> {
    let text = field_one(buf, "Quantity")?;
    Ok(Quantity(if text.is_empty() {
        "0".to_owned()
    } else {
        string(text)
    }))
}

/// An `IntOrString`, by its type field.
pub(super) fn int_or_string(buf: &[u8]) -> Result<IntOrString, Error> {
    let bad = |v: Value<'_>| Error::BadSpecial("IntOrString", v.wire_type());
    let [kind, int, text] = wire::scalar_fields::<3>(buf)?;
    match kind {
        None | Some(Value::Varint(0)) => match int {
            None => Ok(IntOrString::Int(0)),
            Some(Value::Varint(i)) => Ok(IntOrString::Int(i as i32)),
            Some(v) => Err(bad(v)),
        },
        Some(Value::Varint(1)) => match text {
            None => Ok(IntOrString::String(String::new())),
            Some(Value::Len(s)) => Ok(IntOrString::String(string(s))),
            Some(v) => Err(bad(v)),
        },
        Some(v) => Err(bad(v)),
    }
}

/// The JSON text in field 1 of a `FieldsV1` or `RawExtension`, read as a
/// JSON value (`None` when empty: JSON's `null`).
pub(super) fn raw_json(
    buf: &[u8],
    message: &'static str,
) -> Result<Option<serde_json::Value>, Error> {
    let text = field_one(buf, message)?;
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(text)
        .map(Some)
        .map_err(|source| Error::Json { message, source })
}
