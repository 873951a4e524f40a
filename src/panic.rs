//! Running user code so that a panic in it becomes an error, not an unwind
//! through the queue, the store or the informer (L9).
//!
//! One helper for every stage that runs user code (the FIFO's key function,
//! transform and known-objects view, the store's index functions, the
//! informer's callbacks and event stream), so a panic reads the same
//! wherever it was caught. It sits below them all (see "Layers" in the
//! crate docs).

use std::{
    any::Any,
    panic::{AssertUnwindSafe, catch_unwind},
};

/// The message of a caught panic: the `&str` or `String` it was raised
/// with, or a placeholder for any other payload.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "a panic with a non-string payload".to_owned(),
        },
    }
}

/// Runs `f`, turning a panic into its message.
///
/// `AssertUnwindSafe` is sound here because every caller runs the user code
/// before it changes any state of its own (or on a copy it throws away), so
/// nothing half-updated is observed after the unwind.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(panic_message)
}
