//! `metadata.managedFields`: who owns which fields of an object.
//!
//! One entry per (manager, operation, apiVersion, subresource). An update
//! (create, replace, merge/JSON/strategic patch) gives its manager the
//! fields it changed and takes them from everyone else; an apply gives its
//! manager exactly the fields it applied (see `write/apply.rs`). Entries
//! left with no fields disappear. Entries are kept in the API server's
//! order: `Apply` before `Update`, then by time, manager, apiVersion and
//! subresource.
//!
//! Rules (tests name them):
//! - MF1: an update that names no `fieldManager` is recorded under the
//!   prefix of its User-Agent (up to the first `/`), and under `unknown`
//!   when it sends none, as kube-apiserver records it.
//! - MF2: fields are written in `fieldsV1` form (`f:` members, `k:` keyed
//!   list items, `v:` set items, `"."` for a member that is itself owned),
//!   and read back to the same set.
//! - MF3: an update takes from other managers the fields it changed; an
//!   entry left with no fields goes.
//! - MF4: an update (a create among them) that creates a map, a struct or
//!   a list owns it as a field of its own (`".": {}` beside its members,
//!   or `{}` when it is empty), and keeps it when other managers take its
//!   members; a field every object of a built-in type has (`spec`, a Pod's
//!   `spec.containers`, a workload's `spec.template`) is never created
//!   (see `merge_keys.rs`).

use serde_json::{Value, json};

use crate::field_set::{FieldSet, Path};

/// Which kind of write an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    Apply,
    Update,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    pub(crate) subresource: String,
    pub(crate) fields: FieldSet,
}

impl Entry {
    /// How a conflict message names this manager.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    fn is(&self, manager: &str, operation: Operation, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }

    fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": match self.operation {
                Operation::Apply => "Apply",
                Operation::Update => "Update",
            },
            "apiVersion": self.api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if let Some(time) = &self.time {
            entry["time"] = json!(time);
        }
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }
}

/// The entries of one object.
#[derive(Debug, Clone, Default)]
pub(crate) struct ManagedFields(pub(crate) Vec<Entry>);

impl ManagedFields {
    /// The entries `object` carries; entries the server cannot read
    /// (another `fieldsType`, a malformed tree) are left out.
    pub(crate) fn read(object: &Value) -> Self {
        let entries = object["metadata"]["managedFields"]
            .as_array()
            .map(|entries| entries.iter().filter_map(read_entry).collect())
            .unwrap_or_default();
        Self(entries)
    }

    /// Stores the entries in `object`, sorted, empty ones dropped.
    pub(crate) fn write(mut self, object: &mut Value) {
        self.0.retain(|e| !e.fields.is_empty());
        self.0.sort_by(|a, b| {
            (
                a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        let Some(meta) = object["metadata"].as_object_mut() else {
            return;
        };
        if self.0.is_empty() {
            meta.remove("managedFields");
        } else {
            let entries: Vec<Value> = self.0.iter().map(Entry::to_json).collect();
            meta.insert("managedFields".to_owned(), Value::Array(entries));
        }
    }

    /// Records an update by `manager`: it owns what it `changed`, nobody
    /// owns it any more elsewhere, and nobody owns what it `removed`.
    pub(crate) fn record_update(
        &mut self,
        manager: &str,
        api_version: &str,
        subresource: &str,
        changed: &FieldSet,
        removed: &FieldSet,
        now: &str,
    ) {
        for entry in &mut self.0 {
            entry.fields.remove_all(changed);
            entry.fields.remove_all(removed);
        }
        if changed.is_empty() {
            return;
        }
        let position = self.0.iter().position(|e| {
            e.is(manager, Operation::Update, subresource) && e.api_version == api_version
        });
        let entry = match position {
            Some(at) => &mut self.0[at],
            None => {
                self.0.push(Entry {
                    manager: manager.to_owned(),
                    operation: Operation::Update,
                    api_version: api_version.to_owned(),
                    time: None,
                    subresource: subresource.to_owned(),
                    fields: FieldSet::default(),
                });
                self.0.last_mut().expect("pushed above")
            }
        };
        entry.fields.union(changed);
        entry.time = Some(now.to_owned());
    }

    /// The entry of `manager`'s applies through `subresource`.
    pub(crate) fn applied_by(&self, manager: &str, subresource: &str) -> Option<&Entry> {
        self.0
            .iter()
            .find(|e| e.is(manager, Operation::Apply, subresource))
    }

    /// Replaces `manager`'s apply entry with one owning `fields`; its time
    /// moves only when what it owns changes, so an apply that changes
    /// nothing writes nothing.
    pub(crate) fn record_apply(
        &mut self,
        manager: &str,
        api_version: &str,
        subresource: &str,
        fields: FieldSet,
        now: &str,
    ) {
        let old = self
            .0
            .iter()
            .position(|e| e.is(manager, Operation::Apply, subresource))
            .map(|at| self.0.remove(at));
        let time = match old {
            Some(old) if old.fields == fields && old.api_version == api_version => old.time,
            _ => Some(now.to_owned()),
        };
        self.0.push(Entry {
            manager: manager.to_owned(),
            operation: Operation::Apply,
            api_version: api_version.to_owned(),
            time,
            subresource: subresource.to_owned(),
            fields,
        });
    }

    /// The entries other than `manager`'s own that own `path`.
    pub(crate) fn owners_other_than<'a>(
        &'a self,
        manager: &'a str,
        path: &'a Path,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.0
            .iter()
            .filter(move |e| e.manager != manager && e.fields.contains(path))
    }

    /// Takes `path` from every manager but `manager`.
    pub(crate) fn take_from_others(&mut self, manager: &str, path: &Path) {
        for entry in self.0.iter_mut().filter(|e| e.manager != manager) {
            let mut one = FieldSet::default();
            one.insert(path.clone());
            entry.fields.remove_all(&one);
        }
    }

    /// Whether a manager other than `manager`'s apply through
    /// `subresource` owns `path` or anything below it.
    pub(crate) fn others_own_within(&self, manager: &str, subresource: &str, path: &Path) -> bool {
        self.0
            .iter()
            .filter(|e| !e.is(manager, Operation::Apply, subresource))
            .any(|e| e.fields.owns_within(path))
    }

    /// Drops `paths` from every entry.
    pub(crate) fn forget(&mut self, paths: &FieldSet) {
        for entry in &mut self.0 {
            entry.fields.remove_all(paths);
        }
    }
}

fn read_entry(entry: &Value) -> Option<Entry> {
    let operation = match entry["operation"].as_str()? {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return None,
    };
    if entry["fieldsType"].as_str() != Some("FieldsV1") {
        return None;
    }
    Some(Entry {
        manager: entry["manager"].as_str()?.to_owned(),
        operation,
        api_version: entry["apiVersion"].as_str().unwrap_or("").to_owned(),
        time: entry["time"].as_str().map(str::to_owned),
        subresource: entry["subresource"].as_str().unwrap_or("").to_owned(),
        fields: FieldSet::from_fields_v1(&entry["fieldsV1"]).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&[&str]]) -> FieldSet {
        let mut set = FieldSet::default();
        for p in paths {
            set.insert(p.iter().map(|e| (*e).to_owned()).collect());
        }
        set
    }

    #[test]
    fn mf3_an_update_takes_what_it_changed_from_other_managers() {
        let mut managed = ManagedFields::default();
        let a = set(&[&["f:data", "f:a"], &["f:data", "f:b"]]);
        managed.record_apply("m1", "v1", "", a, "t0");
        managed.record_update(
            "kubectl",
            "v1",
            "",
            &set(&[&["f:data", "f:a"]]),
            &FieldSet::default(),
            "t1",
        );
        let mut object = json!({"metadata": {}});
        managed.write(&mut object);
        let entries = &object["metadata"]["managedFields"];
        assert_eq!(entries[0]["manager"], "m1");
        assert_eq!(entries[0]["fieldsV1"], json!({"f:data": {"f:b": {}}}));
        assert_eq!(entries[1]["manager"], "kubectl");
        assert_eq!(entries[1]["operation"], "Update");
        assert_eq!(
            ManagedFields::read(&object).0[1].describe(),
            "\"kubectl\" using v1"
        );
    }
}
