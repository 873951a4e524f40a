//! JSON patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy` and
//! `test`, applied the way kube-apiserver applies them.
//!
//! The `json-patch` crate applies each operation. Where the RFC leaves room,
//! the API server's patch library decides, and this file bends the crate's
//! answer to it in two places: a `test` of a member that its object lacks
//! passes when the expected value is `null` (so `{"op":"test","path":"/metadata/finalizers","value":null}`
//! checks that an object has no finalizers; the crate would fail it), and a
//! `replace` of such a member adds it (the crate would refuse it). A `test`
//! or `replace` below a parent that is missing still fails. Array indices
//! are `0..len` (`-` and `len` append for `add`); negative indices and
//! leading zeros are refused.
//!
//! Rules (the unit tests below name them):
//! - **JP1** `add` sets an object's member and inserts into (or, at `-`,
//!   appends to) an array; its parent must exist and an index be in bounds.
//! - **JP2** `remove`, `replace`, `move` and `copy` act on a path that
//!   exists, except that `replace` of a member its object lacks adds it
//!   (the API server's patch library does; its parent must exist).
//! - **JP3** `test` compares values; a missing member equals `null`.
//! - **JP4** A patch applies whole or not at all.
//! - **JP5** An unknown op or a malformed path is an error (422).
//! - **JP6** A body that is not a list of operations is answered 400; a
//!   patch that sets a stale `metadata.resourceVersion` is answered 409.

use json_patch::{AddOperation, PatchOperation, jsonptr::Pointer};
use serde::Deserialize;
use serde_json::Value;

/// Why a patch did not apply. The API server answers every one of these
/// with the same 422; the text is for the fake server's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatchError(pub(crate) String);

/// Applies `patch` (already checked to be an array) to `doc`, all or
/// nothing: on an error `doc` is left as it was.
pub(crate) fn apply(doc: &mut Value, patch: &[Value]) -> Result<(), PatchError> {
    // The operations run on a copy, so a failing one needs no undo (JP4).
    let mut patched = doc.clone();
    for (n, operation) in patch.iter().enumerate() {
        apply_one(&mut patched, operation)
            .map_err(|why| PatchError(format!("operation {n}: {why}")))?;
    }
    *doc = patched;
    Ok(())
}

fn apply_one(doc: &mut Value, operation: &Value) -> Result<(), String> {
    // An unknown op, a missing field or a path that is no JSON pointer
    // does not decode (JP5).
    let operation = PatchOperation::deserialize(operation).map_err(|e| e.to_string())?;
    let operation = match operation {
        // The API server's patch library reads a member its object lacks
        // as null (JP3).
        PatchOperation::Test(test) if test.value.is_null() && lacks_member(doc, &test.path) => {
            return Ok(());
        }
        // ... and replaces it by adding it (JP2).
        PatchOperation::Replace(replace) if lacks_member(doc, &replace.path) => {
            PatchOperation::Add(AddOperation {
                path: replace.path,
                value: replace.value,
            })
        }
        operation => operation,
    };
    json_patch::patch_unsafe(doc, std::slice::from_ref(&operation)).map_err(|e| e.to_string())
}

/// Whether `path` names a member that its object, which exists, lacks.
fn lacks_member(doc: &Value, path: &Pointer) -> bool {
    let Some((parent, last)) = path.split_back() else {
        return false;
    };
    matches!(
        doc.pointer(parent.as_str()),
        Some(Value::Object(members)) if !members.contains_key(last.decoded().as_ref())
    )
}

#[cfg(test)]
mod tests {
    use super::{PatchError, apply};
    use serde_json::{Value, json};

    fn patched(doc: Value, patch: Value) -> Result<Value, PatchError> {
        let mut doc = doc;
        apply(&mut doc, patch.as_array().unwrap())?;
        Ok(doc)
    }

    #[test]
    fn jp1_add_sets_members_and_inserts_or_appends_to_arrays() {
        let doc = json!({"a": {"l": [1, 3]}});
        let out = patched(
            doc,
            json!([
                {"op": "add", "path": "/a/b", "value": "x"},
                {"op": "add", "path": "/a/l/1", "value": 2},
                {"op": "add", "path": "/a/l/-", "value": 4},
                {"op": "add", "path": "/a/l/4", "value": 5},
                {"op": "add", "path": "/a~1b", "value": {"c~d": 1}},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"a": {"b": "x", "l": [1, 2, 3, 4, 5]}, "a/b": {"c~d": 1}})
        );
    }

    #[test]
    fn jp1_add_needs_an_existing_parent_and_an_index_in_bounds() {
        let doc = json!({"l": [1]});
        for op in [
            json!({"op": "add", "path": "/missing/x", "value": 1}),
            json!({"op": "add", "path": "/l/2", "value": 1}),
            json!({"op": "add", "path": "/l/01", "value": 1}),
            json!({"op": "add", "path": "/l/-1", "value": 1}),
        ] {
            assert!(patched(doc.clone(), json!([op])).is_err(), "{op}");
        }
    }

    #[test]
    fn jp2_remove_replace_move_and_copy() {
        let doc = json!({"a": 1, "b": [1, 2, 3], "c": {"d": "e"}});
        let out = patched(
            doc.clone(),
            json!([
                {"op": "remove", "path": "/b/0"},
                {"op": "replace", "path": "/a", "value": 9},
                {"op": "move", "from": "/c/d", "path": "/moved"},
                {"op": "copy", "from": "/b", "path": "/c/copy"},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"a": 9, "b": [2, 3], "c": {"copy": [2, 3]}, "moved": "e"})
        );
        // A member its object lacks is replaced by adding it.
        let out = patched(
            doc.clone(),
            json!([{"op": "replace", "path": "/c/new", "value": 1}]),
        )
        .unwrap();
        assert_eq!(out["c"], json!({"d": "e", "new": 1}));
        for op in [
            json!({"op": "remove", "path": "/x"}),
            json!({"op": "remove", "path": "/b/3"}),
            json!({"op": "replace", "path": "/x/y", "value": 1}),
            json!({"op": "replace", "path": "/b/3", "value": 1}),
            json!({"op": "move", "from": "/x", "path": "/y"}),
            json!({"op": "move", "from": "/c", "path": "/c/d/e"}),
            json!({"op": "copy", "from": "/x", "path": "/y"}),
        ] {
            assert!(patched(doc.clone(), json!([op])).is_err(), "{op}");
        }
    }

    #[test]
    fn jp3_test_compares_values_and_a_missing_member_equals_null() {
        let doc = json!({"metadata": {"name": "a", "finalizers": ["x/y"]}});
        for passing in [
            json!({"op": "test", "path": "/metadata/finalizers", "value": ["x/y"]}),
            json!({"op": "test", "path": "/metadata/finalizers/0", "value": "x/y"}),
            json!({"op": "test", "path": "/metadata/labels", "value": null}),
        ] {
            assert!(patched(doc.clone(), json!([passing])).is_ok(), "{passing}");
        }
        for failing in [
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "test", "path": "/metadata/finalizers/0", "value": "x/z"}),
            json!({"op": "test", "path": "/metadata/finalizers/1", "value": "x/y"}),
            // The parent is missing, or the index out of bounds: fails
            // even for null.
            json!({"op": "test", "path": "/metadata/labels/k", "value": null}),
            json!({"op": "test", "path": "/metadata/finalizers/1", "value": null}),
            json!({"op": "test", "path": "/metadata/name"}),
        ] {
            assert!(patched(doc.clone(), json!([failing])).is_err(), "{failing}");
        }
    }

    #[test]
    fn jp4_a_failing_operation_leaves_the_document_as_it_was() {
        let mut doc = json!({"metadata": {"finalizers": ["x/y"]}});
        let before = doc.clone();
        let patch = json!([
            {"op": "add", "path": "/metadata/finalizers/-", "value": "x/z"},
            {"op": "test", "path": "/metadata/finalizers", "value": ["x/y"]},
        ]);
        assert!(apply(&mut doc, patch.as_array().unwrap()).is_err());
        assert_eq!(doc, before);
    }

    #[test]
    fn jp5_unknown_ops_and_bad_paths_are_errors() {
        for op in [
            json!({"op": "frob", "path": "/a"}),
            json!({"op": "add", "path": "a", "value": 1}),
            json!({"path": "/a", "value": 1}),
            json!({"op": "add", "value": 1}),
        ] {
            assert!(patched(json!({"a": 1}), json!([op])).is_err(), "{op}");
        }
    }
}
