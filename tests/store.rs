//! The store (memory and compact), the keyed DeltaFifo and projections.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test store -- <file>::`).

mod cache_mode_common;
mod fifo_common;
mod store_common;

mod fifo_async;
mod fifo_model;
mod fifo_rules;
mod fifo_streamed_f7;
mod fifo_user_code;
#[cfg(feature = "controller")]
mod projection;
#[cfg(feature = "compact")]
mod store_compact;
#[cfg(feature = "compact")]
mod store_compact_roundtrip;
mod store_index;
