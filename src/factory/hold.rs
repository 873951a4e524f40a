//! [`Hold`]: how the factory holds one informer, of its own type, and
//! [`ManagedInformer`], what the factory does with any of its informers
//! without knowing their type.

use std::any::Any;

use futures::future::{BoxFuture, FutureExt};
use kube::Resource;

use crate::informer::{self, Informer, SyncError, WeakInformer};

/// How the factory holds one of its informers.
pub(super) enum Hold<K> {
    /// With a handle: the informer lives at least as long as the factory.
    Held(Informer<K>),
    /// Released (FA2): it lives while its users hold it, no longer.
    Released(WeakInformer<K>),
}

impl<K> Hold<K> {
    /// The informer while it may still run: held, or released and held by
    /// someone else.
    fn alive(&self) -> Option<Informer<K>> {
        match self {
            Hold::Held(informer) => Some(informer.clone()),
            Hold::Released(released) => released.upgrade(),
        }
    }
}

/// What the factory does with every one of its informers, whatever type
/// each caches. Requests that know the type reach the [`Hold`] itself
/// through [`Any`].
pub(super) trait ManagedInformer: Any + Send + Sync {
    /// The informer's `run`, while it may still run: a released informer
    /// not started yet still runs if its users hold it (FA2).
    fn run(&self) -> Option<BoxFuture<'static, Result<(), informer::Error>>>;
    /// The wait for its first sync, for an informer the factory holds
    /// (released ones are left out, FA2).
    fn wait_until_synced(&self) -> Option<BoxFuture<'static, Result<(), SyncError>>>;
    /// Stops it, held or released (FA4: released ones that still run stop
    /// too).
    fn stop(&self);
    /// Whether the factory holds it (it was not released).
    fn is_held(&self) -> bool;
    /// Whether it may still run: held, or released and held by someone
    /// else.
    fn is_alive(&self) -> bool;
}

impl<K> ManagedInformer for Hold<K>
where
    K: Resource + Send + Sync + 'static,
{
    fn run(&self) -> Option<BoxFuture<'static, Result<(), informer::Error>>> {
        self.alive().map(|informer| informer.run().boxed())
    }

    fn wait_until_synced(&self) -> Option<BoxFuture<'static, Result<(), SyncError>>> {
        let Hold::Held(informer) = self else {
            return None;
        };
        let informer = informer.clone();
        Some(async move { informer.wait_until_synced().await }.boxed())
    }

    fn stop(&self) {
        if let Some(informer) = self.alive() {
            informer.stop();
        }
    }

    fn is_held(&self) -> bool {
        matches!(self, Hold::Held(_))
    }

    fn is_alive(&self) -> bool {
        match self {
            Hold::Held(_) => true,
            Hold::Released(released) => released.is_alive(),
        }
    }
}
