//! [`Error`]: why a protobuf body could not be decoded.

/// Why a protobuf body could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The body does not start with `k8s\0`.
    #[error("not a Kubernetes protobuf body: it does not start with the magic bytes k8s\\0")]
    BadMagic,
    /// The bytes end inside a value.
    #[error("truncated protobuf: {0}")]
    Truncated(&'static str),
    /// A varint longer than ten bytes, or beyond 64 bits.
    #[error("malformed protobuf: a varint longer than 64 bits")]
    VarintOverflow,
    /// A length prefix larger than what is left of its message.
    #[error("malformed protobuf: a length of {len} bytes where {available} are left")]
    LengthBeyondBuffer {
        /// The length the prefix claims.
        len: u64,
        /// The bytes left in the enclosing message.
        available: usize,
    },
    /// A tag with field number 0 or beyond the largest.
    #[error("malformed protobuf: tag {0} names no valid field number")]
    BadTag(u64),
    /// Wire types 3 and 4 (groups), 6 and 7: unused by Kubernetes.
    #[error("malformed protobuf: wire type {0} is not used by Kubernetes")]
    UnsupportedWireType(u8),
    /// A known field with another wire type than its schema gives.
    #[error(
        "field {field} of {message} has wire type {found}, its schema gives wire type {expected}"
    )]
    WrongWireType {
        /// The message the field is in.
        message: &'static str,
        /// The field's number.
        field: u32,
        /// The wire type the schema gives.
        expected: u8,
        /// The wire type on the wire.
        found: u8,
    },
    /// A time, quantity, int-or-string or raw JSON message with a field of
    /// the wrong wire type or an impossible value.
    #[error("malformed {0} message (a field of wire type {1})")]
    BadSpecial(&'static str, u8),
    /// A map entry whose key or value has the wrong wire type.
    #[error("malformed entry of map field {1} of {0} (wire type {2})")]
    BadMapEntry(&'static str, u32, u8),
    /// A time JSON cannot write (outside years 1 to 9999).
    #[error("time {0} s from the Unix epoch is outside the years 1 to 9999")]
    TimeOutOfRange(i64),
    /// The JSON text held by a `FieldsV1` or `RawExtension` is not JSON.
    #[error("the JSON held by a {message} message does not parse: {source}")]
    Json {
        /// `FieldsV1` or `RawExtension`.
        message: &'static str,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// Messages nested deeper than any Kubernetes type does.
    #[error("malformed protobuf: messages nested too deep")]
    TooDeep,
    /// The envelope names another kind than the one asked for.
    #[error("the body holds {found_api_version} {found_kind}, {api_version} {kind} was asked for")]
    KindMismatch {
        /// The apiVersion asked for.
        api_version: &'static str,
        /// The kind asked for.
        kind: &'static str,
        /// The apiVersion in the envelope.
        found_api_version: String,
        /// The kind in the envelope.
        found_kind: String,
    },
    /// The schema has no message for this kind (a custom resource, or a
    /// kind newer than the table).
    #[error("no protobuf schema for {api_version} {kind}")]
    UnknownKind {
        /// The apiVersion asked for.
        api_version: &'static str,
        /// The kind asked for.
        kind: &'static str,
    },
    /// The envelope's `contentEncoding` is set (Kubernetes never sets it).
    #[error("content encoding {0:?} is not supported")]
    ContentEncoding(String),
    /// A watch frame's length prefix above the most a frame may hold.
    #[error("a watch frame of {len} bytes is larger than the {max} bytes a frame may hold")]
    FrameTooLarge {
        /// The length the frame's prefix claims.
        len: u64,
        /// The most a frame may hold.
        max: usize,
    },
    /// A watch event whose type is none of ADDED, MODIFIED, DELETED,
    /// BOOKMARK and ERROR.
    #[error("unknown watch event type {0:?}")]
    UnknownEventType(String),
    /// Something the body must hold is absent (a watch event's object, a
    /// bookmark's resourceVersion).
    #[error("the body lacks {0}")]
    Missing(&'static str),
    /// An object without `metadata` (the source refuses it, as it refuses
    /// such a JSON object).
    #[error("the object has no metadata")]
    NoMetadata,
    /// An object whose metadata has no name (the source refuses it).
    #[error("the object has no name")]
    NoName,
    /// What the type's `Deserialize` impl refused, in its words.
    #[error("{0}")]
    Custom(String),
}
