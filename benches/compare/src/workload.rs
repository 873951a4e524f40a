//! The shared workload: its file format and how a runner loads it.
//!
//! A workload file is a sequence of JSON values, one per line, each
//! `{"type": T, "object": O}`:
//!
//! - the first has `T = "LIST"` and `O` a `ConfigMapList` (the initial list,
//!   with the list's resourceVersion in its metadata);
//! - every other one is a watch event: `T` is `ADDED`, `MODIFIED` or `DELETED`
//!   and `O` the ConfigMap as the API server would send it.
//!
//! The Go runner reads the same file, so the format stays plain Kubernetes JSON.

use k8s_openapi::{List, api::core::v1::ConfigMap};
use serde::Deserialize;
use std::path::Path;

/// The kind of a watch event, as the API server names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `ADDED`: an object was created.
    Added,
    /// `MODIFIED`: an object changed.
    Modified,
    /// `DELETED`: an object was deleted; the event carries its last state.
    Deleted,
}

/// One watch event of the workload.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    /// What happened to the object.
    pub kind: EventKind,
    /// The object as sent with the event.
    pub object: ConfigMap,
}

/// A whole workload, decoded into memory before any clock starts.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The initial list, in list order.
    pub list: Vec<ConfigMap>,
    /// The resourceVersion of the initial list.
    pub list_resource_version: String,
    /// Every watch event after the list, in order.
    pub events: Vec<WatchEvent>,
}

/// How many events of each kind a workload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Objects in the initial list.
    pub listed: u64,
    /// `ADDED` and `MODIFIED` events after the list.
    pub applied: u64,
    /// `DELETED` events.
    pub deleted: u64,
}

impl Counts {
    /// Every event a runner is fed: list items plus watch events.
    pub fn total(&self) -> u64 {
        self.listed + self.applied + self.deleted
    }
}

impl Workload {
    /// Reads and decodes a workload file.
    pub fn load(path: &Path) -> Result<Self, WorkloadError> {
        let bytes = std::fs::read(path).map_err(|source| WorkloadError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&bytes)
    }

    /// Decodes a workload from its bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, WorkloadError> {
        let mut records = serde_json::Deserializer::from_slice(bytes).into_iter::<Record>();
        let first = records.next().ok_or(WorkloadError::Empty)??;
        let Record::List(list) = first else {
            return Err(WorkloadError::NoInitialList);
        };
        let list_resource_version = list.metadata.resource_version.unwrap_or_default();
        let mut events = Vec::new();
        for record in records {
            let (kind, object) = match record? {
                Record::List(_) => return Err(WorkloadError::SecondList),
                Record::Added(object) => (EventKind::Added, object),
                Record::Modified(object) => (EventKind::Modified, object),
                Record::Deleted(object) => (EventKind::Deleted, object),
            };
            events.push(WatchEvent { kind, object });
        }
        Ok(Workload {
            list: list.items,
            list_resource_version,
            events,
        })
    }

    /// Counts the events of each kind.
    pub fn counts(&self) -> Counts {
        let deleted = self
            .events
            .iter()
            .filter(|event| event.kind == EventKind::Deleted)
            .count() as u64;
        Counts {
            listed: self.list.len() as u64,
            applied: self.events.len() as u64 - deleted,
            deleted,
        }
    }

    /// Cuts the watch events into the updates (everything before the first
    /// delete) and the deletes that end the workload.
    ///
    /// Runners that must drain their subscribers before objects disappear
    /// (kube-runtime's shared store, see its runner) feed the two parts with a
    /// barrier between them.
    pub fn into_phases(self) -> Phases {
        let first_delete = self
            .events
            .iter()
            .position(|event| event.kind == EventKind::Deleted)
            .unwrap_or(self.events.len());
        let mut updates = self.events;
        let deletes = updates.split_off(first_delete);
        Phases {
            list: self.list,
            list_resource_version: self.list_resource_version,
            updates,
            deletes,
        }
    }
}

/// A workload cut into the three phases every runner feeds in order.
#[derive(Debug, Clone)]
pub struct Phases {
    /// The initial list.
    pub list: Vec<ConfigMap>,
    /// The resourceVersion of the initial list.
    pub list_resource_version: String,
    /// Watch events before the first delete.
    pub updates: Vec<WatchEvent>,
    /// Watch events from the first delete on.
    pub deletes: Vec<WatchEvent>,
}

/// One line of a workload file.
#[derive(Deserialize)]
#[serde(tag = "type", content = "object")]
enum Record {
    #[serde(rename = "LIST")]
    List(List<ConfigMap>),
    #[serde(rename = "ADDED")]
    Added(ConfigMap),
    #[serde(rename = "MODIFIED")]
    Modified(ConfigMap),
    #[serde(rename = "DELETED")]
    Deleted(ConfigMap),
}

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The file could not be read.
    #[error("cannot read workload {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not valid JSON or not a known record.
    #[error("malformed workload record: {0}")]
    Malformed(#[from] serde_json::Error),
    /// The file holds nothing.
    #[error("workload is empty")]
    Empty,
    /// The first record is not the initial list.
    #[error("workload does not start with a LIST record")]
    NoInitialList,
    /// A list appears after the first record.
    #[error("workload holds a second LIST record")]
    SecondList,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = concat!(
        r#"{"type":"LIST","object":{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"2"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"1"}},{"metadata":{"name":"b","namespace":"ns","resourceVersion":"2"}}]}}"#,
        "\n",
        r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"}}}"#,
        "\n",
        r#"{"type":"DELETED","object":{"metadata":{"name":"b","namespace":"ns","resourceVersion":"4"}}}"#,
        "\n"
    );

    #[test]
    fn parses_list_then_events() {
        let workload = Workload::parse(SAMPLE.as_bytes()).unwrap();
        assert_eq!(workload.list_resource_version, "2");
        assert_eq!(
            workload.counts(),
            Counts {
                listed: 2,
                applied: 1,
                deleted: 1
            }
        );
        let phases = workload.into_phases();
        assert_eq!(phases.list.len(), 2);
        assert_eq!(phases.updates[0].kind, EventKind::Modified);
        assert_eq!(phases.deletes[0].object.metadata.name.as_deref(), Some("b"));
    }

    #[test]
    fn rejects_unknown_event_type() {
        let bad = r#"{"type":"LIST","object":{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[]}}
{"type":"BOOKMARKED","object":{"metadata":{"name":"a"}}}"#;
        assert!(matches!(
            Workload::parse(bad.as_bytes()),
            Err(WorkloadError::Malformed(_))
        ));
    }

    #[test]
    fn rejects_missing_list() {
        let bad = r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
        assert!(matches!(
            Workload::parse(bad.as_bytes()),
            Err(WorkloadError::NoInitialList)
        ));
        assert!(matches!(Workload::parse(b""), Err(WorkloadError::Empty)));
    }
}
