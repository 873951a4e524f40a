//! [`WorkItem`]: the guard that holds an item while it is processed.

use std::{fmt, hash::Hash, ops::Deref, sync::Arc};

use super::shared::Shared;

/// An item handed out by a [`WorkQueue`](super::WorkQueue), processing until
/// this guard drops (W4).
///
/// While it lives, the queue hands the item to no one else; adds of the item
/// meanwhile are remembered and queue it once more when the guard drops (W3).
/// Dropping the guard is client-go's `Done`, so a forgotten `Done` cannot
/// happen: an early return, a `?` or a panic in the worker all end processing.
///
/// # Examples
///
/// ```
/// use kube_informer::queue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new();
/// queue.add("a");
/// let item = queue.next().await.unwrap();
/// assert_eq!(*item, "a");
/// assert_eq!(queue.processing(), 1);
/// drop(item); // ends its processing
/// assert_eq!(queue.processing(), 0);
/// # }
/// ```
#[must_use = "dropping a WorkItem ends its processing at once"]
pub struct WorkItem<T: Hash + Eq + Clone> {
    shared: Arc<Shared<T>>,
    item: T,
}

impl<T: Hash + Eq + Clone> WorkItem<T> {
    pub(super) fn new(shared: Arc<Shared<T>>, item: T) -> Self {
        Self { shared, item }
    }

    /// The item.
    // Hidden (outside semver): Deref gives the item; the tests, benchmarks
    // and conformance harness use this.
    #[doc(hidden)]
    pub fn item(&self) -> &T {
        &self.item
    }
}

impl<T: Hash + Eq + Clone> Deref for WorkItem<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: Hash + Eq + Clone> Drop for WorkItem<T> {
    fn drop(&mut self) {
        self.shared.done(&self.item);
    }
}

impl<T: Hash + Eq + Clone + fmt::Debug> fmt::Debug for WorkItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkItem").field(&self.item).finish()
    }
}
