//! The keyed, async DeltaFifo (F1–F13).
//!
//! A [`DeltaFifo`] sits between a source of watch events and the consumer that
//! applies them to a cache. Producers hand it owned objects through
//! [`add`](DeltaFifo::add), [`update`](DeltaFifo::update),
//! [`delete`](DeltaFifo::delete), [`replace`](DeltaFifo::replace) (a relist),
//! [`resync`](DeltaFifo::resync) and [`requeue`](DeltaFifo::requeue). The FIFO
//! keys each object, runs the optional transform, wraps the object in an `Arc`
//! once, and appends a [`Delta`](crate::Delta) to that key's pending
//! [`Deltas`](crate::Deltas). A key holds one place in the queue, the place it
//! got when it first had something pending; consumers get all of a key's
//! deltas at once, oldest key first, through [`pop`](DeltaFifo::pop),
//! [`try_pop`](DeltaFifo::try_pop) or the [`stream`](DeltaFifo::stream).
//!
//! The rules are client-go's DeltaFIFO (F1–F11 in the conformance list), with
//! two deliberate additions: [`Coalesce::Latest`] bounds a slow consumer's
//! backlog by the number of keys (F12), and the streamed relist avoids holding
//! a whole list in memory (F13).
//!
//! # Waiting
//!
//! A waiting consumer is parked on a [`tokio::sync::Notify`] and costs nothing
//! until a key joins the queue. Each key that joins wakes one waiting
//! consumer, so any number of producers and consumers may share one FIFO;
//! every item goes to exactly one consumer.
//!
//! # Closing
//!
//! [`close`](DeltaFifo::close) wakes every waiting consumer. What is queued
//! still comes out; once the queue is empty, [`pop`](DeltaFifo::pop) returns
//! [`Error::Closed`](crate::store::Error::Closed) and the [`stream`](DeltaFifo::stream) ends. As in client-go, closing does
//! not refuse producers: changes made after `close` are queued and pop as long
//! as the queue is not empty (a stream that already ended stays ended).
//!
//! # Cancel safety
//!
//! An item leaves the queue only inside the poll that hands it out, so
//! dropping a pending `pop()` future, or a [`stream`](DeltaFifo::stream) between polls,
//! loses nothing: the item stays queued for the next consumer. A wakeup that
//! was meant for a dropped waiter is passed on to another.
//!
//! # Bad input
//!
//! An object that cannot be keyed, that the transform rejects, or deltas
//! requeued under the wrong key are returned as a
//! [`store::Error`](crate::store::Error) (the data plane's one error); nothing already
//! queued is touched.
//!
//! L9 (FIFO side): a key function, transform or [`KnownObjects`] view that
//! panics does not unwind through the FIFO. The panic is caught where the
//! FIFO calls it and returned as [`Error::Panicked`](crate::store::Error::Panicked) with its message; the
//! object it was called for is skipped, exactly as a rejected object is.
//! For a relist ([`replace`](DeltaFifo::replace), or the streamed
//! relist's end) whose known-objects view panics, the
//! listed objects stay queued and no tombstone is queued; for
//! [`resync`](DeltaFifo::resync) nothing more is queued. User code runs
//! before anything is appended, so the queue is always left whole.
//!
//! # User code and the lock
//!
//! The key function and the transform never run under the FIFO's lock, so
//! producers do not serialise on them and they may call into the FIFO.
//! [`KnownObjects`] is read without the lock too, for a
//! [`resync`](DeltaFifo::resync), and with it held in two places, because
//! there the answer must be of the same instant as the queue:
//! [`delete`](DeltaFifo::delete) asks whether a key is known when it is not
//! queued (F4), and a relist's end lists the known keys that were neither
//! listed nor queued (F6, F13). An implementation must therefore not call
//! back into the same FIFO. The store keeps the same rule: no user code
//! under its lock ([`store`](crate::store), "Why one lock").

mod consume;
mod known;
mod merge;
mod options;
mod produce;
mod state;
mod stream;

pub use crate::key::error::UserCode;
pub use consume::DeltaFifo;
pub use known::KnownObjects;
pub(crate) use options::TransformFn;
pub use options::{Coalesce, FifoOptions};
