//! Protobuf bodies, as kube-apiserver sends them to a client whose `Accept`
//! header puts `application/vnd.kubernetes.protobuf` first: lists, watch
//! streams and error `Status`es of the built-in kinds (and the
//! `PartialObjectMetadata` view of any resource), encoded from the JSON the
//! server holds.
//!
//! The message table is kube-informer's own (`src/protobuf/schema*.rs` and
//! `lookup.rs` are the same files, linked here), generated from the
//! `.proto` files and Go struct tags of k8s.io/api 1.34; this module writes
//! what kube-informer's decoder reads. What Go's encoder writes for the same
//! objects is checked byte for byte against the vectors that
//! `conformance/go/cmd/protobuf-vectors` writes with k8s.io/api's encoder
//! (`tests/protobuf-vectors/`). Rule PB13 (CONFORMANCE.md).

mod encode;
// The same files as kube-informer's decoder, which uses all of them; the
// encoder needs the table and the lookups, not the decoder's helpers.
#[allow(dead_code)]
mod lookup;
#[allow(dead_code)]
mod schema;
// Generated one message a line, as scripts/protobuf/gen_schema.py writes it.
#[rustfmt::skip]
mod schema_generated;

use bytes::Bytes;
use serde_json::Value;

pub(crate) use encode::EncodeError;
use encode::put_len;

/// The media type of a protobuf body.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The bytes every protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// What a request's `Accept` header lets the server answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accept {
    /// Protobuf comes before JSON in the header.
    pub(crate) protobuf_first: bool,
    /// JSON is acceptable (listed, or no header at all).
    pub(crate) json: bool,
}

impl Accept {
    /// Reads the header's media types in order (parameters such as
    /// `as=PartialObjectMetadataList` are the metadata view's business, and
    /// no client here sends `q` weights).
    pub(crate) fn parse(header: Option<&str>) -> Self {
        let Some(header) = header else {
            return Accept {
                protobuf_first: false,
                json: true,
            };
        };
        let mut accept = Accept {
            protobuf_first: false,
            json: false,
        };
        for media in header.split(',') {
            let media = media.split(';').next().unwrap_or_default().trim();
            match media.to_ascii_lowercase().as_str() {
                CONTENT_TYPE => accept.protobuf_first |= !accept.json,
                "application/json" | "application/*" | "*/*" => accept.json = true,
                _ => {}
            }
        }
        accept
    }
}

/// The encoding of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    Json,
    Protobuf,
}

impl Accept {
    /// How to answer a list or watch about `kind`: protobuf when the client
    /// puts it first and the table has the kind, JSON when the client takes
    /// JSON, and `None` when it takes neither (kube-apiserver's 406 for a
    /// protobuf-only request about a custom resource).
    pub(crate) fn wire_for(self, api_version: &str, kind: &str) -> Option<Wire> {
        if self.protobuf_first && encodes(api_version, kind) {
            Some(Wire::Protobuf)
        } else if self.json {
            Some(Wire::Json)
        } else {
            None
        }
    }
}

/// Whether the table has a message for this kind: the built-in kinds of
/// k8s.io/api 1.34, their lists, `Status`, and the metadata-only kinds of
/// `meta.k8s.io/v1`. Custom resources have none: kube-apiserver serves
/// them as JSON only.
fn encodes(api_version: &str, kind: &str) -> bool {
    message_of(api_version, kind).is_some()
}

fn message_of(api_version: &str, kind: &str) -> Option<&'static schema::Message> {
    match (api_version, kind) {
        ("v1" | lookup::META_V1, "Status") => lookup::status(),
        _ => lookup::kind(api_version, kind),
    }
}

/// A whole body: `k8s\0`, then a `runtime.Unknown` naming the value's
/// `apiVersion` and `kind` and holding its message. A kind the table lacks
/// gets an envelope with no message in it (what a client must refuse as
/// the wrong kind).
pub(crate) fn body(value: &Value) -> Result<Vec<u8>, EncodeError> {
    let text = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let mut raw = Vec::new();
    if let Some(message) = message_of(api_version, kind) {
        encode::message(message, value, &mut raw)?;
    }
    let mut type_meta = Vec::new();
    put_len(&mut type_meta, 1, api_version.as_bytes());
    put_len(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_len(&mut out, 1, &type_meta);
    put_len(&mut out, 2, &raw);
    // contentEncoding and contentType: empty, and written all the same.
    put_len(&mut out, 3, &[]);
    put_len(&mut out, 4, &[]);
    Ok(out)
}

/// One watch frame: a 4-byte big-endian length, then a `WatchEvent` of
/// this type whose object is `object`'s whole body.
pub(crate) fn watch_frame(event_type: &str, object: &Value) -> Result<Bytes, EncodeError> {
    let mut raw_extension = Vec::new();
    put_len(&mut raw_extension, 1, &body(object)?);
    let mut event = Vec::new();
    put_len(&mut event, 1, event_type.as_bytes());
    put_len(&mut event, 2, &raw_extension);
    Ok(framed(&event))
}

/// A frame whose `WatchEvent` holds bytes that are no body at all: the
/// protobuf form of a malformed line.
pub(crate) fn malformed_watch_frame() -> Bytes {
    let mut raw_extension = Vec::new();
    put_len(&mut raw_extension, 1, b"{not protobuf");
    let mut event = Vec::new();
    put_len(&mut event, 1, b"ADDED");
    put_len(&mut event, 2, &raw_extension);
    framed(&event)
}

fn framed(message: &[u8]) -> Bytes {
    let mut frame = Vec::with_capacity(4 + message.len());
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    // The encoder against Go's: the bodies in `tests/protobuf-vectors/` were
    // written by k8s.io/apimachinery's protobuf serializer
    // (`conformance/go/cmd/protobuf-vectors`), each beside the JSON Go gives
    // for the same object; encoding that JSON here must give Go's bytes.

    use std::{fs, path::PathBuf};

    use serde_json::{Value, json};

    use super::*;

    /// The vectors' annotation whose value Go holds as `a`, 0xFF, `b`: their
    /// JSON shows it as `a\u{fffd}b` (encode.rs's `wire_text`).
    pub(super) const REPLACED_TEXT: &str = "a\u{fffd}b";
    pub(super) const GO_TEXT: &[u8] = b"a\xffb";

    /// Fails with where two bodies first differ, in hex, rather than both
    /// bodies whole.
    #[track_caller]
    fn assert_same_bytes(name: &str, ours: &[u8], go: &[u8]) {
        if ours == go {
            return;
        }
        let at = ours.iter().zip(go).take_while(|(a, b)| a == b).count();
        let around = |bytes: &[u8]| {
            let from = at.saturating_sub(16);
            let to = (at + 16).min(bytes.len());
            bytes[from..to]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        panic!(
            "{name}: {} bytes here, {} from Go; first difference at {at}\n ours: {}\n   go: {}",
            ours.len(),
            go.len(),
            around(ours),
            around(go)
        );
    }

    fn vectors() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../protobuf-vectors")
    }

    fn read(path: PathBuf) -> Vec<u8> {
        fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every pair NAME.pb / NAME.json of a directory.
    fn pairs(dir: PathBuf) -> Vec<(String, Vec<u8>, Value)> {
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| {
                let name = entry.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".pb").map(str::to_owned)
            })
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let pb = read(dir.join(format!("{name}.pb")));
                let json = serde_json::from_slice(&read(dir.join(format!("{name}.json")))).unwrap();
                (name, pb, json)
            })
            .collect()
    }

    #[test]
    fn pb13_objects_encode_to_gos_bytes() {
        let pairs = pairs(vectors());
        assert!(pairs.len() >= 14, "{} vectors", pairs.len());
        for (name, pb, json) in pairs {
            let mut ours = body(&json).unwrap();
            if name == "controllerrevision" {
                // Its `data` is a RawExtension: raw JSON text, kept by Go in the
                // order it was written, and by serde_json's map in key order.
                // Same length, same value, and the bytes around it the same.
                let text = serde_json::to_vec(&json["data"]).unwrap();
                let at = ours
                    .windows(text.len())
                    .position(|w| w == text)
                    .expect("the raw JSON is in the body");
                let go_text = pb.get(at..at + text.len()).expect("as long as Go's");
                let go_value: Value = serde_json::from_slice(go_text).unwrap();
                assert_eq!(go_value, json["data"], "{name}");
                ours[at..at + text.len()].copy_from_slice(go_text);
            }
            assert_same_bytes(&name, &ours, &pb);
        }
    }

    #[test]
    fn pb13_lists_and_statuses_encode_to_gos_bytes() {
        let pairs: Vec<_> = pairs(vectors().join("wire"))
            .into_iter()
            .filter(|(name, _, _)| name != "watch")
            .collect();
        assert_eq!(pairs.len(), 5);
        for (name, pb, json) in pairs {
            assert_same_bytes(&name, &body(&json).unwrap(), &pb);
        }
    }

    #[test]
    fn pb13_a_watch_stream_encodes_to_gos_frames() {
        let dir = vectors().join("wire");
        let events: Vec<Value> = serde_json::from_slice(&read(dir.join("watch.json"))).unwrap();
        let mut stream = Vec::new();
        for event in &events {
            let frame = watch_frame(event["type"].as_str().unwrap(), &event["object"]).unwrap();
            stream.extend_from_slice(&frame);
        }
        assert_same_bytes("watch", &stream, &read(dir.join("watch.pb")));
    }

    #[test]
    fn pb13_accept_headers() {
        let parse = |h| Accept::parse(Some(h));
        assert_eq!(
            parse("application/vnd.kubernetes.protobuf, application/json"),
            Accept {
                protobuf_first: true,
                json: true
            }
        );
        assert_eq!(
            parse(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
            ),
            Accept {
                protobuf_first: true,
                json: true
            }
        );
        assert_eq!(
            parse("application/json, application/vnd.kubernetes.protobuf"),
            Accept {
                protobuf_first: false,
                json: true
            }
        );
        assert_eq!(
            parse("application/vnd.kubernetes.protobuf"),
            Accept {
                protobuf_first: true,
                json: false
            }
        );
        assert_eq!(
            Accept::parse(None),
            Accept {
                protobuf_first: false,
                json: true
            }
        );
        assert!(encodes("v1", "PodList") && encodes("apps/v1", "Deployment"));
        assert!(encodes("meta.k8s.io/v1", "PartialObjectMetadataList") && encodes("v1", "Status"));
        assert!(!encodes("example.com/v1", "Widget"));
    }

    #[test]
    fn pb13_values_that_do_not_fit_their_message_are_errors() {
        let pod =
            |metadata: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata});
        for (metadata, path) in [
            (json!({"name": 7}), "ObjectMeta.name"),
            (json!({"generation": "x"}), "ObjectMeta.generation"),
            (json!({"creationTimestamp": "yesterday"}), "Time"),
            (json!({"labels": ["a"]}), "ObjectMeta.labels"),
        ] {
            let error = body(&pod(metadata.clone())).unwrap_err();
            assert!(error.to_string().starts_with(path), "{metadata}: {error}");
        }
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}});
        assert!(body(&secret).is_err());
        let port = json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"targetPort": 1.5}]}});
        assert!(body(&port).is_err());
    }

    #[test]
    fn pb13_a_kind_without_a_message_gets_an_empty_envelope() {
        let body =
            body(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}})).unwrap();
        assert_eq!(
            body,
            b"k8s\0\x0a\x18\x0a\x0eexample.com/v1\x12\x06Widget\x12\x00\x1a\x00\x22\x00"
        );
    }
}
