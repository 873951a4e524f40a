//! [`LazyNow`]: one clock reading shared by the steps of a locked operation.

use tokio::time::Instant;

/// The clock reading of one locked operation, taken the first time it is
/// needed: an add of an item already waiting needs none.
#[derive(Debug, Default)]
pub(super) struct LazyNow(Option<Instant>);

impl LazyNow {
    /// A reading already taken.
    pub(super) fn at(now: Instant) -> Self {
        Self(Some(now))
    }

    pub(super) fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}
