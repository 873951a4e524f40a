//! Which [`ErrorClass`] a source error belongs to, for the error counters.

#[cfg(test)]
use super::error::DecodeTarget;
use super::error::{Error, api_status};
use crate::metrics::ErrorClass;

impl Error {
    /// The bounded class this error is counted under.
    pub(crate) fn class(&self) -> ErrorClass {
        match self {
            Self::List { source, .. } | Self::WatchStart { source, .. } => match api_status(source)
            {
                Some(status) => ErrorClass::from_status(status.code),
                None => request_class(source),
            },
            Self::WatchEvent { code, .. } => ErrorClass::from_status(*code),
            Self::WatchStream(_) => ErrorClass::Transport,
            Self::WatchIdle { .. } | Self::ListTimeout { .. } => ErrorClass::Timeout,
            // A line that is not JSON, or an ERROR event that is not a Status:
            // the watch itself is broken, not one object.
            Self::Decode { what, .. } if what.breaks_watch() => ErrorClass::MalformedLine,
            Self::UnknownEventType(_) => ErrorClass::MalformedLine,
            Self::Decode { .. }
            | Self::WrongKind { .. }
            | Self::MissingMetadata
            | Self::MissingName => ErrorClass::Decode,
            Self::VeryShortWatch(_)
            | Self::StreamingListIncomplete
            | Self::UnexpectedInitialEvent(_)
            | Self::BuildRequest(_) => ErrorClass::Other,
        }
    }
}

/// A request that got no API status: a body that did not decode, or a
/// connection that failed.
fn request_class(error: &kube::Error) -> ErrorClass {
    match error {
        kube::Error::SerdeError(_) => ErrorClass::Decode,
        _ => ErrorClass::Transport,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_status_and_kind() {
        let event = |code| Error::WatchEvent {
            resource: "pods".into(),
            code,
            reason: String::new(),
            message: String::new(),
        };
        assert_eq!(event(410).class(), ErrorClass::Gone);
        assert_eq!(event(429).class(), ErrorClass::TooManyRequests);
        assert_eq!(event(403).class(), ErrorClass::ClientStatus);
        assert_eq!(event(503).class(), ErrorClass::ServerStatus);
        let idle = Error::WatchIdle {
            resource: "pods".into(),
            idle: std::time::Duration::from_secs(1),
        };
        assert_eq!(idle.class(), ErrorClass::Timeout);
        let line = Error::Decode {
            what: DecodeTarget::WatchLine,
            source: serde_json::from_str::<u8>("x").unwrap_err(),
        };
        assert_eq!(line.class(), ErrorClass::MalformedLine);
        let object = Error::Decode {
            what: DecodeTarget::WatchObject,
            source: serde_json::from_str::<u8>("x").unwrap_err(),
        };
        assert_eq!(object.class(), ErrorClass::Decode);
        assert_eq!(Error::MissingName.class(), ErrorClass::Decode);
    }
}
