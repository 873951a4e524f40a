//! What the generated decoders (`direct_generated.rs`) read with: the
//! wire steps with their errors, and the special messages (times,
//! quantities, int-or-string, raw JSON) read as the serde path reads them.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

pub(super) use super::Error;
use super::text::GO_ZERO_SECONDS;
pub(super) use super::wire::Cursor;
use super::wire::{self, Value};

/// Seconds of 9999-12-31T23:59:59Z, the last instant JSON's RFC 3339 text
/// can hold (as `text::rfc3339` bounds it).
const MAX_SECONDS: i64 = 253_402_300_799;

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
