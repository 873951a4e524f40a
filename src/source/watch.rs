//! Watch lines: one JSON event per line, parsed here without trusting the
//! server, so that each kind of bad line gets its own error.
//!
//! A line is read into an envelope whose `object` stays unparsed text
//! borrowed from the line, then, by type, the object is decoded into its
//! type once (after the R7 checks), or read as a bookmark or an error
//! `Status`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{
    decode::Decoder,
    error::{DecodeTarget, Error},
};

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

/// Parses one line and decodes its object; `Ok(None)` for a blank line.
pub(crate) fn parse_line<T: DeserializeOwned>(
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
