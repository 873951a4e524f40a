//! The shape of the generated message table (`schema_generated.rs`): what
//! the decoder knows of each message (lookups are in `lookup.rs`).
//! kube-informer-testing's protobuf encoder reads the same files.

/// The type of one field's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `string`: UTF-8 text.
    Str,
    /// `bytes` holding a Go `[]byte`: base64 text in JSON.
    Bytes,
    Bool,
    I32,
    I64,
    /// A message: its index in the table.
    Msg(u16),
}

/// How many values a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    /// At most one (the last one on the wire wins).
    Single,
    /// A list: every occurrence on the wire, packed runs included.
    Repeated,
    /// A `map<string, V>`: entry messages with the key in field 1 and the
    /// value in field 2.
    Map,
}

/// What a message is in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An object of its fields.
    Object,
    /// A Go named slice (`type ExtraValue []string`): an array of field 1.
    List,
    /// `metav1.Time`: an RFC 3339 string of whole seconds, `null` when zero.
    Time,
    /// `metav1.MicroTime`: an RFC 3339 string with six fractional digits.
    MicroTime,
    /// `FieldsV1`, `RawExtension`: field 1 holds JSON text, inlined as is.
    RawJson,
    /// `resource.Quantity`: the string in field 1.
    Quantity,
    /// `intstr.IntOrString`: an integer or a string, by field 1.
    IntOrString,
}

/// Bit of [`Field::flags`]: the field's message is inlined into its parent
/// in JSON (`json:",inline"`), so its fields are the parent's.
pub(crate) const INLINE: u8 = 1;
/// Bit of [`Field::flags`]: JSON leaves the field out when it holds the zero
/// value (a non-pointer Go field tagged `omitempty`), which protobuf writes
/// anyway; the decoder leaves it out too.
pub(crate) const OMIT_ZERO: u8 = 2;
/// Bit of [`Field::flags`]: a single non-pointer Go field (not `[]byte`),
/// which Go's encoder writes even when it holds the zero value. The decoder
/// does not need it; kube-informer-testing's encoder, which shares this
/// table, writes that zero value for a field its JSON leaves out, as Go
/// would.
pub(crate) const ALWAYS_WRITTEN: u8 = 4;

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) number: u32,
    /// The JSON name k8s-openapi matches on (empty for an inlined field).
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) label: Label,
    pub(crate) flags: u8,
}

/// One message: its Go name, its JSON shape and its fields by number.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    pub(crate) shape: Shape,
    /// Sorted by field number.
    pub(crate) fields: &'static [Field],
}

pub(super) const fn m(name: &'static str, shape: Shape, fields: &'static [Field]) -> Message {
    Message {
        name,
        shape,
        fields,
    }
}

pub(super) const fn f(
    number: u32,
    name: &'static str,
    kind: Kind,
    label: Label,
    flags: u8,
) -> Field {
    Field {
        number,
        name,
        kind,
        label,
        flags,
    }
}

impl Message {
    /// The field with this number, if the schema has it.
    pub(crate) fn field(&self, number: u32) -> Option<(usize, &'static Field)> {
        let fields = self.fields;
        fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()
            .map(|i| (i, &fields[i]))
    }

    /// [`Message::field`], trying first the field at `hint` and the one whose
    /// place matches its number: Go writes fields in number order and most
    /// messages number theirs densely, so the search is rarely needed.
    #[inline]
    pub(crate) fn field_near(&self, number: u32, hint: usize) -> Option<(usize, &'static Field)> {
        let fields = self.fields;
        if let Some(f) = fields.get(hint).filter(|f| f.number == number) {
            return Some((hint, f));
        }
        let dense = (number as usize).wrapping_sub(1);
        if let Some(f) = fields.get(dense).filter(|f| f.number == number) {
            return Some((dense, f));
        }
        self.field(number)
    }
}
