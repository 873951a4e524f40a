//! The informer's indexed cache: [`Store`], read from any task while one
//! writer applies changes.
//!
//! # Consistency
//!
//! Objects and every index live under one `parking_lot::RwLock`, and each
//! write updates both before releasing it, so a reader never sees an object
//! without its index entries or the reverse. User index functions for the new
//! object run before the lock is taken.
//!
//! # Why one lock
//!
//! BENCH_SUMMARY
//!
//! # Memory
//!
//! Beyond the object itself each cached object costs one `(ObjectKey,
//! Arc<K>)` map slot (24 bytes plus hash-table control and slack, about 30–55
//! bytes) and one `ObjectKey` in the namespace index set (16 bytes plus
//! control and slack, about 20–40 bytes): about 50–95 bytes. The key string is
//! stored once and shared by reference count; each custom index value adds one
//! more `ObjectKey` slot.

mod index;
mod indexers;
mod store;

pub use indexers::{IndexFn, Indexers, NAMESPACE_INDEX};
pub use store::Store;

/// Errors of the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No index has this name.
    #[error("no index named {0:?}")]
    UnknownIndex(String),
}
