//! The versioned object store: every change gets the next resourceVersion,
//! every key keeps its history back to the compaction point, and an event log
//! lets watches resume from any resourceVersion still in the window.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde_json::{Value, json};

use crate::{
    resource::{ResourceId, ResourceType},
    server_fields::{self, ServerClock},
};

/// Why a change to the store was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// `create` of a key that already holds an object.
    AlreadyExists(String),
    /// `update` or `delete` of a key that holds no object.
    NotFound(String),
    /// The object has no `metadata.name`.
    MissingName,
    /// A namespaced object without a namespace, or the reverse.
    BadNamespace(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AlreadyExists(k) => write!(f, "object {k} already exists"),
            Self::NotFound(k) => write!(f, "object {k} not found"),
            Self::MissingName => write!(f, "object has no metadata.name"),
            Self::BadNamespace(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);

/// One stored version of an object: its resourceVersion and its state
/// (`None` marks a deletion).
pub(crate) type Version = (u64, Option<Arc<Value>>);

/// What happened to an object, as a watch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One entry of the event log.
#[derive(Debug, Clone)]
pub(crate) struct LogEvent {
    pub(crate) rv: u64,
    pub(crate) resource: ResourceId,
    pub(crate) change: ChangeType,
    /// The object before the change (None for a creation).
    pub(crate) old: Option<Arc<Value>>,
    /// The object after the change; for a deletion, the last state with the
    /// deletion's resourceVersion.
    pub(crate) new: Arc<Value>,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Collection {
    pub(crate) kind: String,
    pub(crate) api_version: String,
    pub(crate) namespaced: bool,
    /// Once registered with a `/status` subresource, a collection keeps it.
    pub(crate) status_subresource: bool,
    /// Every key's versions, oldest first; `None` marks a deletion.
    history: BTreeMap<ObjKey, Vec<Version>>,
}

impl Collection {
    fn current(&self, key: &ObjKey) -> Option<&Arc<Value>> {
        self.history.get(key)?.last()?.1.as_ref()
    }

    /// Objects as they were at `rv`, in key order, starting after `after`.
    pub(crate) fn snapshot_at<'a>(
        &'a self,
        rv: u64,
        after: Option<&'a ObjKey>,
    ) -> impl Iterator<Item = (&'a ObjKey, &'a Arc<Value>)> + 'a {
        use std::ops::Bound;
        let start = match after {
            Some(k) => Bound::Excluded(k.clone()),
            None => Bound::Unbounded,
        };
        self.history
            .range((start, Bound::Unbounded))
            .filter_map(move |(k, versions)| {
                let (_, obj) = versions.iter().rev().find(|(v, _)| *v <= rv)?;
                obj.as_ref().map(|o| (k, o))
            })
    }
}

/// All collections, the event log and the resourceVersion counter.
///
/// `Clone` serves dry-run writes: they run on a copy that is thrown away.
#[derive(Debug, Default, Clone)]
pub(crate) struct State {
    pub(crate) rv: u64,
    /// resourceVersions at or below this were compacted away.
    pub(crate) compacted: u64,
    pub(crate) collections: HashMap<ResourceId, Collection>,
    pub(crate) log: Vec<LogEvent>,
    pub(crate) clock: ServerClock,
}

fn key_of(rt: &ResourceType, object: &Value) -> Result<ObjKey, StoreError> {
    let name = object["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or(StoreError::MissingName)?;
    let ns = object["metadata"]["namespace"].as_str().unwrap_or("");
    match (rt.namespaced, ns.is_empty()) {
        (true, true) => Err(StoreError::BadNamespace(format!(
            "{} {name} needs a namespace",
            rt.kind
        ))),
        (false, false) => Err(StoreError::BadNamespace(format!(
            "{} {name} is cluster-scoped",
            rt.kind
        ))),
        _ => Ok((ns.to_owned(), name.to_owned())),
    }
}

fn display_key(key: &ObjKey) -> String {
    if key.0.is_empty() {
        key.1.clone()
    } else {
        format!("{}/{}", key.0, key.1)
    }
}

impl State {
    pub(crate) fn register(&mut self, rt: &ResourceType) -> &mut Collection {
        let c = self.collections.entry(rt.id()).or_default();
        c.kind = rt.kind.clone();
        c.api_version = rt.api_version();
        c.namespaced = rt.namespaced;
        c.status_subresource |= rt.status_subresource;
        c
    }

    /// Creates (`must_exist = Some(false)`), updates (`Some(true)`) or
    /// upserts (`None`) an object; returns it with its new resourceVersion.
    pub(crate) fn put(
        &mut self,
        rt: &ResourceType,
        mut object: Value,
        must_exist: Option<bool>,
    ) -> Result<Value, StoreError> {
        let key = key_of(rt, &object)?;
        let old = self.register(rt).current(&key).cloned();
        match (must_exist, &old) {
            (Some(false), Some(_)) => return Err(StoreError::AlreadyExists(display_key(&key))),
            (Some(true), None) => return Err(StoreError::NotFound(display_key(&key))),
            _ => {}
        }
        self.rv += 1;
        let rv = self.rv;
        object["kind"] = json!(rt.kind);
        object["apiVersion"] = json!(rt.api_version());
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let status_subresource = self.register(rt).status_subresource;
        server_fields::stamp(
            rt,
            status_subresource,
            old.as_deref(),
            &mut object,
            rv,
            &self.clock,
        );
        let new = Arc::new(object);
        let change = if old.is_some() {
            ChangeType::Modified
        } else {
            ChangeType::Added
        };
        self.record(rt, key, Some(new.clone()));
        self.log.push(LogEvent {
            rv,
            resource: rt.id(),
            change,
            old,
            new: new.clone(),
        });
        Ok((*new).clone())
    }

    /// Deletes an object; returns its last state with the deletion's resourceVersion.
    pub(crate) fn delete(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, StoreError> {
        let key = (namespace.unwrap_or("").to_owned(), name.to_owned());
        let old = self
            .register(rt)
            .current(&key)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(display_key(&key)))?;
        self.rv += 1;
        let rv = self.rv;
        let mut last = (*old).clone();
        last["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.record(rt, key, None);
        self.log.push(LogEvent {
            rv,
            resource: rt.id(),
            change: ChangeType::Deleted,
            old: Some(old),
            new: Arc::new(last.clone()),
        });
        Ok(last)
    }

    fn record(&mut self, rt: &ResourceType, key: ObjKey, object: Option<Arc<Value>>) {
        let rv = self.rv;
        self.register(rt)
            .history
            .entry(key)
            .or_default()
            .push((rv, object));
    }

    /// Forgets every version and log entry at or below the current
    /// resourceVersion except each key's newest state.
    pub(crate) fn compact(&mut self) {
        let floor = self.rv;
        self.compacted = floor;
        self.log.retain(|e| e.rv > floor);
        for collection in self.collections.values_mut() {
            collection.history.retain(|_, versions| {
                let newest = versions.pop();
                versions.clear();
                match newest {
                    Some((rv, Some(obj))) => {
                        versions.push((rv, Some(obj)));
                        true
                    }
                    _ => false,
                }
            });
        }
    }

    /// The resource type of a known collection (what a URL names).
    pub(crate) fn resource_type(&self, id: &ResourceId) -> Option<ResourceType> {
        let c = self.collections.get(id)?;
        let mut rt = ResourceType::new(&id.group, &id.version, &id.plural, &c.kind, c.namespaced);
        rt.status_subresource |= c.status_subresource;
        Some(rt)
    }

    /// The current state of one object.
    pub(crate) fn current(&self, id: &ResourceId, key: &ObjKey) -> Option<Arc<Value>> {
        self.collections.get(id)?.current(key).cloned()
    }

    /// Whether a version of `key` kept since the last compaction had this
    /// uid: the object existed here, though it may be gone now.
    pub(crate) fn held_uid(&self, id: &ResourceId, key: &ObjKey, uid: &str) -> bool {
        self.collections
            .get(id)
            .and_then(|c| c.history.get(key))
            .is_some_and(|versions| {
                versions.iter().any(|(_, object)| {
                    object
                        .as_ref()
                        .is_some_and(|o| o["metadata"]["uid"].as_str() == Some(uid))
                })
            })
    }

    pub(crate) fn current_objects(&self, rt: &ResourceType) -> Vec<Value> {
        self.collections
            .get(&rt.id())
            .map(|c| {
                c.snapshot_at(self.rv, None)
                    .map(|(_, o)| (**o).clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "data": {}})
    }

    #[test]
    fn versions_and_snapshots() {
        let rt = ResourceType::new("", "v1", "configmaps", "ConfigMap", true);
        let mut s = State::default();
        s.put(&rt, cm("a"), Some(false)).unwrap();
        s.put(&rt, cm("b"), Some(false)).unwrap();
        s.delete(&rt, Some("ns"), "a").unwrap();
        let c = &s.collections[&rt.id()];
        assert_eq!(c.snapshot_at(2, None).count(), 2);
        assert_eq!(c.snapshot_at(3, None).count(), 1);
        assert_eq!(
            s.put(&rt, cm("b"), Some(false)),
            Err(StoreError::AlreadyExists("ns/b".into()))
        );
        s.compact();
        assert!(s.log.is_empty());
        assert_eq!(s.current_objects(&rt).len(), 1);
    }
}
