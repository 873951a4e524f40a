//! The keyed, async DeltaFifo (F1–F13).

mod known;

pub use known::KnownObjects;
