//! Async-native shared informers for Kubernetes.
//!
//! Watch events become [`Delta`]s in a keyed [`DeltaFifo`](fifo::DeltaFifo),
//! which an informer applies to an indexed store and turns into
//! [`Notification`]s for any number of independent subscriptions.
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![forbid(unsafe_code)]

pub mod delta;
pub mod dispatch;
pub mod ext;
pub mod factory;
pub mod fifo;
pub mod informer;
pub mod key;
pub mod notification;
pub mod source;
pub mod store;

pub use delta::{Delta, DeltaObject, DeltaType, Deltas};
pub use dispatch::{Lag, ResourceEventHandler, SubscribeOptions, Subscription};
pub use ext::NotificationStreamExt;
pub use key::{KeyError, ObjectKey};
pub use notification::Notification;
pub use store::Store;
pub use factory::InformerFactory;
pub use informer::{Informer, InformerBuilder};
