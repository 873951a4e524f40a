//! [`OnCancel`]: what a [`Runner`](super::Runner) does with running
//! reconciles when it is cancelled.

/// What a [`Runner`](super::Runner) does with reconciles still running when its
/// cancellation token fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnCancel {
    /// Take no new keys, let running reconciles finish (their outcomes are
    /// still reported), then end.
    #[default]
    Finish,
    /// Drop running reconciles at once (their futures are dropped at an
    /// await point, their keys' processing ends) and end.
    Abandon,
}
