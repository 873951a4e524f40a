//! The metadata-only JSON forms of the workload, for clients that ask for
//! `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` on
//! lists and `…;as=PartialObjectMetadata;…` on watches: each Pod reduced to
//! `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":…}`,
//! composed before any runner connects.

use bytes::Bytes;
use serde_json::Value;

/// The workload's Pods as `PartialObjectMetadata` JSON.
#[derive(Debug, Clone)]
pub struct MetadataWorkload {
    /// Each listed Pod's metadata (a `PartialObjectMetadataList` item).
    pub items: Vec<Bytes>,
    /// Each watch event, one line `{"type":…,"object":…}\n`.
    pub events: Vec<Bytes>,
}

impl MetadataWorkload {
    /// Reduces the listed Pods and the watch events' objects (each JSON) to
    /// their metadata.
    pub fn from_json(
        items: &[Bytes],
        event_types: &[&str],
        event_objects: &[Bytes],
    ) -> Result<Self, serde_json::Error> {
        let items = items
            .iter()
            .map(|item| partial(item).map(Bytes::from))
            .collect::<Result<_, _>>()?;
        let events = event_types
            .iter()
            .zip(event_objects)
            .map(|(event_type, object)| {
                let mut line = format!(r#"{{"type":"{event_type}","object":"#).into_bytes();
                line.extend_from_slice(&partial(object)?);
                line.extend_from_slice(b"}\n");
                Ok(Bytes::from(line))
            })
            .collect::<Result<_, serde_json::Error>>()?;
        Ok(Self { items, events })
    }
}

/// `object`'s metadata as a `PartialObjectMetadata`.
fn partial(object: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut value: Value = serde_json::from_slice(object)?;
    let metadata = value
        .get_mut("metadata")
        .map(Value::take)
        .unwrap_or_else(|| Value::Object(Default::default()));
    let mut out =
        br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#.to_vec();
    serde_json::to_writer(&mut out, &metadata)?;
    out.push(b'}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_objects_keep_the_metadata_and_nothing_else() {
        let pod = Bytes::from_static(
            br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"4"},"spec":{"nodeName":"n"}}"#,
        );
        let workload = MetadataWorkload::from_json(
            std::slice::from_ref(&pod),
            &["MODIFIED"],
            std::slice::from_ref(&pod),
        )
        .unwrap();
        let item: Value = serde_json::from_slice(&workload.items[0]).unwrap();
        assert_eq!(
            item,
            serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "a", "resourceVersion": "4"}})
        );
        let line = &workload.events[0];
        assert_eq!(line.last(), Some(&b'\n'));
        let event: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(event["type"], "MODIFIED");
        assert_eq!(event["object"], item);
    }
}
