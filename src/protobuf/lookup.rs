//! Lookups in the generated table: a message by its index, a top-level
//! kind by its apiVersion and kind.

use super::schema::Message;
use super::schema_generated::{KINDS, MESSAGES};

/// The message with this index (an index from the table itself).
pub(crate) fn message(index: u16) -> &'static Message {
    &MESSAGES[usize::from(index)]
}

/// The message of a top-level kind, by its apiVersion and kind.
pub(crate) fn kind(api_version: &str, kind: &str) -> Option<&'static Message> {
    kind_entry(api_version, kind).map(|(_, _, message)| message)
}

/// A top-level kind's entry, its names as the table holds them; the
/// metadata-only kinds of `meta.k8s.io/v1` too.
pub(crate) fn kind_entry(
    api_version: &str,
    kind: &str,
) -> Option<(&'static str, &'static str, &'static Message)> {
    if let Ok(i) = KINDS.binary_search_by(|&(a, k, _)| (a, k).cmp(&(api_version, kind))) {
        return Some((KINDS[i].0, KINDS[i].1, message(KINDS[i].2)));
    }
    if api_version != META_V1 {
        return None;
    }
    metadata_kinds()
        .iter()
        .flatten()
        .find(|m| m.name == kind)
        .map(|m| (META_V1, m.name, *m))
}

/// The apiVersion of the metadata-only kinds.
pub(crate) const META_V1: &str = "meta.k8s.io/v1";

/// `meta/v1 PartialObjectMetadata` and its list: what the API server
/// answers a metadata-only request with, for any resource. The table holds
/// them as messages, not as kinds of a group of their own.
fn metadata_kinds() -> &'static [Option<&'static Message>; 2] {
    static KINDS: std::sync::OnceLock<[Option<&'static Message>; 2]> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| {
        ["PartialObjectMetadata", "PartialObjectMetadataList"].map(|name| {
            MESSAGES
                .iter()
                .find(|m| m.name == name && m.field(1).is_some_and(|(_, f)| f.name == "metadata"))
        })
    })
}

/// `meta/v1 Status`, which the table holds as a message but not as a kind
/// (it is every group's error body).
pub(crate) fn status() -> Option<&'static Message> {
    static STATUS: std::sync::OnceLock<Option<&'static Message>> = std::sync::OnceLock::new();
    *STATUS.get_or_init(|| {
        MESSAGES
            .iter()
            .find(|m| m.name == "Status" && m.field(6).is_some_and(|(_, f)| f.name == "code"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::schema::{INLINE, Kind, Label};

    /// The generator writes fields in number order, message references in
    /// range and kinds sorted: what lookups by binary search rely on.
    #[test]
    fn table_is_sorted_and_closed() {
        for msg in MESSAGES.iter() {
            assert!(
                msg.fields.windows(2).all(|w| w[0].number < w[1].number),
                "{}",
                msg.name
            );
            assert!(msg.fields.len() <= 128, "{}", msg.name);
            for field in msg.fields {
                if let Kind::Msg(i) = field.kind {
                    assert!(usize::from(i) < MESSAGES.len());
                }
                if field.flags & INLINE != 0 {
                    assert!(matches!(field.kind, Kind::Msg(_)) && field.label == Label::Single);
                }
            }
        }
        assert!(
            KINDS
                .windows(2)
                .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1))
        );
        assert_eq!(kind("v1", "Pod").map(|m| m.name), Some("Pod"));
        assert_eq!(
            kind("apps/v1", "Deployment").map(|m| m.name),
            Some("Deployment")
        );
        assert_eq!(
            kind("coordination.k8s.io/v1", "Lease").map(|m| m.name),
            Some("Lease")
        );
        assert!(kind("v1", "Nope").is_none());
        assert_eq!(
            kind(META_V1, "PartialObjectMetadata").map(|m| m.fields.len()),
            Some(1)
        );
        assert_eq!(
            kind(META_V1, "PartialObjectMetadataList").map(|m| m.fields.len()),
            Some(2)
        );
        assert!(kind("v1", "PartialObjectMetadata").is_none());
        assert_eq!(status().map(|m| m.fields.len()), Some(6));
    }
}
