//! Watch lines: one JSON event per line, parsed here without trusting the
//! server, so that each kind of bad line gets its own error.
//!
//! A line is read into an envelope whose `object` stays unparsed text
//! borrowed from the line, then, by type, the object is decoded into its
//! type once (after the R7 checks), or read as a bookmark or an error
//! `Status`.
//!
//! A protobuf watch has frames instead of lines, each a `WatchEvent`
//! message; its faults are reported as the JSON line's: a frame that is no
//! watch event ends the watch, a bad object in a whole frame is skipped.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{
    decode::{Decoder, protobuf_error},
    error::{DecodeTarget, Error},
    lines::Framing,
};
use crate::protobuf::WatchEvent;

/// How an object changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Modified,
    Deleted,
}

/// One parsed watch line.
#[derive(Debug)]
pub(crate) enum WatchLine<T> {
    /// An object event, decoded.
    Object(Change, T),
    /// A progress marker.
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
    /// The server reports an error; the watch ends.
    Error {
        code: u16,
        reason: String,
        message: String,
    },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Bookmark<'a> {
    #[serde(borrow)]
    metadata: Option<BookmarkMeta<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta<'a> {
    #[serde(borrow)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow)]
    annotations: Option<BookmarkAnnotations<'a>>,
}

/// The one annotation a bookmark may carry: `k8s.io/initial-events-end`
/// ends a streaming list's initial events.
#[derive(Deserialize)]
struct BookmarkAnnotations<'a> {
    #[serde(rename = "k8s.io/initial-events-end", borrow)]
    initial_events_end: Option<Cow<'a, str>>,
}

/// Parses one event as its body was cut: a JSON line ([`parse_line`]) or
/// a protobuf frame ([`parse_frame`]).
pub(crate) fn parse_event<T: DeserializeOwned + 'static>(
    event: &[u8],
    framing: Framing,
    decoder: &Decoder,
) -> Result<Option<WatchLine<T>>, Error> {
    match framing {
        Framing::Lines => parse_line(event, decoder),
        Framing::LengthPrefixed => parse_frame(event, decoder).map(Some),
    }
}

/// Decodes one protobuf frame (a `WatchEvent` message).
pub(crate) fn parse_frame<T: DeserializeOwned + 'static>(
    frame: &[u8],
    decoder: &Decoder,
) -> Result<WatchLine<T>, Error> {
    let event = decoder
        .schema(DecodeTarget::WatchLine)?
        .watch_event(frame)
        // The frame, its type, a bookmark or an ERROR's Status: the watch
        // cannot be trusted on (a `WatchLine` error, which ends it).
        .map_err(|error| protobuf_error(error, DecodeTarget::WatchLine))?;
    let object = |change, object: Result<T, _>| {
        object
            .map(|object| WatchLine::Object(change, object))
            .map_err(|error| protobuf_error(error, DecodeTarget::WatchObject))
    };
    match event {
        WatchEvent::Added(o) => object(Change::Added, o),
        WatchEvent::Modified(o) => object(Change::Modified, o),
        WatchEvent::Deleted(o) => object(Change::Deleted, o),
        WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        } => Ok(WatchLine::Bookmark {
            resource_version,
            initial_events_end,
        }),
        WatchEvent::Error(status) => Ok(WatchLine::Error {
            code: status.code,
            reason: status.reason,
            message: status.message,
        }),
    }
}

/// Parses one line and decodes its object; `Ok(None)` for a blank line.
///
/// A line in the exact shape API servers write ([`usual_shape`]) has its
/// object decoded straight from the line, without first reading the
/// envelope (a pass over the whole object, its text being most of the
/// line). That decode succeeds only if the object's text is one whole
/// JSON value, in which case the line is exactly that envelope, and the
/// full parse would give the same event. Any failure there, and any other
/// line, goes through the full parse, which alone decides errors.
pub(crate) fn parse_line<T: DeserializeOwned>(
    line: &[u8],
    decoder: &Decoder,
) -> Result<Option<WatchLine<T>>, Error> {
    if let Some((change, object)) = usual_shape(line)
        && let Ok(object) = decoder.object_text(object, DecodeTarget::WatchObject)
    {
        return Ok(Some(WatchLine::Object(change, object)));
    }
    parse_envelope(line, decoder)
}

/// The change and the object's text of a line shaped as every API server
/// writes object events: `{"type":"ADDED","object":…}` (or `MODIFIED`,
/// `DELETED`), those two members in that order, no whitespace between the
/// tokens (around the line is fine). Nothing is checked of the text after
/// `"object":` but that it is UTF-8 and the line ends with `}`.
fn usual_shape(line: &[u8]) -> Option<(Change, &str)> {
    let rest = line.trim_ascii().strip_prefix(br#"{"type":""#)?;
    let (change, rest) = [
        (Change::Modified, &b"MODIFIED\""[..]),
        (Change::Added, &b"ADDED\""[..]),
        (Change::Deleted, &b"DELETED\""[..]),
    ]
    .into_iter()
    .find_map(|(change, name)| Some((change, rest.strip_prefix(name)?)))?;
    let object = rest.strip_prefix(br#","object":"#)?.strip_suffix(b"}")?;
    Some((change, std::str::from_utf8(object).ok()?))
}

/// [`parse_line`] by reading the envelope first: every line's verdict,
/// errors included.
fn parse_envelope<T: DeserializeOwned>(
    line: &[u8],
    decoder: &Decoder,
) -> Result<Option<WatchLine<T>>, Error> {
    if line.trim_ascii().is_empty() {
        return Ok(None);
    }
    let envelope: Envelope<'_> = serde_json::from_slice(line).map_err(|source| Error::Decode {
        what: DecodeTarget::WatchLine,
        source,
    })?;
    let change = match envelope.event_type.as_ref() {
        "ADDED" => Change::Added,
        "MODIFIED" => Change::Modified,
        "DELETED" => Change::Deleted,
        "BOOKMARK" => return bookmark(envelope.object).map(Some),
        "ERROR" => {
            let text = envelope.object.map_or("null", RawValue::get);
            let status: kube::core::Status =
                serde_json::from_str(text).map_err(|source| Error::Decode {
                    what: DecodeTarget::WatchErrorStatus,
                    source,
                })?;
            return Ok(Some(WatchLine::Error {
                code: status.code,
                reason: status.reason,
                message: status.message,
            }));
        }
        other => return Err(Error::UnknownEventType(other.to_owned())),
    };
    let object = envelope.object.ok_or(Error::MissingMetadata)?;
    Ok(Some(WatchLine::Object(
        change,
        decoder.object(object, DecodeTarget::WatchObject)?,
    )))
}

/// A bookmark's resourceVersion and whether it ends a streaming list's
/// initial events; a bookmark without them is `MissingMetadata`.
fn bookmark<T>(object: Option<&RawValue>) -> Result<WatchLine<T>, Error> {
    let text = object.ok_or(Error::MissingMetadata)?.get();
    let bookmark: Bookmark<'_> = serde_json::from_str(text).map_err(|_| Error::MissingMetadata)?;
    let metadata = bookmark.metadata.ok_or(Error::MissingMetadata)?;
    let resource_version = metadata
        .resource_version
        .ok_or(Error::MissingMetadata)?
        .into_owned();
    let initial_events_end = metadata
        .annotations
        .and_then(|a| a.initial_events_end)
        .is_some_and(|value| value == "true");
    Ok(WatchLine::Bookmark {
        resource_version,
        initial_events_end,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn parse(line: &str) -> Result<Option<WatchLine<ConfigMap>>, Error> {
        let mut decoder = Decoder::new();
        decoder.learn_list_kind(Some("ConfigMapList"));
        parse_line(line.as_bytes(), &decoder)
    }

    #[test]
    fn parses_each_line_kind() {
        match parse(r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#) {
            Ok(Some(WatchLine::Object(Change::Added, cm))) => {
                assert_eq!(cm.metadata.name.as_deref(), Some("a"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(r#"{"object":{"kind":"ConfigMap","metadata":{"name":"a"}},"type":"DELETED"}"#),
            Ok(Some(WatchLine::Object(Change::Deleted, _)))
        ));
        assert!(matches!(
            parse(
                r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#
            ),
            Ok(Some(WatchLine::Bookmark {
                initial_events_end: true,
                ..
            }))
        ));
        match parse(
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"12"}}}"#,
        ) {
            Ok(Some(WatchLine::Bookmark {
                resource_version,
                initial_events_end: false,
            })) => assert_eq!(resource_version, "12"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(
                r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"old"}}"#
            ),
            Ok(Some(WatchLine::Error { code: 410, .. }))
        ));
        assert!(
            matches!(parse(r#"{"type":"NOPE","object":{}}"#), Err(Error::UnknownEventType(t)) if t == "NOPE")
        );
        assert!(matches!(
            parse("{not json"),
            Err(Error::Decode {
                what: DecodeTarget::WatchLine,
                ..
            })
        ));
        assert!(matches!(
            parse(r#"{"type":"BOOKMARK","object":{}}"#),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(
            parse(r#"{"type":"ADDED"}"#),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(
            parse(r#"{"type":"ERROR","object":"nope"}"#),
            Err(Error::Decode {
                what: DecodeTarget::WatchErrorStatus,
                ..
            })
        ));
        assert!(matches!(parse(""), Ok(None)));
        assert!(matches!(parse(" \r"), Ok(None)));
    }

    /// What the full parse gives, and what `parse_line` gives, as text.
    fn both(line: &[u8]) -> (String, String) {
        let mut decoder = Decoder::new();
        decoder.learn_list_kind(Some("ConfigMapList"));
        let full = parse_envelope::<ConfigMap>(line, &decoder);
        let line = parse_line::<ConfigMap>(line, &decoder);
        (format!("{line:?}"), format!("{full:?}"))
    }

    const USUAL: &str = r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v","l":"w"}}}"#;

    // The shortcut for lines shaped as servers write them gives what the
    // full parse gives, for lines of that shape and for lines that only
    // look like it.
    #[test]
    fn usual_lines_parse_as_the_envelope_does() {
        assert!(usual_shape(USUAL.as_bytes()).is_some());
        let lines = [
            USUAL.to_owned(),
            format!("  {USUAL}\r"),
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#.to_owned(),
            r#"{"type":"DELETED","object":{"metadata":{"name":"a"}}}"#.to_owned(),
            // Another member after the object: the full parse takes it.
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"extra":[1]}"#.to_owned(),
            // Two objects: a duplicate member, refused by the full parse.
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{"metadata":{"name":"b"}}}"#.to_owned(),
            r#"{"type":"ADDED","object":{"metadata":{"name":""}}}"#.to_owned(),
            r#"{"type":"ADDED","object":{"kind":"Secret","metadata":{"name":"s"}}}"#.to_owned(),
            r#"{"type":"ADDED","object":null}"#.to_owned(),
            r#"{"type":"ADDED","object":}"#.to_owned(),
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}"#.to_owned(),
            r#"{"type":"ADD\u0045D","object":{"metadata":{"name":"a"}}}"#.to_owned(),
            r#"{"type": "ADDED", "object": {"metadata": {"name": "a"}}}"#.to_owned(),
            r#"{"type":"ADDEDX","object":{"metadata":{"name":"a"}}}"#.to_owned(),
        ];
        for line in &lines {
            let (line_parse, full) = both(line.as_bytes());
            assert_eq!(line_parse, full, "{line}");
        }
        // Not UTF-8 inside the object.
        let mut bytes = USUAL.as_bytes().to_vec();
        bytes[60] = 0xff;
        let (line_parse, full) = both(&bytes);
        assert_eq!(line_parse, full);
        assert!(full.starts_with("Err("), "{full}");
    }

    proptest::proptest! {
        // Any single byte of a usual line changed, dropped or doubled: the
        // two parses still agree.
        #[test]
        fn altered_usual_lines_parse_as_the_envelope_does(
            at in 0..USUAL.len(),
            byte in proptest::prelude::any::<u8>(),
            how in 0..3u8,
        ) {
            let mut line = USUAL.as_bytes().to_vec();
            match how {
                0 => line[at] = byte,
                1 => { line.remove(at); }
                _ => line.insert(at, line[at]),
            }
            let (line_parse, full) = both(&line);
            proptest::prop_assert_eq!(line_parse, full);
        }
    }

    /// R7: the object's checks run on watch lines as on list items.
    #[test]
    fn r7_watch_objects_are_checked() {
        assert!(matches!(
            parse(r#"{"type":"ADDED","object":{"kind":"ConfigMap"}}"#),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(
            parse(r#"{"type":"MODIFIED","object":{"metadata":{"name":""}}}"#),
            Err(Error::MissingName)
        ));
        assert!(matches!(
            parse(r#"{"type":"ADDED","object":{"kind":"Secret","metadata":{"name":"s"}}}"#),
            Err(Error::WrongKind { .. })
        ));
        assert!(matches!(
            parse(r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"data":[]}}"#),
            Err(Error::Decode {
                what: DecodeTarget::WatchObject,
                ..
            })
        ));
    }
}
