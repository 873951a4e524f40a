//! Helpers shared by the FIFO test files.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube_informer::fifo::KnownObjects;
use kube_informer::{DeltaType, Deltas, ObjectKey};
use parking_lot::Mutex;

/// A ConfigMap in `default` whose resourceVersion tells versions apart.
pub fn cm(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("default"), name).unwrap()
}

pub fn rv(obj: &ConfigMap) -> String {
    obj.metadata.resource_version.clone().unwrap_or_default()
}

/// `(type, resourceVersion, is_tombstone)` of one delta.
pub type DeltaSummary = (DeltaType, String, bool);

/// `(key, summaries)` of one popped item.
pub type Popped = (String, Vec<DeltaSummary>);

/// `(type, resourceVersion, is_tombstone)` per delta, oldest first.
pub fn summary(deltas: &Deltas<ConfigMap>) -> Vec<DeltaSummary> {
    deltas
        .iter()
        .map(|d| (d.delta_type, rv(d.object.object()), d.object.is_tombstone()))
        .collect()
}

/// `(key, summary)` of a popped item.
pub fn popped(deltas: &Deltas<ConfigMap>) -> Popped {
    (deltas.key().to_string(), summary(deltas))
}

/// A known-objects store the test fills by hand.
#[derive(Default)]
pub struct Known(Mutex<BTreeMap<ObjectKey, Arc<ConfigMap>>>);

impl Known {
    pub fn with(objects: impl IntoIterator<Item = ConfigMap>) -> Arc<Self> {
        let known = Self::default();
        for obj in objects {
            known.insert(obj);
        }
        Arc::new(known)
    }

    pub fn insert(&self, obj: ConfigMap) {
        let key = ObjectKey::from_object(&obj).unwrap();
        self.0.lock().insert(key, Arc::new(obj));
    }

    pub fn remove(&self, key: &ObjectKey) {
        self.0.lock().remove(key);
    }
}

impl KnownObjects<ConfigMap> for Known {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        self.0.lock().get(key).cloned()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.lock().keys().cloned().collect()
    }
}
