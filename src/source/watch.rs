//! Watch lines: one JSON event per line, parsed here without trusting the
//! server, so that each kind of bad line gets its own error.

use serde::Deserialize;
use serde_json::Value;

use super::error::Error;

/// The annotation on the bookmark that ends a streaming list's initial events.
pub(crate) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How an object changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Modified,
    Deleted,
}

/// One parsed watch line.
#[derive(Debug)]
pub(crate) enum WatchLine {
    /// An object event; the object is still raw JSON.
    Object(Change, Value),
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
struct RawLine {
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    object: Value,
}

/// Parses one line; `Ok(None)` for a blank line.
pub(crate) fn parse_line(line: &str) -> Result<Option<WatchLine>, Error> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let raw: RawLine = serde_json::from_str(line).map_err(|source| Error::Decode {
        what: "watch line",
        source,
    })?;
    let parsed = match raw.event_type.as_str() {
        "ADDED" => WatchLine::Object(Change::Added, raw.object),
        "MODIFIED" => WatchLine::Object(Change::Modified, raw.object),
        "DELETED" => WatchLine::Object(Change::Deleted, raw.object),
        "BOOKMARK" => {
            let metadata = raw.object.get("metadata").ok_or(Error::MissingMetadata)?;
            let resource_version = metadata
                .get("resourceVersion")
                .and_then(Value::as_str)
                .ok_or(Error::MissingMetadata)?
                .to_owned();
            let initial_events_end = metadata
                .get("annotations")
                .and_then(|a| a.get(INITIAL_EVENTS_END))
                .and_then(Value::as_str)
                == Some("true");
            WatchLine::Bookmark {
                resource_version,
                initial_events_end,
            }
        }
        "ERROR" => {
            let status: kube::core::Status =
                serde_json::from_value(raw.object).map_err(|source| Error::Decode {
                    what: "watch error status",
                    source,
                })?;
            WatchLine::Error {
                code: status.code,
                reason: status.reason,
                message: status.message,
            }
        }
        other => return Err(Error::UnknownEventType(other.to_owned())),
    };
    Ok(Some(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_line_kind() {
        assert!(matches!(
            parse_line(r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#),
            Ok(Some(WatchLine::Object(Change::Added, _)))
        ));
        assert!(matches!(
            parse_line(
                r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#
            ),
            Ok(Some(WatchLine::Bookmark {
                initial_events_end: true,
                ..
            }))
        ));
        assert!(matches!(
            parse_line(
                r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"old"}}"#
            ),
            Ok(Some(WatchLine::Error { code: 410, .. }))
        ));
        assert!(
            matches!(parse_line(r#"{"type":"NOPE","object":{}}"#), Err(Error::UnknownEventType(t)) if t == "NOPE")
        );
        assert!(matches!(
            parse_line("{not json"),
            Err(Error::Decode {
                what: "watch line",
                ..
            })
        ));
        assert!(matches!(
            parse_line(r#"{"type":"BOOKMARK","object":{}}"#),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(parse_line(""), Ok(None)));
    }
}
