//! [`Stored`]: the form one cached object takes in the store.

use std::sync::Arc;

/// One cached object as the store holds it.
pub(super) enum Stored<K> {
    /// The default mode's form, and the compact mode's for an object that
    /// could not be encoded (CM6).
    Decoded(Arc<K>),
    /// A tag byte, the encoding's length (u32, little endian), the LZ4 block.
    /// Only the compact cache makes it.
    #[cfg_attr(not(feature = "compact"), allow(dead_code))]
    Encoded(Arc<[u8]>),
}

impl<K> Stored<K> {
    /// The object, when it is kept decoded.
    pub(super) fn decoded(&self) -> Option<Arc<K>> {
        match self {
            Self::Decoded(object) => Some(Arc::clone(object)),
            Self::Encoded(_) => None,
        }
    }
}

impl<K> Clone for Stored<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Decoded(object) => Self::Decoded(Arc::clone(object)),
            Self::Encoded(bytes) => Self::Encoded(Arc::clone(bytes)),
        }
    }
}
