//! [`InformerFactory`]: one shared [`Informer`](crate::Informer) per resource type, namespace
//! and selectors, for a whole program.
//!
//! Controllers in one program often watch the same resources; each watch
//! costs the API server a list and a connection and costs the program a
//! cache. The factory hands every caller asking for the same
//! (type, resource, namespace, label selector, field selector) the same
//! informer, starts them together and waits for them to sync together.
//!
//! # The sharing key
//!
//! Two requests share an informer when they agree on all of:
//!
//! - the Rust type of the cached objects (so a metadata-only informer,
//!   `PartialObjectMeta<K>`, and a full one on `K` are two informers);
//! - the [`WatchedResource`](crate::WatchedResource): the resource and namespace, as the `Api`'s
//!   URL says them (`/api/v1/namespaces/default/pods`,
//!   `/apis/apps/v1/deployments`), and the label selector and the field
//!   selector, as strings.
//!
//! Everything else a builder can set (indexers, transform,
//! `strip_managed_fields`, key function, resync check period, the other
//! list/watch settings) is not part of the key but must agree: a request
//! for an existing key with other options is refused with
//! [`Error::OptionsDiffer`](crate::informer::Error::OptionsDiffer) rather than handed an informer that ignores
//! them. Functions (index functions, transforms, key functions) cannot be
//! compared, so they agree when both requests set them (or both do not);
//! the first request's functions are the ones that run.
//!
//! # Defaults
//!
//! - **FA5** A factory made [`with_defaults`](InformerFactory::with_defaults)
//!   applies its [`Defaults`](crate::informer::Defaults) to every builder before the request's
//!   `configure` closure runs (full and metadata-only informers alike), so
//!   the closure can keep, add to or replace them; the options compared for
//!   sharing are those the builder ends with.
//!
//! # A stopped informer
//!
//! - **FA1** An informer of the factory that has stopped (its `stop` was
//!   called, its token cancelled, or its `run` ended) is not handed out
//!   again: the next request for its key gets a new informer, built from
//!   that request's options, which the next [`start`](InformerFactory::start)
//!   runs. After [`shutdown`](InformerFactory::shutdown) every request gets
//!   a stopped informer, as before.
//!
//! # Lifetimes
//!
//! The factory holds a handle on each of its informers, so an informer it
//! built runs until [`shutdown`](InformerFactory::shutdown), its own stop,
//! or one of these:
//!
//! - **FA2** [`release`](InformerFactory::release) lets go of one informer:
//!   the factory's handle and the caller's are dropped, and the informer
//!   stops when nothing else holds it (L8: no other `Informer` clone,
//!   `Store`, subscription or error stream), at once if nothing does. Until
//!   it stops the factory remembers it without keeping it alive: a request
//!   for its key gets it back, and `shutdown` stops it; `len` and the sync
//!   waits leave it out. Once stopped, the next request gets a new one
//!   (FA1).
//! - **FA3** Dropping the last factory handle drops the factory's handles
//!   and nothing else: an informer a user still holds keeps running (its
//!   spawned `run` goes on), one nothing holds stops (L8).
//! - **FA4** [`shutdown`](InformerFactory::shutdown) stops every informer
//!   the factory started or handed out that still runs, released ones
//!   included, and waits for the `run` of those it started.
//!
//! # Waiting
//!
//! [`InformerFactory::wait_until_synced`] waits for every informer the
//! factory holds to sync and fails fast, with the first
//! [`SyncError`](crate::informer::SyncError) any of them meets (I10; the
//! rules of one informer's wait, I6–I9, are in the
//! [`informer`](crate::informer#waiting-for-the-first-sync) module). A
//! deadline is the caller's: `tokio::time::timeout` around the one wait
//! holds for all the informers at once.
//!
//! # Files
//!
//! `informer_factory.rs` holds the handle and how a request finds or builds
//! its informer; `run.rs` starts, waits for, releases and shuts down the
//! informers; `registry.rs` keeps them by [sharing key](#the-sharing-key)
//! (`key.rs`), each as its own type behind the operations the factory
//! applies to all of them (`hold.rs`), so a request that knows the type
//! gets its informer back through `Any` without an `expect`.

mod hold;
mod informer_factory;
mod key;
mod registry;
mod run;

pub use informer_factory::InformerFactory;
