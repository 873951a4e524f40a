//! Which encoding answers a request, from its `Accept` header, as a
//! kube-apiserver chooses: the first media type in the header that the
//! server can produce wins. `application/json` and
//! `application/vnd.kubernetes.protobuf` give the Pods; with
//! `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (lists) or
//! `as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (watches) they give the
//! Pods' metadata only. No header, `*/*` and `application/*` mean JSON.

use super::protobuf::MEDIA_TYPE as PROTOBUF;

/// An encoding the server answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Pods in JSON.
    Json,
    /// `PartialObjectMetadata` in JSON.
    JsonMetadata,
    /// Pods in protobuf.
    Protobuf,
    /// `PartialObjectMetadata` in protobuf.
    ProtobufMetadata,
}

impl Encoding {
    /// Whether the objects are metadata only.
    pub fn is_metadata(self) -> bool {
        matches!(self, Self::JsonMetadata | Self::ProtobufMetadata)
    }

    /// Whether the encoding is protobuf.
    pub fn is_protobuf(self) -> bool {
        matches!(self, Self::Protobuf | Self::ProtobufMetadata)
    }
}

/// The encoding for a list (`watch` false) or a watch with `accept`, among
/// those `available` says the server has; `None` when none fits (the server
/// then answers 406).
pub fn negotiate(
    accept: Option<&str>,
    watch: bool,
    available: impl Fn(Encoding) -> bool,
) -> Option<Encoding> {
    let Some(accept) = accept.filter(|accept| !accept.trim().is_empty()) else {
        return Some(Encoding::Json);
    };
    let partial_kind = if watch {
        "PartialObjectMetadata"
    } else {
        "PartialObjectMetadataList"
    };
    accept.split(',').find_map(|entry| {
        let mut parts = entry.split(';').map(str::trim);
        let media_type = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut kind, mut group, mut version) = (None, None, None);
        for parameter in parts {
            match parameter.split_once('=') {
                Some(("as", value)) => kind = Some(value),
                Some(("g", value)) => group = Some(value),
                Some(("v", value)) => version = Some(value),
                _ => {}
            }
        }
        let metadata = match (kind, group, version) {
            (None, None, None) => false,
            (Some(kind), Some("meta.k8s.io"), Some("v1")) if kind == partial_kind => true,
            _ => return None,
        };
        let encoding = match (media_type.as_str(), metadata) {
            ("application/json" | "*/*" | "application/*", false) => Encoding::Json,
            ("application/json", true) => Encoding::JsonMetadata,
            (PROTOBUF, false) => Encoding::Protobuf,
            (PROTOBUF, true) => Encoding::ProtobufMetadata,
            _ => return None,
        };
        available(encoding).then_some(encoding)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    const METADATA_WATCH: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

    #[test]
    fn the_first_producible_media_type_wins() {
        let all = |_| true;
        let json_only = |encoding: Encoding| !encoding.is_protobuf();
        assert_eq!(negotiate(None, false, all), Some(Encoding::Json));
        assert_eq!(negotiate(Some("*/*"), true, all), Some(Encoding::Json));
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                false,
                all
            ),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                false,
                json_only
            ),
            Some(Encoding::Json)
        );
        assert_eq!(
            negotiate(Some(METADATA_LIST), false, all),
            Some(Encoding::ProtobufMetadata)
        );
        assert_eq!(
            negotiate(Some(METADATA_LIST), false, json_only),
            Some(Encoding::JsonMetadata)
        );
        assert_eq!(
            negotiate(Some(METADATA_WATCH), true, all),
            Some(Encoding::ProtobufMetadata)
        );
        assert_eq!(negotiate(Some("application/yaml"), false, all), None);
    }

    #[test]
    fn a_list_kind_on_a_watch_is_not_acceptable() {
        // The watch form of a metadata list is PartialObjectMetadata; an
        // entry naming the list kind on a watch is skipped, as is any
        // other kind.
        assert_eq!(
            negotiate(Some(METADATA_LIST), true, |_| true),
            Some(Encoding::Json)
        );
        assert_eq!(
            negotiate(
                Some("application/json;as=Table;g=meta.k8s.io;v=v1"),
                false,
                |_| true
            ),
            None
        );
    }
}
