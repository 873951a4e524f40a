//! A `Status` body: what the API server answers instead of an object when
//! a request fails (403 Forbidden, 410 Gone, 429 Too Many Requests, ...),
//! and what an ERROR watch event holds. Rule PB6.

use kube::core::Status;

use super::{Envelope, Error, de, lookup};

/// Decodes a protobuf `Status` body (`k8s\0`, an envelope naming `v1`
/// `Status`) into the `Status` the JSON path reads: code, reason, message
/// and details.
///
/// ```
/// use kube_informer::unstable::protobuf::{decode_status, Error};
///
/// // `k8s\0`, then Unknown { typeMeta: { "v1", "Status" }, raw: Status {
/// //     reason: "Expired", code: 410 } }
/// let body = b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status\x12\x0c\x22\x07Expired\x30\x9a\x03";
/// let status = decode_status(body)?;
/// assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
/// # Ok::<(), Error>(())
/// ```
pub fn decode_status(bytes: &[u8]) -> Result<Status, Error> {
    let envelope = Envelope::open(bytes)?;
    envelope.expect("v1", "Status", "Status")?;
    let message = lookup::status().ok_or(Error::UnknownKind {
        api_version: "v1",
        kind: "Status",
    })?;
    serde::Deserialize::deserialize(de::MessageDe::new(envelope.raw, message, 0)?)
}
