//! The two JSON patches the helper sends, each testing the state it was
//! computed from so that the API server refuses it after a concurrent
//! change (Z5) instead of applying it to something else.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// Adds `finalizer` to the object `meta` describes.
///
/// Without finalizers the patch tests `/metadata/finalizers` against
/// `null` (the API server reads a missing member as `null`) and adds the
/// whole list; with some it tests the list as read and appends. Either way
/// a finalizer written meanwhile by anyone makes the test fail.
pub(super) fn add(meta: &ObjectMeta, finalizer: &str) -> Value {
    let mut operations = same_object(meta);
    match meta.finalizers.as_deref() {
        // The API server never stores an empty list (it drops the member),
        // so an empty list read from anywhere is tested as the missing one.
        None | Some([]) => operations.extend([
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}),
        ]),
        Some(present) => operations.extend([
            json!({"op": "test", "path": "/metadata/finalizers", "value": present}),
            json!({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}),
        ]),
    }
    Value::Array(operations)
}

/// Removes every entry equal to `finalizer`, each by index after a test
/// that the index still holds it; the highest index goes first, so the
/// indices of the others stay where they were read.
///
/// A concurrent edit that moved entries makes a test fail rather than
/// removing another writer's finalizer. Entries other than ours may change
/// meanwhile without a conflict as long as ours stay where they were.
pub(super) fn remove(meta: &ObjectMeta, finalizer: &str) -> Value {
    let mut operations = same_object(meta);
    for index in positions(meta, finalizer).into_iter().rev() {
        let path = format!("/metadata/finalizers/{index}");
        operations.extend([
            json!({"op": "test", "path": path, "value": finalizer}),
            json!({"op": "remove", "path": path}),
        ]);
    }
    Value::Array(operations)
}

/// Where `finalizer` stands in the object's list, in order.
pub(super) fn positions(meta: &ObjectMeta, finalizer: &str) -> Vec<usize> {
    meta.finalizers
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, f)| *f == finalizer)
        .map(|(i, _)| i)
        .collect()
}

/// A test that the patch reaches the object it was computed from, not one
/// deleted and created again under its name (or another namespace's): the
/// uid, when the object carries one.
fn same_object(meta: &ObjectMeta) -> Vec<Value> {
    match meta.uid.as_deref() {
        Some(uid) if !uid.is_empty() => {
            vec![json!({"op": "test", "path": "/metadata/uid", "value": uid})]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{add, remove};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn meta(uid: Option<&str>, finalizers: Option<&[&str]>) -> ObjectMeta {
        ObjectMeta {
            name: Some("app".into()),
            uid: uid.map(Into::into),
            finalizers: finalizers.map(|f| f.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }
    }

    /// Z1, Z5: with no finalizers the patch tests for none and adds the
    /// list; with some it tests the list as read and appends.
    #[test]
    fn z1_z5_add_tests_the_list_it_was_computed_from() {
        assert_eq!(
            add(&meta(Some("u-1"), None), "example.com/x"),
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u-1"},
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/x"]},
            ])
        );
        assert_eq!(
            add(&meta(Some("u-1"), Some(&[])), "example.com/x"),
            add(&meta(Some("u-1"), None), "example.com/x"),
        );
        assert_eq!(
            add(&meta(None, Some(&["other.io/y"])), "example.com/x"),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["other.io/y"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/x"},
            ])
        );
    }

    /// Z3, Z5: each entry of ours is tested at its index before it goes,
    /// the highest index first.
    #[test]
    fn z3_z5_remove_tests_each_entry_before_removing_it() {
        assert_eq!(
            remove(
                &meta(Some("u-1"), Some(&["a.io/x", "example.com/x", "b.io/y"])),
                "example.com/x"
            ),
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u-1"},
                {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/x"},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ])
        );
        assert_eq!(
            remove(
                &meta(None, Some(&["example.com/x", "a.io/x", "example.com/x"])),
                "example.com/x"
            ),
            json!([
                {"op": "test", "path": "/metadata/finalizers/2", "value": "example.com/x"},
                {"op": "remove", "path": "/metadata/finalizers/2"},
                {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/x"},
                {"op": "remove", "path": "/metadata/finalizers/0"},
            ])
        );
    }
}
