//! What a failed watch means: where a refused start goes next, and which
//! errors say the resourceVersion is gone or the stream cannot be trusted.

use super::phase::Next;
use crate::source::error::{
    Error, api_status, is_expired, is_retriable_watch_start, is_too_large_resource_version,
};

/// Where a failed watch start goes (R4): 429 and refused connections
/// re-watch after a backoff, the rest relists after one.
pub(super) fn after_watch_start_error(error: &Error) -> Next {
    match error {
        Error::WatchStart { source, .. } if is_retriable_watch_start(source) => {
            Next::BackoffThenWatch
        }
        _ => Next::BackoffThenRelist,
    }
}

/// Whether a watch failed because its resourceVersion is unavailable.
pub(super) fn is_unavailable_resource_version(error: &Error) -> bool {
    match error {
        Error::WatchStart { source, .. } => api_status(source)
            .is_some_and(|s| is_expired(s.code, &s.reason) || is_too_large_resource_version(s)),
        Error::WatchEvent { code, reason, .. } => is_expired(*code, reason),
        _ => false,
    }
}

/// Whether a line error means the rest of the stream cannot be trusted.
pub(super) fn ends_watch(error: &Error) -> bool {
    matches!(error, Error::Decode { what, .. } if what.breaks_watch())
}
