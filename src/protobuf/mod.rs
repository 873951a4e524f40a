//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) decoded into
//! the user's k8s-openapi types, giving the value JSON would give.
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
//!
//! # The envelope
//!
//! A body is the magic bytes `k8s\0`, then a `runtime.Unknown` message whose
//! `typeMeta` names the kind and whose `raw` holds the object's message.
//!
//! # Bad input
//!
//! Every read is bounds-checked; bad input is an [`Error`], never a panic:
//! a wrong magic, a truncated or overlong varint, a length beyond the
//! buffer, a wire type the schema does not allow, a kind the table does
//! not have or the type does not expect, messages nested too deep.

mod de;
mod error;
mod lookup;
mod schema;
#[rustfmt::skip]
mod schema_generated;
mod text;
mod wire;

pub use error::Error;

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
    let body = bytes.strip_prefix(MAGIC).ok_or(Error::BadMagic)?;
    let [type_meta, raw, encoding, _content_type] = wire::scalar_fields::<4>(body)?;
    let encoding = text(encoding)?;
    if !encoding.is_empty() {
        return Err(Error::ContentEncoding(
            String::from_utf8_lossy(encoding).into_owned(),
        ));
    }
    let [api_version, kind] = wire::scalar_fields::<2>(text(type_meta)?)?;
    let (api_version, kind) = (text(api_version)?, text(kind)?);
    if api_version != K::API_VERSION.as_bytes() || kind != K::KIND.as_bytes() {
        return Err(Error::KindMismatch {
            api_version: K::API_VERSION,
            kind: K::KIND,
            found_api_version: String::from_utf8_lossy(api_version).into_owned(),
            found_kind: String::from_utf8_lossy(kind).into_owned(),
        });
    }
    let message = lookup::kind(K::API_VERSION, K::KIND).ok_or(Error::UnknownKind {
        api_version: K::API_VERSION,
        kind: K::KIND,
    })?;
    <K as serde::Deserialize>::deserialize(de::MessageDe::new(text(raw)?, message, 0)?)
}

/// The bytes of an envelope field (none when absent).
fn text(value: Option<wire::Value<'_>>) -> Result<&[u8], Error> {
    match value {
        None => Ok(&[]),
        Some(wire::Value::Len(b)) => Ok(b),
        Some(v) => Err(Error::BadSpecial("Unknown", v.wire_type())),
    }
}
