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

use std::any::Any;

use k8s_openapi::api::core::v1::Pod;

use super::direct_read::{Cursor, Error, len};
use super::{Envelope, direct_generated};

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

/// One object's message (a list item, or a watch event's object without
/// its envelope) decoded by the generated functions, when `T` is a type
/// they were generated for (`Pod`); `None` for any other type, which the
/// caller decodes as before. The source calls this first, so an informer
/// of Pods built with the feature reads protobuf without serde.
pub(crate) fn object<T: 'static>(raw: &[u8]) -> Option<Result<T, Error>> {
    // `T` is `Pod` exactly when a `&mut Option<T>` is a `&mut Option<Pod>`:
    // the generated value is moved in through the downcast, no copy, no
    // allocation, no unsafe code.
    let mut slot: Option<T> = None;
    let pod = (&mut slot as &mut dyn Any).downcast_mut::<Option<Pod>>()?;
    let mut decoded = Pod::default();
    if let Err(error) = direct_generated::decode_pod(raw, &mut decoded) {
        return Some(Err(error));
    }
    *pod = Some(decoded);
    slot.map(Ok)
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

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    /// The source's hook: a `Pod` is decoded, any other type is left to
    /// the serde path, and bad bytes are an error, not a panic.
    #[test]
    fn pb1_generated_object_for_pods_only() {
        // Pod { metadata: { name: "a" } }, no envelope (as a list item).
        let raw = b"\x0a\x03\x0a\x01a";
        let pod = super::object::<Pod>(raw).unwrap().unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("a"));
        assert!(super::object::<ConfigMap>(raw).is_none());
        // metadata's length runs past the end.
        assert!(super::object::<Pod>(b"\x0a\x09\x0a\x01a").unwrap().is_err());
    }
}
