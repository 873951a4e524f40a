//! The informer's indexed cache: one [`Writer`] applies changes, any number
//! of read-only [`Store`]s read them from any task.
//!
//! An informer holds its store's writer and gives out only readers
//! ([`Informer::store`](crate::Informer::store)), so nothing but the informer
//! changes what its subscribers were told about. The FIFO's view of what the
//! informer already holds is an adapter in the informer over a reader; this
//! module knows nothing of the FIFO.
//!
//! # Rules
//!
//! Tests are named after them. What the informer does with a write's result
//! is its own rule (I1, I2); how keys are spelled is F2.
//!
//! - **ST1 Indexes.** Every store has the [`NAMESPACE_INDEX`]; an indexer
//!   added under a name already used replaces the older one. An object is
//!   filed under the values its index function gives for the version
//!   stored, refiled when that version is replaced and unfiled when it is
//!   removed. An index name no indexer has is an [`Error::UnknownIndex`];
//!   a value nothing is filed under gives an empty list.
//! - **ST2 Whole writes.** A write changes an object and its index entries
//!   as one step: a reader never sees one without the other (see
//!   Consistency).
//! - **ST3 Index functions.** They run once per stored version; replacing or
//!   removing that version unfiles the values kept with it, without calling
//!   the function again. One that panics refuses the write with
//!   [`Error::IndexerPanicked`] and leaves the store as it was (L9). See
//!   Index functions.
//! - **ST4 Namespace view.** [`Store::namespace`] lists and gets the objects
//!   of one namespace by the namespace part of their keys, as the store is
//!   at each call, also when the namespace index was replaced by a user's.
//! - **ST5 Synced.** A store is not synced until its writer marks it so, and
//!   is from then on; marking it wakes every
//!   [`Store::wait_until_synced`].
//! - **CM1–CM9 Compact cache.** See [`compact`].
//! - **RW4 Waiting for a write.** [`Store::wait_for`] returns once the store
//!   has caught up with a write for its key, by the rules RW1–RW3 of
//!   [`resource_version`](crate::resource_version), or once the informer
//!   that handed the store out stops. Every write that changes an object
//!   wakes the waiters, which look again; no timer is involved, and a
//!   store nobody waits on pays one atomic load per write.
//!
//! # Compact cache
//!
//! A store made with [`Writer::compact`] (or by an informer built with
//! [`InformerBuilder::compact_cache`](crate::InformerBuilder::compact_cache))
//! keeps each object encoded: MessagePack, compressed with LZ4 against a
//! dictionary made of the first objects it kept; see [`compact`] for its
//! rules (CM1–CM9) and why this encoding. Reads take the encoded bytes (a
//! reference count) under the lock and decode after releasing it, so a
//! decode never holds up the writer; a small set of decoded objects serves
//! the keys `get` reads often. The `Store` API is the same in both modes,
//! and so is every object read (an object whose encoding would not read
//! back equal is kept decoded, CM9).
//!
//! What it costs: each write encodes the new version and decodes it back
//! to check it (CM9); an update decodes the version it replaces when a
//! subscriber will read it (CM8); a read by key decodes unless the key is
//! hot, and `list`, `by_index` and a snapshot decode every object they
//! return that is not. What it saves: most of the memory of the cached
//! objects. The figures (RSS per cached Pod, events/s from the wire
//! beside kube-runtime, read and write latencies from
//! `benches/compare/examples/compact_reads.rs` and `benches/store.rs`)
//! live in BENCHMARKS.md. The objects of a compact store's notifications
//! are not shared with the store, so a subscriber that falls behind holds
//! decoded objects in the notifications waiting for it; a
//! [`Lag::Bounded`](crate::dispatch::Lag::Bounded) subscription bounds
//! that backlog. Choose it when memory matters more than read latency: a
//! controller that reads a few keys per event, or a large cache read
//! rarely.
//!
//! # Consistency
//!
//! Objects and every index live under one `parking_lot::RwLock`, and each
//! write updates both before releasing it, so a reader never sees an object
//! without its index entries or the reverse.
//!
//! # Index functions
//!
//! User index functions run only in [`Writer::apply_upsert`], once per
//! stored version of an object, before the lock is taken. The values they
//! returned are kept with the object, so replacing or removing it unfiles
//! exactly those values and runs no user code under the lock. A function
//! that panics is caught: the write is refused with
//! [`Error::IndexerPanicked`] and the store stays as it was.
//!
//! # Why one lock
//!
//! `benches/store.rs` compares (a) this design with (b) a `DashMap` of
//! objects plus a separately locked index (the writer holds the index lock
//! while it updates both, `by_index` holds it while it reads objects); a
//! sharded-lock design would need the same global index lock, since index
//! values cross shards. 10,000 ConfigMaps, one label index, median time per
//! upsert on a 2-core machine shared with other builds (load 7–8), over four
//! runs:
//!
//! | writer upserting with | (a) one `RwLock` | (b) dashmap + index lock |
//! |---|---|---|
//! | no reader  | 3.2–4.2 µs (3 runs) | 1.8–6.4 µs (3 runs) |
//! | 2 reader threads (`get`, `by_index`) | 5.7–15.6 µs, median ≈ 7.3 µs | 5.0–12.4 µs, median ≈ 5.8 µs |
//!
//! and a reader doing `get` (+ `by_index` every 64th) while a writer runs:
//! 22 µs (a) vs 19 µs (b) per read on one run. The ranges overlap and the
//! sign flipped between runs: on this machine neither candidate won by more
//! than the noise (at best (b) by ≈ 1.25× with readers, (a) by ≈ 1.5× alone
//! in two of three runs). One lock stays, because it makes the invariant
//! obvious and gives `list`, `len` and `snapshot` an atomic view for free.
//!
//! # Memory
//!
//! Beyond the object itself each cached object costs one map slot holding
//! its `ObjectKey`, its `Arc<K>` (in a two-word slot, which holds the
//! encoded bytes instead in the compact mode) and the (boxed) slice of its
//! custom index values (48 bytes plus hash-table control and slack, about
//! 55–100 bytes) and one `ObjectKey` in the namespace index set (16 bytes
//! plus control and slack, about 20–40 bytes): about 75–140 bytes. The key string is stored
//! once and shared by reference count. With custom indexes, each value adds
//! one `ObjectKey` slot in its index and its `String` kept with the object.

#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
pub mod compact;
#[cfg(not(feature = "compact"))]
#[path = "no_compact.rs"]
mod compact;
#[cfg(feature = "compact")]
mod hot;
mod index;
mod indexers;
#[cfg(feature = "compact")]
mod lz4_dictionary;
mod namespace;
mod reader;
mod shared;
mod stored;
pub(crate) mod writer;

pub(crate) use compact::Codec;
#[cfg(not(feature = "compact"))]
pub(crate) use compact::CompactCache;
#[cfg(feature = "compact")]
pub use compact::{CompactCache, CompactStats};
// Index functions are given to `InformerBuilder::indexer` one by one; the
// set itself is for the writer side and the crate's own tests.
#[doc(hidden)]
pub use indexers::Indexers;
pub use indexers::NAMESPACE_INDEX;
pub use namespace::NamespacedStore;
pub(crate) use reader::Owner;
pub use reader::Store;
pub(crate) use writer::{OldVersion, Replaced, Writer};

pub use crate::key::error::Error;
