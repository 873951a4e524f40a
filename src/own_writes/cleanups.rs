//! [`FinishedCleanups`]: cleanups that succeeded while the finalizer they
//! were to free is still on the object (Z11 of
//! [`finalizer`](crate::finalizer)).
//!
//! A finalizer's cleanup and the patch that removes the finalizer are two
//! steps; when the first succeeds and the second fails (a 503, a 422 from a
//! stale read), the object is still there, still carrying the finalizer,
//! and the next reconcile would run the cleanup again. What the log keeps
//! here lets that reconcile send only the removal. It is the same kind of
//! knowledge as the recorded writes: something this process did that the
//! cluster does not show yet.

use crate::{hash::KeyMap, key::ObjectKey};

/// The object, by uid, and the finalizer whose cleanup finished.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Finished {
    uid: String,
    finalizer: String,
}

/// For each object key, the cleanups that finished and whose finalizer
/// has not been seen removed.
///
/// An entry goes when the finalizer's removal lands or is found moot (the
/// object gone), and when the key is seen holding another object (another
/// uid) or one not being deleted. What is left is an entry per object
/// whose finalizer someone else removed after our cleanup and that no
/// reconcile of ours looked at since: a few strings, for as long as the
/// process runs.
#[derive(Debug, Default)]
pub(crate) struct FinishedCleanups {
    objects: KeyMap<ObjectKey, Vec<Finished>>,
}

impl FinishedCleanups {
    /// Records that the cleanup under `finalizer` of the object `uid` at
    /// `key` finished.
    pub(crate) fn finished(&mut self, key: &ObjectKey, uid: &str, finalizer: &str) {
        let done = Finished {
            uid: uid.to_owned(),
            finalizer: finalizer.to_owned(),
        };
        let entries = self.objects.entry(key.clone()).or_default();
        entries.retain(|entry| entry.uid == uid);
        if !entries.contains(&done) {
            entries.push(done);
        }
    }

    /// Whether the cleanup under `finalizer` of the object `uid` at `key`
    /// finished. Forgets the entries of any other object at `key`: the one
    /// they were about is gone.
    pub(crate) fn has_finished(&mut self, key: &ObjectKey, uid: &str, finalizer: &str) -> bool {
        let Some(entries) = self.objects.get_mut(key) else {
            return false;
        };
        entries.retain(|entry| entry.uid == uid);
        let found = entries.iter().any(|entry| entry.finalizer == finalizer);
        if entries.is_empty() {
            self.objects.remove(key);
        }
        found
    }

    /// Forgets the cleanup under `finalizer` of whatever object is at `key`
    /// (its finalizer is off, or the object is gone), or every entry of
    /// `key` when `finalizer` is `None` (the object there is not being
    /// deleted).
    pub(crate) fn forget(&mut self, key: &ObjectKey, finalizer: Option<&str>) {
        if let Some(entries) = self.objects.get_mut(key) {
            entries.retain(|entry| finalizer.is_some_and(|f| entry.finalizer != f));
            if entries.is_empty() {
                self.objects.remove(key);
            }
        }
    }

    /// How many objects have an entry.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }
}

#[cfg(test)]
mod tests {
    use super::FinishedCleanups;
    use crate::key::ObjectKey;

    fn key() -> ObjectKey {
        ObjectKey::new(Some("default"), "app").unwrap()
    }

    /// Z11: a finished cleanup is found for its object and finalizer only,
    /// and forgotten when its finalizer is off or another object holds the key.
    #[test]
    fn z11_a_finished_cleanup_is_kept_per_object_and_finalizer() {
        let mut cleanups = FinishedCleanups::default();
        cleanups.finished(&key(), "u1", "a.io/x");
        cleanups.finished(&key(), "u1", "b.io/y");
        assert!(cleanups.has_finished(&key(), "u1", "a.io/x"));
        assert!(!cleanups.has_finished(&key(), "u1", "c.io/z"));

        cleanups.forget(&key(), Some("a.io/x"));
        assert!(!cleanups.has_finished(&key(), "u1", "a.io/x"));
        assert!(cleanups.has_finished(&key(), "u1", "b.io/y"));

        // Another object under the key: the first one's entries go.
        assert!(!cleanups.has_finished(&key(), "u2", "b.io/y"));
        assert_eq!(cleanups.len(), 0);

        cleanups.finished(&key(), "u2", "b.io/y");
        cleanups.forget(&key(), None);
        assert_eq!(cleanups.len(), 0);
    }
}
