//! The protobuf wire format: varints, tags and the four value encodings
//! Kubernetes uses. Every read is bounds-checked and fails with an
//! [`Error`]; nothing here can panic on any input.

use super::Error;

/// Wire type 0: a varint.
pub(crate) const VARINT: u8 = 0;
/// Wire type 1: eight little-endian bytes.
pub(crate) const FIXED64: u8 = 1;
/// Wire type 2: a varint length, then that many bytes.
pub(crate) const LEN: u8 = 2;
/// Wire type 5: four little-endian bytes.
pub(crate) const FIXED32: u8 = 5;

/// One value as it is on the wire.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'de> {
    Varint(u64),
    Fixed64(u64),
    Len(&'de [u8]),
    Fixed32(u32),
}

impl Value<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(_) => LEN,
            Value::Fixed32(_) => FIXED32,
        }
    }

    /// The zero value of its type, as Go's `omitempty` sees it: 0, false,
    /// "", no bytes, or a float of either sign of zero (the fixed-width
    /// encodings carry only floats in Kubernetes).
    pub(crate) fn is_zero(&self) -> bool {
        match *self {
            Value::Varint(v) => v == 0,
            Value::Fixed64(v) => v << 1 == 0,
            Value::Fixed32(v) => v << 1 == 0,
            Value::Len(b) => b.is_empty(),
        }
    }
}

/// A position in one message's bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'de> {
    buf: &'de [u8],
    pos: usize,
}

impl<'de> Cursor<'de> {
    pub(crate) fn new(buf: &'de [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The bytes from `from` to `to` (empty when out of order or range).
    pub(crate) fn slice(&self, from: usize, to: usize) -> &'de [u8] {
        self.buf.get(from..to).unwrap_or_default()
    }

    /// Moves to `pos`, a position this cursor has already passed or
    /// reached (a value boundary another pass found).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(Error::Truncated(
                    "a varint runs past the end of its message",
                ));
            };
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Error::VarintOverflow);
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(Error::VarintOverflow)
    }

    /// The next tag: field number and wire type.
    pub(crate) fn tag(&mut self) -> Result<(u32, u8), Error> {
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(Error::BadTag(tag));
        }
        Ok((number as u32, (tag & 7) as u8))
    }

    fn take(&mut self, n: usize) -> Result<&'de [u8], Error> {
        let available = self.buf.len() - self.pos;
        if n > available {
            return Err(Error::LengthBeyondBuffer {
                len: n as u64,
                available,
            });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// The value after a tag of this wire type. Groups (wire types 3 and 4)
    /// are not used by Kubernetes and are an error.
    pub(crate) fn value(&mut self, wire_type: u8) -> Result<Value<'de>, Error> {
        match wire_type {
            VARINT => self.varint().map(Value::Varint),
            FIXED64 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Ok(Value::Fixed64(u64::from_le_bytes(a)))
            }
            LEN => {
                let len = self.varint()?;
                let available = self.buf.len() - self.pos;
                if len > available as u64 {
                    return Err(Error::LengthBeyondBuffer { len, available });
                }
                self.take(len as usize).map(Value::Len)
            }
            FIXED32 => {
                let b = self.take(4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                Ok(Value::Fixed32(u32::from_le_bytes(a)))
            }
            other => Err(Error::UnsupportedWireType(other)),
        }
    }
}

/// The last value of field `number` in a message, if any (a small message's
/// fields, read in one pass: Time, Quantity, IntOrString, RawExtension).
pub(crate) fn scalar_fields<'de, const N: usize>(
    buf: &'de [u8],
) -> Result<[Option<Value<'de>>; N], Error> {
    let mut out = [None; N];
    let mut cur = Cursor::new(buf);
    while !cur.at_end() {
        let (number, wire_type) = cur.tag()?;
        let value = cur.value(wire_type)?;
        if let Some(slot) = out.get_mut(number as usize - 1) {
            *slot = Some(value);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        assert_eq!(Cursor::new(&[0x96, 0x01]).varint().unwrap(), 150);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Cursor::new(&max).varint().unwrap(), u64::MAX);
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(matches!(
            Cursor::new(&over).varint(),
            Err(Error::VarintOverflow)
        ));
        assert!(matches!(
            Cursor::new(&[0x80]).varint(),
            Err(Error::Truncated(_))
        ));
        let mut c = Cursor::new(&[0x0a, 0x05, b'a']);
        let (n, w) = c.tag().unwrap();
        assert_eq!((n, w), (1, LEN));
        assert!(matches!(
            c.value(w),
            Err(Error::LengthBeyondBuffer {
                len: 5,
                available: 1
            })
        ));
    }
}
