//! Comparing resourceVersions, and what a write left for a cache to show:
//! the one "has the cache caught up with this write" rule that
//! [`Store::wait_for`](crate::Store::wait_for) and the controller's
//! [read-your-own-writes gate](crate::controller::Controller::read_own_writes)
//! both use.
//!
//! # Rules
//!
//! - **RW1 Comparable versions.** Two resourceVersions are ordered only
//!   when both are canonical decimal integers: ASCII digits, no sign, no
//!   leading zero (`"0"` itself is canonical). Such versions compare as
//!   the integers they spell, of any length ([`compare`]). Kubernetes
//!   promises this form, and that it orders the changes of one resource,
//!   from 1.35 on (KEP-5504); every etcd-backed API server has always
//!   answered in it.
//! - **RW2 Fallback.** When either version is not canonical (an
//!   aggregated API server's opaque token, say), [`compare`] answers
//!   `None` and the only version known to be at or after a written one is
//!   that version itself: a cache has caught up when it holds exactly the
//!   written version. A cache that has already moved past it to another
//!   opaque version is not recognised as caught up (nothing says which of
//!   the two is newer), so a wait for it ends only at its caller's
//!   deadline.
//! - **RW3 Deletions.** A write that removed the object
//!   ([`Written::Deleted`]) is caught up once the cache no longer holds
//!   the key. A write that left the object behind (a create, an update, a
//!   delete that only set a deletion timestamp because finalizers remain)
//!   is caught up when the cache holds the key at that version or, under
//!   RW1, a later one; a cache without the key has not caught up with it.
//!
//! # What a later deletion does to a wait
//!
//! An object the program wrote and someone else deleted before the cache
//! saw the write is never held at or after the written version: the wait
//! for it ends at its deadline. A key deleted and created again before the
//! cache looked is not absent when the waiter looks, so a wait for the
//! deletion ends at its deadline too (under RW1 the new object's version is
//! later than any version of the old one, but the deletion's own version is
//! not in the answer to a `DELETE`, so there is nothing to compare it
//! with).

use std::cmp::Ordering;

/// How resourceVersion `a` stands to `b` (RW1): `Some` ordering when both
/// are canonical decimal integers (digits only, no leading zero), compared
/// as integers of any length; `None` when either is not (RW2), including
/// the empty string.
///
/// # Examples
///
/// ```
/// use std::cmp::Ordering;
/// use kube_informer::resource_version::compare;
///
/// assert_eq!(compare("9", "10"), Some(Ordering::Less)); // as integers, not as text
/// assert_eq!(compare("123456789012345678901234567890", "99"), Some(Ordering::Greater));
/// assert_eq!(compare("42", "42"), Some(Ordering::Equal));
/// assert_eq!(compare("042", "42"), None); // a leading zero: not comparable
/// assert_eq!(compare("abc", "abc"), None); // opaque, even when equal
/// ```
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    if !is_canonical(a) || !is_canonical(b) {
        return None;
    }
    // Without leading zeros, a longer number is a larger one; numbers of
    // one length compare digit by digit, as their text does.
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether `version` is a canonical decimal integer (RW1).
fn is_canonical(version: &str) -> bool {
    let bytes = version.as_bytes();
    match bytes {
        [] => false,
        [b'0'] => true,
        [b'0', ..] => false,
        _ => bytes.iter().all(u8::is_ascii_digit),
    }
}

/// What a write left on the API server, as a cache can come to show it:
/// the object at a resourceVersion, or no object.
///
/// # Examples
///
/// ```
/// use kube_informer::resource_version::Written;
///
/// let created = Written::Version("17".into());
/// assert!(created.seen_in(Some("17")));
/// assert!(created.seen_in(Some("23"))); // a later version of the object
/// assert!(!created.seen_in(Some("9")));
/// assert!(!created.seen_in(None)); // the cache has not seen the object yet
///
/// assert!(Written::Deleted.seen_in(None));
/// assert!(!Written::Deleted.seen_in(Some("23")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Written {
    /// The object exists at this resourceVersion: what a create, an update,
    /// a patch, or a delete that left the object terminating returned.
    Version(String),
    /// The write removed the object.
    Deleted,
}

impl Written {
    /// Whether a cache that holds the object at `held` (`None`: holds no
    /// object under its key) has caught up with this write (RW1–RW3).
    ///
    /// See the [type docs](Written) for an example.
    pub fn seen_in(&self, held: Option<&str>) -> bool {
        match (self, held) {
            (Self::Deleted, held) => held.is_none(),
            (Self::Version(_), None) => false,
            (Self::Version(written), Some(held)) => match compare(held, written) {
                Some(order) => order != Ordering::Less,
                // Opaque versions: only the very version is known to be it.
                None => held == written,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rw1_canonical_forms() {
        for good in ["0", "1", "10", "18446744073709551616999"] {
            assert!(is_canonical(good), "{good}");
        }
        for bad in ["", "00", "01", "-1", "+1", "1 ", "1a", "١"] {
            assert!(!is_canonical(bad), "{bad:?}");
        }
    }
}
