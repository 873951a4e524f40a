//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) decoded into
//! the user's k8s-openapi types, giving the value JSON would give: one
//! object ([`decode_object`]), a list page ([`decode_list`]), a `Status`
//! body ([`decode_status`]) and a watch stream ([`FrameSplitter`],
//! [`decode_watch_event`]).
//!
//! # Design
//!
//! The decoder is a serde `Deserializer` over the wire bytes, led by a table
//! of messages generated from the Kubernetes `.proto` files and the Go
//! struct tags beside them (`scripts/protobuf/gen_schema.py` writes
//! `schema_generated.rs`). The k8s-openapi type's own `Deserialize` impl
//! drives it, asking for fields by their JSON names as it would ask
//! `serde_json`; a field the user's k8s-openapi version lacks is skipped
//! like an unknown JSON field, so one table serves every version.
//!
//! What keeps it cheap:
//! - A repeated or map field is handed out at its first occurrence. The
//!   first time a message has one, a single pass over the rest of the
//!   message notes where each repeated or map field's occurrences end, how
//!   many there are, and whether they are contiguous (as Go writes them);
//!   the field's walk then covers its own occurrences only, and a
//!   contiguous run is jumped over by the message's walk. Interleaved
//!   occurrences (other encoders) are still gathered, by skipping the
//!   fields between them. The count is the sequence's size hint.
//! - Fields are looked up from where the last one was found, then by their
//!   number as an index, and only then by binary search.
//! - A time is read once (`Option<Time>` asks whether it is null, then for
//!   its value), and strings are borrowed from the body when the type can
//!   borrow them.
//!
//! ## The other design, measured: generated decoders
//!
//! The alternative is one generated function per message that matches
//! field numbers and fills k8s-openapi's public struct fields directly: no
//! serde, no field names, no text for times. `scripts/protobuf/gen_direct.py`
//! writes them (`direct_generated.rs`, from this table and k8s-openapi's
//! sources) for the 136 messages a `Pod` reaches; the private
//! `protobuf-generated` feature compiles them (`direct.rs`), and
//! `tests/protobuf_generated.rs` checks they give the value this decoder
//! and JSON give. With the feature, on k8s-openapi's 1.34 types, the
//! source decodes Pods with them (list items and watch objects); every
//! other type, and every other version, takes this decoder. Measured on `pod.pb` (1 856 bytes; 4 282 of JSON) with
//! `benches/protobuf.rs`, one run on a shared 2-core machine at load
//! average 6–7.5, µs per Pod:
//!
//! | | generated | serde-driven | the source's JSON | `serde_json` |
//! |---|---|---|---|---|
//! | task-clock, best of 10 (median) | 16.9 (19.9) | 50.7 (57.6) | 41.2 (55.0) | 33.2 (42.1) |
//! | criterion wall time | 28.4 | 127.7 | 91.2 | 76.8 |
//!
//! So by task-clock the generated functions take a third of this decoder's
//! time, 0.41 of the source's JSON path's and half of plain `serde_json`'s.
//! What they cost:
//! - version coupling: they name k8s-openapi's Rust fields and types, so
//!   they compile against one k8s-openapi version (v1_34 of 0.29) only; a
//!   user on another version needs the file generated for theirs (one per
//!   version feature), where this decoder serves every version with one
//!   table.
//! - size: 2 323 lines for the Pod's messages (about 17 a message; the
//!   1 158 messages of the table would be of the order of 19 000 lines
//!   per k8s-openapi version), against the table's 1 475 lines for all.
//! - compile time: lost in the noise of this machine for the Pod's
//!   functions (`cargo check --lib` 5.2–5.4 s without, 5.3–5.6 s with; a
//!   debug build 7.4–9.4 s without, 8.4–11.9 s with).
//!
//! # Where protobuf and JSON differ
//!
//! Each is answered in the form JSON has it:
//! - `Time`: seconds and nanos become an RFC 3339 string of whole seconds
//!   (Go drops the nanos on decode); `MicroTime` keeps microseconds. A zero
//!   time (no bytes, or Go's year-1 zero) is JSON's `null`.
//! - `IntOrString`: by its type field, the int or the string.
//! - `Quantity`: its string field (`"0"` when absent, as Go's zero).
//! - `FieldsV1`, `RawExtension`: their bytes are JSON text, read as JSON.
//! - `bytes` fields (`[]byte`): base64 text, which `ByteString` expects.
//! - maps: repeated key/value entry messages.
//! - repeated fields: every occurrence in the message, packed or not.
//! - Go named slices (`ExtraValue`): a message wrapping `repeated items`,
//!   an array in JSON.
//! - inlined structs (`json:",inline"`, e.g. a `Volume`'s `VolumeSource`):
//!   a nested message on the wire, the parent's fields in JSON.
//! - `omitempty` non-pointer scalars: protobuf writes them even when zero,
//!   JSON leaves them out; the decoder leaves them out, so `Option` fields
//!   are `None` as with JSON.
//! - JSON names: taken from the Go tags; a handful differ from the proto
//!   names (`Webhooks`/`webhooks`, `uID`/`uid`, `aPIGroup`/`apiGroup`).
//! - strings: invalid UTF-8 becomes U+FFFD, as Go's JSON encoder writes it.
//!
//! # Rules
//!
//! - **PB1 Same value as JSON.** A body decodes to the value (`PartialEq`)
//!   the object's JSON decodes to, for every difference listed above.
//! - **PB2 No panics.** Any bytes give a value or an [`Error`] saying what
//!   is wrong with them.
//! - **PB3 The kind asked for.** The envelope's apiVersion and kind must be
//!   the type's, and a kind the table lacks is refused by name.
//! - **PB4 Any valid encoding.** Unknown fields are skipped, repeated
//!   numbers read packed or not, occurrences of a repeated or map field
//!   apart from each other gathered in order, and the last occurrence of a
//!   singular field wins (for a message field the proto rules merge the
//!   occurrences instead; Go never writes a field twice).
//! - **PB5 List pages.** A list body gives its items (each as PB1) and its
//!   `resourceVersion`, `continue` and `remainingItemCount`; the envelope
//!   must name the kind's list.
//! - **PB6 Status bodies.** A `Status` body gives the `kube::core::Status`
//!   its JSON gives (code, reason, message, details).
//! - **PB7 Watch streams.** Frames split on any chunk boundaries give the
//!   events the JSON stream gives; a bookmark gives its resourceVersion and
//!   whether it ends the initial events, an ERROR its `Status`.
//! - **PB8 Bad streams.** A stream cut inside a frame, a frame above the
//!   limit ([`DEFAULT_MAX_FRAME`] unless set), garbage, an unknown event
//!   type or an object of another kind is an [`Error`], never a panic.
//!
//! # The envelope and the stream
//!
//! A body is the magic bytes `k8s\0`, then a `runtime.Unknown` message whose
//! `typeMeta` names the kind and whose `raw` holds the object's message. A
//! list's envelope names `<Kind>List`; an error's names `v1` `Status`.
//!
//! A watch stream has no envelope of its own: each frame is a 4-byte
//! big-endian length, then a `WatchEvent` message (`type`, and `object`, a
//! `RawExtension` whose bytes are a whole enveloped body).
//!
//! # Bad input
//!
//! Every read is bounds-checked; bad input is an [`Error`], never a panic:
//! a wrong magic, a truncated or overlong varint, a length beyond the
//! buffer, a wire type the schema does not allow, a kind the table does
//! not have or the type does not expect, messages nested too deep.

mod collection;
mod de;
// Written for 1.34's types: compiled only when the program's k8s-openapi
// version is 1.34 (the feature itself picks none).
#[cfg(feature = "protobuf-generated")]
k8s_openapi::k8s_if_1_34! {
    pub(crate) mod direct;
    mod direct_read;
    #[rustfmt::skip]
    #[allow(clippy::all, clippy::pedantic)]
    mod direct_generated;
}
mod error;
mod list;
mod lookup;
mod schema;
#[rustfmt::skip]
mod schema_generated;
mod status;
mod text;
mod watch;
mod wire;

pub(crate) use collection::KindSchema;
pub use error::Error;
pub use list::{ListPage, decode_list};
pub use status::decode_status;
pub use watch::{DEFAULT_MAX_FRAME, FrameSplitter, WatchEvent, decode_watch_event};

use k8s_openapi::Resource;
use serde::de::DeserializeOwned;

/// The first bytes of every Kubernetes protobuf body.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// Decodes one object from a Kubernetes protobuf body (`k8s\0` and a
/// `runtime.Unknown` envelope) into `K`, giving the value `K`'s JSON
/// decoding of the same object gives.
///
/// The envelope's apiVersion and kind must be `K`'s.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::unstable::protobuf::{decode_object, Error};
///
/// // `k8s\0`, then Unknown { typeMeta: { "v1", "ConfigMap" }, raw: ConfigMap {
/// //     metadata: { name: "a" }, data: { "k": "v" } } }
/// let body = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x0d\x0a\x03\x0a\x01a\x12\x06\x0a\x01k\x12\x01v";
/// let cm: ConfigMap = decode_object(body)?;
/// assert_eq!(cm.metadata.name.as_deref(), Some("a"));
/// assert_eq!(cm.data.unwrap()["k"], "v");
///
/// assert!(matches!(decode_object::<ConfigMap>(b"{}"), Err(Error::BadMagic)));
/// # Ok::<(), Error>(())
/// ```
pub fn decode_object<K>(bytes: &[u8]) -> Result<K, Error>
where
    K: Resource + DeserializeOwned,
{
    let envelope = Envelope::open(bytes)?;
    envelope.expect(K::API_VERSION, K::KIND, K::KIND)?;
    decode_message(envelope.raw, K::API_VERSION, K::KIND)
}

/// A body's envelope: `k8s\0`, then a `runtime.Unknown` naming the kind of
/// the object's message it holds.
struct Envelope<'a> {
    api_version: &'a [u8],
    kind: &'a [u8],
    /// The object's message.
    raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    fn open(bytes: &'a [u8]) -> Result<Self, Error> {
        let body = bytes.strip_prefix(MAGIC).ok_or(Error::BadMagic)?;
        let [type_meta, raw, encoding, _content_type] = wire::scalar_fields::<4>(body)?;
        let encoding = text(encoding)?;
        if !encoding.is_empty() {
            return Err(Error::ContentEncoding(
                String::from_utf8_lossy(encoding).into_owned(),
            ));
        }
        let [api_version, kind] = wire::scalar_fields::<2>(text(type_meta)?)?;
        Ok(Envelope {
            api_version: text(api_version)?,
            kind: text(kind)?,
            raw: text(raw)?,
        })
    }

    /// Whether the envelope names `api_version` and `kind` (`kind` may be
    /// a list's kind); the error names `asked`, the kind the caller asked
    /// for, otherwise.
    fn expect(
        &self,
        api_version: &'static str,
        kind: &str,
        asked: &'static str,
    ) -> Result<(), Error> {
        if self.api_version == api_version.as_bytes() && self.kind == kind.as_bytes() {
            return Ok(());
        }
        Err(Error::KindMismatch {
            api_version,
            kind: asked,
            found_api_version: String::from_utf8_lossy(self.api_version).into_owned(),
            found_kind: String::from_utf8_lossy(self.kind).into_owned(),
        })
    }
}

/// One object's message (no envelope) decoded as the kind's table entry
/// says.
fn decode_message<T: DeserializeOwned>(
    raw: &[u8],
    api_version: &'static str,
    kind: &'static str,
) -> Result<T, Error> {
    let message =
        lookup::kind(api_version, kind).ok_or(Error::UnknownKind { api_version, kind })?;
    T::deserialize(de::MessageDe::new(raw, message, 0)?)
}

/// The bytes of an envelope field (none when absent).
fn text(value: Option<wire::Value<'_>>) -> Result<&[u8], Error> {
    match value {
        None => Ok(&[]),
        Some(wire::Value::Len(b)) => Ok(b),
        Some(v) => Err(Error::BadSpecial("Unknown", v.wire_type())),
    }
}
