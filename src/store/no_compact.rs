//! The store without the `compact` feature. The store's code names a
//! compact cache (`Shared::compact` is an `Option` of one, a builder may
//! carry its settings); here those names are types with no values, so the
//! option is always `None`, every compact path is dead code the compiler
//! removes, and no codec is built in.

use std::{marker::PhantomData, sync::Arc};

use super::stored::Stored;
use crate::key::ObjectKey;

/// A compact cache's settings: none can be made without the feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CompactCache {}

/// A codec: none can be made without the feature.
pub(crate) struct Codec<K>(Never, PhantomData<fn() -> K>);

/// A compact store's state: none can be made without the feature.
pub(super) struct Compact<K>(Never, PhantomData<fn() -> K>);

#[derive(Debug, Clone, Copy)]
enum Never {}

impl<K> Compact<K> {
    pub(super) fn new(codec: Codec<K>, settings: CompactCache) -> Self {
        let _ = settings;
        match codec.0 {}
    }

    pub(super) fn store(&self, _: &ObjectKey, _: &Arc<K>) -> Stored<K> {
        match self.0 {}
    }

    pub(super) fn forget(&self, _: &Stored<K>) {
        match self.0 {}
    }

    pub(super) fn rewrite_hot(
        &self,
        _: &ObjectKey,
        _: Option<&Arc<[u8]>>,
        _: Option<(Arc<[u8]>, Arc<K>)>,
    ) -> Option<Arc<K>> {
        match self.0 {}
    }

    pub(super) fn resolve(&self, _: &ObjectKey, _: Arc<[u8]>, _: bool) -> Option<Arc<K>> {
        match self.0 {}
    }
}
