//! The error a runner reports for a failed reconcile.

use std::{error::Error, fmt};

/// A reconcile of `key` failed with `error`; the runner has already queued
/// the key again through the queue's rate limiter.
///
/// `E` is whatever the reconciler returns (`anyhow::Error` included); this
/// type is an [`Error`] when `E` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileError<T, E> {
    /// The key whose reconcile failed.
    pub key: T,
    /// What the reconciler returned.
    pub error: E,
}

impl<T: fmt::Debug, E: fmt::Display> fmt::Display for ReconcileError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reconcile of {:?} failed: {}", self.key, self.error)
    }
}

impl<T: fmt::Debug, E: Error + 'static> Error for ReconcileError<T, E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.error)
    }
}
