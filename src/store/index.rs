//! One index: from an index value to the keys of the objects filed under it.

use crate::{
    hash::{KeyMap, KeySet},
    key::ObjectKey,
};

/// The keys filed under each value of one index.
///
/// Keys are `ObjectKey` clones (a reference count, not a copy of the string);
/// a value whose last key leaves is removed, so `values()` lists only values
/// some object has.
#[derive(Debug, Default)]
pub(crate) struct Index {
    by_value: KeyMap<Box<str>, KeySet<ObjectKey>>,
}

impl Index {
    pub(crate) fn insert(&mut self, value: &str, key: &ObjectKey) {
        match self.by_value.get_mut(value) {
            Some(keys) => {
                keys.insert(key.clone());
            }
            None => {
                self.by_value
                    .insert(value.into(), KeySet::from_iter([key.clone()]));
            }
        }
    }

    pub(crate) fn remove(&mut self, value: &str, key: &ObjectKey) {
        if let Some(keys) = self.by_value.get_mut(value) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_value.remove(value);
            }
        }
    }

    pub(crate) fn keys(&self, value: &str) -> impl Iterator<Item = &ObjectKey> {
        self.by_value.get(value).into_iter().flatten()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.by_value.keys().map(|v| &**v)
    }
}
