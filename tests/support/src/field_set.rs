//! Sets of field paths, as `managedFields` records them (`fieldsV1`).
//!
//! A path is a list of elements in the API server's spelling: `f:NAME` (a
//! field), `k:{"name":"c"}` (the item of a keyed list with these key
//! values), `v:"x"` (an item of a set list), `i:0` (an index). A set holds
//! the paths a manager owns: every scalar, every list item, and (for
//! changes made by an update) every map or list that the change created.
//!
//! `fieldsV1` is the set as a tree: a path's elements are nested keys, a
//! member with nothing below it is `{}`, and a member with members below
//! it carries `".": {}`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::merge_keys::{ListType, Schema};

/// One path: its elements in `fieldsV1` spelling.
pub(crate) type Path = Vec<String>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    pub(crate) fn insert(&mut self, path: Path) {
        self.0.insert(path);
    }

    pub(crate) fn contains(&self, path: &[String]) -> bool {
        self.0.contains(path)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// Whether `path` or anything below it is in the set.
    pub(crate) fn owns_within(&self, path: &[String]) -> bool {
        self.0
            .range(path.to_vec()..)
            .next()
            .is_some_and(|p| p.starts_with(path))
    }

    /// Whether something below `path` (not `path` itself) is in the set.
    pub(crate) fn has_below(&self, path: &[String]) -> bool {
        self.0
            .range(path.to_vec()..)
            .find(|p| p.as_slice() != path)
            .is_some_and(|p| p.starts_with(path))
    }

    pub(crate) fn union(&mut self, other: &FieldSet) {
        self.0.extend(other.0.iter().cloned());
    }

    pub(crate) fn remove_all(&mut self, other: &FieldSet) {
        self.0.retain(|p| !other.0.contains(p));
    }

    /// Reads a `fieldsV1` tree.
    pub(crate) fn from_fields_v1(tree: &Value) -> Result<Self, String> {
        fn read(node: &Value, path: &mut Path, set: &mut FieldSet) -> Result<(), String> {
            let Value::Object(children) = node else {
                return Err(format!("expected an object at {}", display(path)));
            };
            if children.is_empty() && !path.is_empty() {
                set.insert(path.clone());
            }
            for (key, child) in children {
                if key == "." {
                    set.insert(path.clone());
                    continue;
                }
                if !["f:", "k:", "v:", "i:"].iter().any(|p| key.starts_with(p)) {
                    return Err(format!("unknown path element {key:?}"));
                }
                path.push(key.clone());
                read(child, path, set)?;
                path.pop();
            }
            Ok(())
        }
        let mut set = FieldSet::default();
        read(tree, &mut Vec::new(), &mut set)?;
        Ok(set)
    }

    /// Writes the set as a `fieldsV1` tree.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut root = Map::new();
        for path in &self.0 {
            let mut node = &mut root;
            for element in path {
                node = node
                    .entry(element.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("every node is an object");
            }
        }
        // A member with members below it says so with ".".
        for path in &self.0 {
            if self.has_below(path) {
                let mut node = &mut root;
                for element in path {
                    node = node[element].as_object_mut().expect("built above");
                }
                node.insert(".".to_owned(), Value::Object(Map::new()));
            }
        }
        Value::Object(root)
    }
}

/// A path as conflict messages show it: `.spec.containers[name="c"].image`.
pub(crate) fn display(path: &[String]) -> String {
    let mut out = String::new();
    for element in path {
        let (kind, rest) = element.split_at(2.min(element.len()));
        match kind {
            "f:" => {
                out.push('.');
                out.push_str(rest);
            }
            "k:" => {
                let keys: Map<String, Value> = serde_json::from_str(rest).unwrap_or_default();
                let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            "v:" => out.push_str(&format!("[={rest}]")),
            _ => out.push_str(&format!("[{rest}]")),
        }
    }
    out
}

/// The field names on `path`, list items left out: what [`Schema`] is
/// asked about.
fn field_names(path: &[String]) -> Vec<&str> {
    path.iter().filter_map(|e| e.strip_prefix("f:")).collect()
}

/// The `k:` element of a keyed list item, or `None` when the item lacks a
/// key field.
fn key_element(item: &Value, keys: &[&str]) -> Option<String> {
    let mut values = Map::new();
    for key in keys {
        // A missing key field is allowed only for `protocol`, whose
        // default the server does not fill in.
        match item.get(*key) {
            Some(v) if !v.is_null() => {
                values.insert((*key).to_owned(), v.clone());
            }
            _ if *key == "protocol" => {}
            _ => return None,
        }
    }
    Some(format!("k:{}", Value::Object(values)))
}

/// Which part of an object a write owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The object itself; `status` left out when it has a subresource.
    Main { without_status: bool },
    /// The `/status` subresource: `status` alone.
    Status,
}

/// The `metadata` fields a manager can own; the rest belong to the server.
const OWNABLE_METADATA: &[&str] = &[
    "annotations",
    "finalizers",
    "generateName",
    "labels",
    "ownerReferences",
];

/// What an object holds, as field sets.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    /// Scalars, list items and empty objects and lists.
    pub(crate) members: FieldSet,
    /// Maps, structs and merged lists with members: each is a field of its
    /// own for the update that creates it (MF4).
    pub(crate) containers: FieldSet,
}

impl Fields {
    pub(crate) fn of(schema: &Schema, object: &Value, scope: Scope) -> Self {
        let mut fields = Fields::default();
        let Value::Object(top) = object else {
            return fields;
        };
        for (key, value) in top {
            let included = match (key.as_str(), scope) {
                ("apiVersion" | "kind", _) => false,
                ("status", Scope::Status) => true,
                (_, Scope::Status) => false,
                ("status", Scope::Main { without_status }) => !without_status,
                _ => true,
            };
            if !included {
                continue;
            }
            let path = vec![format!("f:{key}")];
            if key == "metadata" {
                if let Value::Object(meta) = value {
                    for (field, v) in meta {
                        if OWNABLE_METADATA.contains(&field.as_str()) {
                            let mut p = path.clone();
                            p.push(format!("f:{field}"));
                            fields.walk(schema, p, v);
                        }
                    }
                }
                continue;
            }
            fields.walk(schema, path, value);
        }
        fields
    }

    fn walk(&mut self, schema: &Schema, path: Path, value: &Value) {
        let names = field_names(&path);
        match value {
            Value::Object(map) if !map.is_empty() && !schema.is_atomic_object(&names) => {
                self.containers.insert(path.clone());
                for (key, child) in map {
                    let mut p = path.clone();
                    p.push(format!("f:{key}"));
                    self.walk(schema, p, child);
                }
            }
            Value::Array(items) if !items.is_empty() => match schema.list_type(&names) {
                ListType::Atomic => self.members.insert(path),
                ListType::Set => {
                    self.containers.insert(path.clone());
                    for item in items {
                        let mut p = path.clone();
                        p.push(format!("v:{item}"));
                        self.members.insert(p);
                    }
                }
                ListType::Map { keys, atomic_items } => {
                    let elements: Option<Vec<String>> =
                        items.iter().map(|i| key_element(i, keys)).collect();
                    let Some(elements) = elements else {
                        // An item without its key: the list counts as one value.
                        self.members.insert(path);
                        return;
                    };
                    self.containers.insert(path.clone());
                    for (item, element) in items.iter().zip(elements) {
                        let mut p = path.clone();
                        p.push(element);
                        self.members.insert(p.clone());
                        if !atomic_items && let Value::Object(map) = item {
                            for (key, child) in map {
                                let mut c = p.clone();
                                c.push(format!("f:{key}"));
                                self.walk(schema, c, child);
                            }
                        }
                    }
                }
            },
            _ => self.members.insert(path),
        }
    }
}

/// What an update from `old` to `new` did, as `(changed, removed)`:
/// `changed` holds the members that are new or hold a new value, and the
/// maps, structs and lists that did not exist before (MF4: not even empty
/// or `null`, nor as a field every object of the type has); `removed` the
/// members and containers that are gone.
pub(crate) fn changes(
    schema: &Schema,
    old: &Value,
    new: &Value,
    before: &Fields,
    after: &Fields,
) -> (FieldSet, FieldSet) {
    let mut changed = FieldSet::default();
    for path in after.members.iter() {
        let is_new = !before.members.contains(path);
        let is_leaf = !after.members.has_below(path);
        if is_new || (is_leaf && value_at(old, path) != value_at(new, path)) {
            changed.insert(path.clone());
        }
    }
    let always_present = |path: &Path| {
        let names: Option<Vec<&str>> = path.iter().map(|e| e.strip_prefix("f:")).collect();
        names.is_some_and(|names| schema.always_present(&names))
    };
    let created = |path: &Path| value_at(old, path).is_none() && !always_present(path);
    for path in after.containers.iter().filter(|p| created(p)) {
        changed.insert(path.clone());
    }
    let mut removed = FieldSet::default();
    for path in before.members.iter() {
        if !after.members.contains(path) {
            removed.insert(path.clone());
        }
    }
    for path in before.containers.iter() {
        if value_at(new, path).is_none() {
            removed.insert(path.clone());
        }
    }
    (changed, removed)
}

/// The value at `path` in `object`, if there is one.
pub(crate) fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = object;
    for element in path {
        node = step(node, element)?;
    }
    Some(node)
}

fn step<'a>(node: &'a Value, element: &str) -> Option<&'a Value> {
    match (element.strip_prefix("f:"), node) {
        (Some(field), _) => node.get(field),
        (None, Value::Array(items)) => items
            .iter()
            .enumerate()
            .find(|(i, item)| is_item(item, *i, element))
            .map(|(_, item)| item),
        _ => None,
    }
}

/// Whether `item`, at `index` in its list, is the one `element` names.
fn is_item(item: &Value, index: usize, element: &str) -> bool {
    let (kind, rest) = element.split_at(2.min(element.len()));
    match kind {
        "k:" => serde_json::from_str::<Map<String, Value>>(rest)
            .is_ok_and(|keys| keys.iter().all(|(k, v)| item.get(k) == Some(v))),
        "v:" => serde_json::from_str::<Value>(rest).is_ok_and(|wanted| *item == wanted),
        "i:" => rest.parse() == Ok(index),
        _ => false,
    }
}

/// Removes the value at `path` from `node` (a field, a list item); does
/// nothing when it is not there.
pub(crate) fn remove_at(node: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let index = match node {
        Value::Array(items) => {
            let Some(at) = (0..items.len()).find(|&i| is_item(&items[i], i, first)) else {
                return;
            };
            if rest.is_empty() {
                items.remove(at);
            } else {
                remove_at(&mut items[at], rest);
            }
            return;
        }
        Value::Object(map) => match first.strip_prefix("f:") {
            Some(key) if map.contains_key(key) => key.to_owned(),
            _ => return,
        },
        _ => return,
    };
    let map = node.as_object_mut().expect("matched an object above");
    if rest.is_empty() {
        map.remove(&index);
    } else if let Some(child) = map.get_mut(&index) {
        remove_at(child, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceType;
    use serde_json::json;

    fn deployment_schema() -> Schema {
        Schema::of(&ResourceType::new(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
        ))
    }

    #[test]
    fn mf2_fields_v1_round_trips_and_marks_members_with_children() {
        let object = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "c", "image": "nginx", "env": [{"name": "A", "value": "1"}]}
        ]}}}});
        let fields = Fields::of(
            &deployment_schema(),
            &object,
            Scope::Main {
                without_status: true,
            },
        );
        let tree = fields.members.to_fields_v1();
        assert_eq!(
            tree,
            json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}
            }}}}})
        );
        assert_eq!(FieldSet::from_fields_v1(&tree).unwrap(), fields.members);
    }

    #[test]
    fn mf2_paths_display_and_resolve_like_the_api_server_names_them() {
        let path: Path = ["f:spec", "f:containers", "k:{\"name\":\"c\"}", "f:image"]
            .map(String::from)
            .to_vec();
        assert_eq!(display(&path), ".spec.containers[name=\"c\"].image");
        let mut object =
            json!({"spec": {"containers": [{"name": "b"}, {"name": "c", "image": "x"}]}});
        assert_eq!(value_at(&object, &path), Some(&json!("x")));
        remove_at(&mut object, &path[..3]);
        assert_eq!(object, json!({"spec": {"containers": [{"name": "b"}]}}));
    }
}
