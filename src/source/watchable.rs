//! [`Watchable`]: the bounds the source asks of an object type.

use std::fmt::Debug;

use kube::Resource;
use serde::de::DeserializeOwned;

/// What the source needs of an object type: a Kubernetes resource it can
/// decode from the API server's JSON, clone, print in logs and hand to other
/// tasks. Every such type implements it; it only names the bound set that
/// the source, the informer and the factory all ask for.
pub trait Watchable: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {}

impl<T> Watchable for T where T: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {}
