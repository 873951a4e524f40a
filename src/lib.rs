//! Async-native shared informers for Kubernetes.
//!
//! Watch events become [`Delta`]s in a keyed [`DeltaFifo`](fifo::DeltaFifo),
//! which an informer applies to an indexed store and turns into
//! [`Notification`]s for any number of independent subscriptions.
//!
//! Most programs need only an [`Informer`] (or an [`InformerFactory`] to
//! share informers across a program) and the [`prelude`]:
//!
//! ```no_run
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::Pod;
//! use kube::{Api, Client};
//! use kube_informer::prelude::*;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let informer = Informer::builder(Api::<Pod>::all(Client::try_default().await?)).build();
//! let changes = informer.subscribe(SubscribeOptions::default())?.changed_only();
//! tokio::spawn(informer.run());
//! changes
//!     .for_each(|n| async move {
//!         if let Notification::Added { object, .. } = n {
//!             println!("new pod {:?}", object.metadata.name);
//!         }
//!     })
//!     .await;
//! # Ok(()) }
//! ```
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
pub mod shard;
pub mod source;
pub mod store;

pub use delta::{Delta, DeltaObject, DeltaType, Deltas};
pub use dispatch::{Lag, ResourceEventHandler, SubscribeOptions, Subscription};
pub use ext::NotificationStreamExt;
pub use factory::InformerFactory;
pub use informer::{Informer, InformerBuilder};
pub use key::{KeyError, ObjectKey};
pub use notification::Notification;
pub use store::Store;

/// The names most informer programs use, in one import:
/// `use kube_informer::prelude::*;`.
pub mod prelude {
    pub use crate::{
        dispatch::{EventHandlerFuncs, Lag, ResourceEventHandler, SubscribeOptions, Subscription},
        ext::NotificationStreamExt,
        factory::InformerFactory,
        informer::{Informer, InformerBuilder},
        key::ObjectKey,
        notification::Notification,
        store::{Indexers, Store},
    };
}
