//! A serde `Deserializer` over protobuf bytes, driven by the message table:
//! the user's k8s-openapi types ask for what they would ask of JSON, and
//! each wire field answers under its JSON name, in its JSON form.
//!
//! - A message of shape `Object` is a map: each field on the wire becomes a
//!   key (its JSON name) and a value. A repeated or map field is handed out
//!   once, at its first occurrence, as a sequence (or map) of every
//!   occurrence in the message; later occurrences are skipped. An inlined
//!   field's message is walked as if its fields were the parent's.
//! - Special messages (time, quantity, int-or-string, raw JSON, named
//!   slices) answer as JSON would hold them (`Shape`).
//! - What a type does not ask for is skipped unread (`deserialize_ignored_any`).

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use smallvec::SmallVec;

use super::Error;
use super::lookup;
use super::schema::{Field, INLINE, Kind, Label, Message, OMIT_ZERO, Shape};
use super::text::{self, GO_ZERO_SECONDS};
use super::wire::{self, Cursor, Value};

/// How deep messages may nest (inlined ones included) before decoding
/// stops with [`Error::TooDeep`]: far beyond any Kubernetes type, and
/// shallow enough that hostile input cannot exhaust the stack.
const MAX_DEPTH: u32 = 64;

/// What every deserializer here answers alike: a value the type skips is
/// not read at all, and every other request but `option` and
/// `newtype_struct` (which each implements) is answered by
/// `deserialize_any`, since the schema, not the request, says what a value
/// is. With `newtype_struct`, a newtype's inner value is this same value.
macro_rules! skip_unread_and_forward {
    (newtype_struct) => {
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        skip_unread_and_forward!();
    };
    () => {
        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
        }
    };
}

/// The wire type a single value of this kind has.
fn wire_type_of(kind: Kind) -> u8 {
    match kind {
        Kind::Str | Kind::Bytes | Kind::Msg(_) => wire::LEN,
        Kind::Bool | Kind::I32 | Kind::I64 => wire::VARINT,
    }
}

fn wrong_wire_type(message: &'static Message, field: &'static Field, found: u8) -> Error {
    Error::WrongWireType {
        message: message.name,
        field: field.number,
        expected: wire_type_of(field.kind),
        found,
    }
}

/// One message's bytes and its schema entry.
pub(crate) struct MessageDe<'de> {
    buf: &'de [u8],
    msg: &'static Message,
    depth: u32,
}

impl<'de> MessageDe<'de> {
    pub(crate) fn new(buf: &'de [u8], msg: &'static Message, depth: u32) -> Result<Self, Error> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        Ok(MessageDe { buf, msg, depth })
    }

    /// Seconds and microseconds as JSON holds them, or `None` for Go's zero
    /// time. `Time` keeps whole seconds (Go's unmarshal drops the nanos);
    /// `MicroTime` truncates to microseconds.
    fn timestamp(&self) -> Result<Option<(i64, u32)>, Error> {
        let [seconds, nanos] = wire::scalar_fields::<2>(self.buf)?;
        let seconds = match seconds {
            None => 0,
            Some(Value::Varint(v)) => v as i64,
            Some(v) => return Err(Error::BadSpecial(self.msg.name, v.wire_type())),
        };
        let nanos = match nanos {
            None => 0,
            Some(Value::Varint(v)) => i64::from(v as i32),
            Some(v) => return Err(Error::BadSpecial(self.msg.name, v.wire_type())),
        };
        if self.buf.is_empty() {
            return Ok(None);
        }
        let (seconds, micros) = match self.msg.shape {
            Shape::MicroTime => {
                let nanos = nanos - nanos % 1000;
                let seconds = seconds
                    .checked_add(nanos.div_euclid(1_000_000_000))
                    .ok_or(Error::TimeOutOfRange(seconds))?;
                (seconds, (nanos.rem_euclid(1_000_000_000) / 1000) as u32)
            }
            _ => (seconds, 0),
        };
        if seconds == GO_ZERO_SECONDS && micros == 0 {
            return Ok(None);
        }
        Ok(Some((seconds, micros)))
    }

    /// The bytes of field 1 (raw JSON, a quantity's text).
    fn raw(&self) -> Result<&'de [u8], Error> {
        match wire::scalar_fields::<1>(self.buf)? {
            [None] => Ok(&[]),
            [Some(Value::Len(b))] => Ok(b),
            [Some(v)] => Err(Error::BadSpecial(self.msg.name, v.wire_type())),
        }
    }

    fn deserialize_special<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.msg.shape {
            Shape::Object => visitor.visit_map(Fields::new(self.buf, self.msg, self.depth)),
            Shape::List => match self.msg.fields.first() {
                Some(field) => {
                    visitor.visit_seq(Elements::new(self.buf, self.msg, field, self.depth))
                }
                None => Err(Error::BadSpecial(self.msg.name, wire::LEN)),
            },
            Shape::Time | Shape::MicroTime => match self.timestamp()? {
                None => visitor.visit_unit(),
                Some(time) => TimeDe::new(time, self.msg.shape).deserialize_any(visitor),
            },
            Shape::RawJson => {
                let raw = self.raw()?;
                if raw.is_empty() {
                    return visitor.visit_unit();
                }
                let json = |source: serde_json::Error| Error::Json {
                    message: self.msg.name,
                    source,
                };
                let mut de = serde_json::Deserializer::from_slice(raw);
                let value = (&mut de).deserialize_any(visitor).map_err(json)?;
                de.end().map_err(json)?;
                Ok(value)
            }
            Shape::Quantity => {
                let raw = self.raw()?;
                if raw.is_empty() {
                    // Go's zero Quantity, which JSON writes as "0".
                    return visitor.visit_borrowed_str("0");
                }
                visit_text(raw, visitor)
            }
            Shape::IntOrString => {
                let bad = |v: Value<'_>| Error::BadSpecial(self.msg.name, v.wire_type());
                let [kind, int, string] = wire::scalar_fields::<3>(self.buf)?;
                match kind {
                    None | Some(Value::Varint(0)) => match int {
                        None => visitor.visit_i32(0),
                        Some(Value::Varint(i)) => visitor.visit_i32(i as i32),
                        Some(v) => Err(bad(v)),
                    },
                    Some(Value::Varint(1)) => match string {
                        None => visitor.visit_borrowed_str(""),
                        Some(Value::Len(s)) => visit_text(s, visitor),
                        Some(v) => Err(bad(v)),
                    },
                    // Go's JSON encoder fails on any other type too.
                    Some(v) => Err(bad(v)),
                }
            }
        }
    }
}

/// UTF-8 text, borrowed when valid; invalid bytes become U+FFFD, as Go's
/// JSON encoder writes them.
fn visit_text<'de, V: Visitor<'de>>(bytes: &'de [u8], visitor: V) -> Result<V::Value, Error> {
    match std::str::from_utf8(bytes) {
        Ok(s) => visitor.visit_borrowed_str(s),
        Err(_) => visitor.visit_string(String::from_utf8_lossy(bytes).into_owned()),
    }
}

impl<'de> Deserializer<'de> for MessageDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_special(visitor)
    }

    /// The JSON `null` cases: a zero time (Go writes a zero `Time` as no
    /// bytes, and JSON writes it as `null`) and raw JSON with no bytes. A
    /// time is read once, here, and handed on as read.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.msg.shape {
            Shape::Time | Shape::MicroTime => match self.timestamp()? {
                None => visitor.visit_none(),
                Some(time) => visitor.visit_some(TimeDe::new(time, self.msg.shape)),
            },
            Shape::RawJson if self.raw()?.is_empty() => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    skip_unread_and_forward!(newtype_struct);
}

/// A time already read from its message: seconds, and microseconds for a
/// `MicroTime` (`None` for a `Time`, which JSON writes in whole seconds).
struct TimeDe {
    seconds: i64,
    micros: Option<u32>,
}

impl TimeDe {
    fn new((seconds, micros): (i64, u32), shape: Shape) -> Self {
        TimeDe {
            seconds,
            micros: (shape == Shape::MicroTime).then_some(micros),
        }
    }
}

impl<'de> Deserializer<'de> for TimeDe {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let mut buf = [0; 27];
        visitor.visit_str(text::rfc3339(self.seconds, self.micros, &mut buf)?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    skip_unread_and_forward!(newtype_struct);
}

/// One value of a field: a scalar, or a message to descend into.
struct ValueDe<'de> {
    message: &'static Message,
    field: &'static Field,
    kind: Kind,
    value: Value<'de>,
    depth: u32,
}

impl<'de> ValueDe<'de> {
    fn message(&self) -> Result<Option<MessageDe<'de>>, Error> {
        match (self.kind, self.value) {
            (Kind::Msg(i), Value::Len(b)) => {
                MessageDe::new(b, lookup::message(i), self.depth + 1).map(Some)
            }
            (Kind::Msg(_), v) => Err(wrong_wire_type(self.message, self.field, v.wire_type())),
            _ => Ok(None),
        }
    }
}

impl<'de> Deserializer<'de> for ValueDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match (self.kind, self.value) {
            (Kind::Str, Value::Len(b)) => visit_text(b, visitor),
            (Kind::Bytes, Value::Len(b)) => visitor.visit_string(text::base64(b)),
            (Kind::Bool, Value::Varint(v)) => visitor.visit_bool(v != 0),
            (Kind::I32, Value::Varint(v)) => visitor.visit_i32(v as i32),
            (Kind::I64, Value::Varint(v)) => visitor.visit_i64(v as i64),
            (Kind::Msg(_), _) => match self.message()? {
                Some(m) => m.deserialize_any(visitor),
                None => Err(wrong_wire_type(
                    self.message,
                    self.field,
                    self.value.wire_type(),
                )),
            },
            (_, v) => Err(wrong_wire_type(self.message, self.field, v.wire_type())),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.message()? {
            Some(m) => m.deserialize_option(visitor),
            None => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.message()? {
            Some(m) => m.deserialize_newtype_struct(name, visitor),
            None => visitor.visit_newtype_struct(self),
        }
    }

    /// A string as a Rust enum's unit variant, as JSON gives it (k8s-openapi
    /// keeps enums as strings; `kube`'s `Status` does not).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match (self.kind, self.value) {
            (Kind::Str, Value::Len(b)) => {
                let text = String::from_utf8_lossy(b);
                visitor.visit_enum(de::value::StrDeserializer::<Error>::new(&text))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// A field's JSON name, as a map key.
struct Key(&'static str);

impl<'de> Deserializer<'de> for Key {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string option
        bytes byte_buf unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// One level of a message being walked: the message itself, or an inlined
/// field's message within it.
struct Frame<'de> {
    cur: Cursor<'de>,
    msg: &'static Message,
    /// Repeated and map fields already handed out, by index in `msg.fields`.
    handed_out: u128,
    /// Where the next field is likely to be in `msg.fields`.
    hint: usize,
    /// Whether `Fields::runs` holds this frame's repeated fields yet.
    scanned: bool,
}

/// Where one repeated or map field lies in its message, found by one pass
/// over the message (`scan_runs`), so that handing it out walks its own
/// occurrences rather than the whole rest of the message.
#[derive(Clone, Copy)]
struct Run {
    /// The end of its last occurrence.
    end: usize,
    /// How many occurrences (a packed run counts once).
    count: u32,
    /// The frame (its place in `Fields::frames`) the field belongs to.
    frame: u8,
    /// The field's index in its message's `fields` (at most 128 fields).
    index: u8,
    /// No other field comes between its first and last occurrence (what Go
    /// writes): the walk of the message may jump to `end`.
    contiguous: bool,
}

/// One pass over a message from `from` on: where each repeated or map
/// field lies, added to `runs`.
fn scan_runs(
    runs: &mut SmallVec<[Run; 4]>,
    frame: u8,
    msg: &'static Message,
    mut cur: Cursor<'_>,
) -> Result<(), Error> {
    let first = runs.len();
    let mut previous = usize::MAX;
    let mut hint = 0;
    while !cur.at_end() {
        let (number, wire_type) = cur.tag()?;
        cur.value(wire_type)?;
        let Some((index, field)) = msg.field_near(number, hint) else {
            previous = usize::MAX;
            continue;
        };
        hint = index;
        if field.label == Label::Single {
            previous = usize::MAX;
            continue;
        }
        let end = cur.position();
        let index = index as u8;
        match runs[first..].iter_mut().find(|r| r.index == index) {
            Some(run) => {
                run.contiguous &= previous == usize::from(index);
                run.count = run.count.saturating_add(1);
                run.end = end;
            }
            None => runs.push(Run {
                frame,
                index,
                end,
                count: 1,
                contiguous: true,
            }),
        }
        previous = usize::from(index);
    }
    Ok(())
}

enum Pending<'de> {
    None,
    Single(&'static Message, &'static Field, Value<'de>),
    /// A repeated or map field: the message's bytes from its first
    /// occurrence to the end of its last, and how many occurrences.
    Many(&'static Message, &'static Field, &'de [u8], usize),
}

/// The fields of an `Object` message as a serde map.
struct Fields<'de> {
    frames: SmallVec<[Frame<'de>; 2]>,
    /// The repeated and map fields of the frames scanned so far.
    runs: SmallVec<[Run; 4]>,
    pending: Pending<'de>,
    depth: u32,
}

impl<'de> Fields<'de> {
    fn new(buf: &'de [u8], msg: &'static Message, depth: u32) -> Self {
        let mut frames = SmallVec::new();
        frames.push(Frame {
            cur: Cursor::new(buf),
            msg,
            handed_out: 0,
            hint: 0,
            scanned: false,
        });
        Fields {
            frames,
            runs: SmallVec::new(),
            pending: Pending::None,
            depth,
        }
    }
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        loop {
            // At most MAX_DEPTH + 1 frames.
            let level = self.frames.len().wrapping_sub(1) as u8;
            let Some(frame) = self.frames.last_mut() else {
                return Ok(None);
            };
            if frame.cur.at_end() {
                self.frames.pop();
                self.runs.retain(|r| r.frame < level);
                continue;
            }
            let start = frame.cur.position();
            let (number, wire_type) = frame.cur.tag()?;
            let value = frame.cur.value(wire_type)?;
            let msg = frame.msg;
            let Some((index, field)) = msg.field_near(number, frame.hint) else {
                continue; // a field this schema does not know
            };
            frame.hint = index + 1;
            match field.label {
                Label::Single => {
                    if wire_type != wire_type_of(field.kind) {
                        return Err(wrong_wire_type(msg, field, wire_type));
                    }
                    if field.flags & INLINE != 0 {
                        if let (Kind::Msg(i), Value::Len(b)) = (field.kind, value) {
                            let depth = self.depth + self.frames.len() as u32;
                            if depth > MAX_DEPTH {
                                return Err(Error::TooDeep);
                            }
                            self.frames.push(Frame {
                                cur: Cursor::new(b),
                                msg: lookup::message(i),
                                handed_out: 0,
                                hint: 0,
                                scanned: false,
                            });
                        }
                        continue;
                    }
                    if field.flags & OMIT_ZERO != 0 && value.is_zero() {
                        continue;
                    }
                    self.pending = Pending::Single(msg, field, value);
                }
                Label::Repeated | Label::Map => {
                    let bit = 1u128.checked_shl(index as u32).unwrap_or(0);
                    if frame.handed_out & bit != 0 {
                        continue;
                    }
                    frame.handed_out |= bit;
                    if !frame.scanned {
                        frame.scanned = true;
                        let mut from = frame.cur;
                        from.seek(start);
                        scan_runs(&mut self.runs, level, msg, from)?;
                    }
                    // The scan from this field's first occurrence found it.
                    let Some(run) = self
                        .runs
                        .iter()
                        .rev()
                        .find(|r| r.frame == level && usize::from(r.index) == index)
                        .copied()
                    else {
                        return Err(Error::Custom("a repeated field was lost".into()));
                    };
                    let buf = frame.cur.slice(start, run.end);
                    if run.contiguous {
                        frame.cur.seek(run.end);
                    }
                    self.pending = Pending::Many(msg, field, buf, run.count as usize);
                }
            }
            return seed.deserialize(Key(field.name)).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let depth = self.depth + (self.frames.len() as u32).saturating_sub(1);
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::Single(message, field, value) => seed.deserialize(ValueDe {
                message,
                field,
                kind: field.kind,
                value,
                depth,
            }),
            Pending::Many(message, field, buf, count) => seed.deserialize(ManyDe {
                message,
                field,
                buf,
                count,
                depth,
            }),
            Pending::None => Err(Error::Custom("a value was asked for before its key".into())),
        }
    }
}

/// A repeated or map field: every occurrence within `buf`.
struct ManyDe<'de> {
    message: &'static Message,
    field: &'static Field,
    buf: &'de [u8],
    /// How many occurrences `buf` holds (the size hint).
    count: usize,
    depth: u32,
}

impl<'de> Deserializer<'de> for ManyDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.field.label {
            Label::Map => visitor.visit_map(Entries {
                message: self.message,
                field: self.field,
                cur: Cursor::new(self.buf),
                value: None,
                left: self.count,
                depth: self.depth,
            }),
            _ => {
                let mut elements = Elements::new(self.buf, self.message, self.field, self.depth);
                // A packed run of numbers counts once but holds many.
                if wire_type_of(self.field.kind) == wire::LEN {
                    elements.left = Some(self.count);
                }
                visitor.visit_seq(elements)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    skip_unread_and_forward!(newtype_struct);
}

/// The values of one repeated field, packed runs included.
struct Elements<'de> {
    message: &'static Message,
    field: &'static Field,
    cur: Cursor<'de>,
    packed: Option<Cursor<'de>>,
    /// How many elements are left, when known (the size hint).
    left: Option<usize>,
    depth: u32,
}

impl<'de> Elements<'de> {
    fn new(buf: &'de [u8], message: &'static Message, field: &'static Field, depth: u32) -> Self {
        Elements {
            message,
            field,
            cur: Cursor::new(buf),
            packed: None,
            left: None,
            depth,
        }
    }
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let expected = wire_type_of(self.field.kind);
        loop {
            let value = match &mut self.packed {
                Some(run) if !run.at_end() => run.value(expected)?,
                _ => {
                    self.packed = None;
                    if self.cur.at_end() {
                        return Ok(None);
                    }
                    let (number, wire_type) = self.cur.tag()?;
                    let value = self.cur.value(wire_type)?;
                    if number != self.field.number {
                        continue;
                    }
                    self.left = self.left.map(|n| n.saturating_sub(1));
                    match value {
                        // A packed run of numbers.
                        Value::Len(run) if expected != wire::LEN => {
                            self.packed = Some(Cursor::new(run));
                            continue;
                        }
                        v if v.wire_type() != expected => {
                            return Err(wrong_wire_type(self.message, self.field, wire_type));
                        }
                        v => v,
                    }
                }
            };
            return seed
                .deserialize(ValueDe {
                    message: self.message,
                    field: self.field,
                    kind: self.field.kind,
                    value,
                    depth: self.depth,
                })
                .map(Some);
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.left
    }
}

/// The entries of one map field: key in field 1, value in field 2.
struct Entries<'de> {
    message: &'static Message,
    field: &'static Field,
    cur: Cursor<'de>,
    value: Option<Value<'de>>,
    /// How many entries are left (the size hint).
    left: usize,
    depth: u32,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        loop {
            if self.cur.at_end() {
                return Ok(None);
            }
            let (number, wire_type) = self.cur.tag()?;
            let entry = self.cur.value(wire_type)?;
            if number != self.field.number {
                continue;
            }
            self.left = self.left.saturating_sub(1);
            let Value::Len(entry) = entry else {
                return Err(Error::WrongWireType {
                    message: self.message.name,
                    field: self.field.number,
                    expected: wire::LEN,
                    found: wire_type,
                });
            };
            let [key, value] = wire::scalar_fields::<2>(entry)?;
            let key = match key {
                None => Value::Len(&[]),
                Some(k @ Value::Len(_)) => k,
                Some(k) => {
                    return Err(Error::BadMapEntry(
                        self.message.name,
                        self.field.number,
                        k.wire_type(),
                    ));
                }
            };
            // An entry without its value holds the zero value.
            let zero = match self.field.kind {
                Kind::Str | Kind::Bytes | Kind::Msg(_) => Value::Len(&[]),
                Kind::Bool | Kind::I32 | Kind::I64 => Value::Varint(0),
            };
            let value = value.unwrap_or(zero);
            if value.wire_type() != wire_type_of(self.field.kind) {
                return Err(Error::BadMapEntry(
                    self.message.name,
                    self.field.number,
                    value.wire_type(),
                ));
            }
            self.value = Some(value);
            return seed
                .deserialize(ValueDe {
                    message: self.message,
                    field: self.field,
                    kind: Kind::Str,
                    value: key,
                    depth: self.depth,
                })
                .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error::Custom("a value was asked for before its key".into()))?;
        seed.deserialize(ValueDe {
            message: self.message,
            field: self.field,
            kind: self.field.kind,
            value,
            depth: self.depth,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}
