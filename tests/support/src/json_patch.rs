//! JSON patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy` and
//! `test`, applied the way kube-apiserver applies them.
//!
//! Where the RFC leaves room, the API server's patch library decides, and
//! so does this file: a `test` of a member that its object lacks passes
//! when the expected value is `null` (so `{"op":"test","path":"/metadata/finalizers","value":null}`
//! checks that an object has no finalizers), while a `test` below a parent
//! that is missing fails. Array indices are `0..len` (`-` and `len` append
//! for `add`); negative indices are refused.
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

use serde_json::Value;

/// Why a patch did not apply. The API server answers every one of these
/// with the same 422; the text is for the fake server's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatchError(pub(crate) String);

/// Applies `patch` (already checked to be an array) to `doc`, all or
/// nothing: on an error `doc` is left as it was.
pub(crate) fn apply(doc: &mut Value, patch: &[Value]) -> Result<(), PatchError> {
    let mut patched = doc.clone();
    for (n, operation) in patch.iter().enumerate() {
        apply_one(&mut patched, operation)
            .map_err(|PatchError(why)| PatchError(format!("operation {n}: {why}")))?;
    }
    *doc = patched;
    Ok(())
}

fn apply_one(doc: &mut Value, operation: &Value) -> Result<(), PatchError> {
    let field = |name: &str| -> Result<&str, PatchError> {
        operation[name]
            .as_str()
            .ok_or_else(|| PatchError(format!("no string {name:?}")))
    };
    let value = || -> Result<Value, PatchError> {
        operation
            .get("value")
            .cloned()
            .ok_or_else(|| PatchError("no \"value\"".into()))
    };
    let path = pointer(field("path")?)?;
    match field("op")? {
        "add" => add(doc, &path, value()?),
        "remove" => remove(doc, &path).map(drop),
        "replace" => match get_mut(doc, &path)? {
            Some(target) => {
                *target = value()?;
                Ok(())
            }
            // The API server's patch library replaces a member its object
            // lacks by adding it (JP2).
            None => add(doc, &path, value()?),
        },
        "move" => {
            let from = pointer(field("from")?)?;
            if path.len() > from.len() && path[..from.len()] == from[..] {
                return Err(PatchError(
                    "move: cannot move into a child of itself".into(),
                ));
            }
            let moved = remove(doc, &from)?;
            add(doc, &path, moved)
        }
        "copy" => {
            let from = pointer(field("from")?)?;
            let copied = get_mut(doc, &from)?
                .ok_or_else(|| PatchError(format!("copy: {} is missing", show(&from))))?
                .clone();
            add(doc, &path, copied)
        }
        "test" => test(doc, &path, &value()?),
        other => Err(PatchError(format!("unknown op {other:?}"))),
    }
}

/// `/a/b~1c` → `["a", "b/c"]`; `""` is the whole document.
fn pointer(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(PatchError(format!("path {path:?} does not start with '/'")));
    };
    Ok(rest
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn show(path: &[String]) -> String {
    path.iter().map(|t| format!("/{t}")).collect()
}

/// An index into an array of `len` elements; `append` allows `len` and `-`.
fn index(token: &str, len: usize, append: bool) -> Result<usize, PatchError> {
    if append && token == "-" {
        return Ok(len);
    }
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let i: usize = valid
        .then(|| token.parse().ok())
        .flatten()
        .ok_or_else(|| PatchError(format!("{token:?} is not an array index")))?;
    if i < len || (append && i == len) {
        Ok(i)
    } else {
        Err(PatchError(format!(
            "index {i} is out of bounds ({len} elements)"
        )))
    }
}

/// The value at `path`: `Ok(None)` when only the last step is missing and
/// it names an object's member, `Err` when a parent is missing or an array
/// index is out of bounds.
fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Result<Option<&'a mut Value>, PatchError> {
    let Some((last, parents)) = path.split_last() else {
        return Ok(Some(doc));
    };
    let parent = parent_mut(doc, parents)?;
    Ok(match parent {
        Value::Object(map) => map.get_mut(last),
        Value::Array(items) => {
            let i = index(last, items.len(), false)?;
            items.get_mut(i)
        }
        _ => None,
    })
}

/// The container that holds the last step of a path.
fn parent_mut<'a>(doc: &'a mut Value, parents: &[String]) -> Result<&'a mut Value, PatchError> {
    let mut at = doc;
    for (depth, token) in parents.iter().enumerate() {
        let missing = || PatchError(format!("{} is missing", show(&parents[..=depth])));
        at = match at {
            Value::Object(map) => map.get_mut(token).ok_or_else(missing)?,
            Value::Array(items) => {
                let i = index(token, items.len(), false).map_err(|_| missing())?;
                &mut items[i]
            }
            _ => return Err(missing()),
        };
    }
    if at.is_object() || at.is_array() {
        Ok(at)
    } else {
        Err(PatchError(format!(
            "{} is not an object or array",
            show(parents)
        )))
    }
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), PatchError> {
    let Some((last, parents)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(doc, parents)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
        }
        Value::Array(items) => {
            let i = index(last, items.len(), true)?;
            items.insert(i, value);
        }
        _ => return Err(PatchError(format!("add: {} has no container", show(path)))),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, PatchError> {
    let Some((last, parents)) = path.split_last() else {
        return Err(PatchError(
            "remove: cannot remove the whole document".into(),
        ));
    };
    let missing = || PatchError(format!("remove: {} is missing", show(path)));
    match parent_mut(doc, parents)? {
        Value::Object(map) => map.remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let i = index(last, items.len(), false).map_err(|_| missing())?;
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

fn test(doc: &mut Value, path: &[String], expected: &Value) -> Result<(), PatchError> {
    let actual = get_mut(doc, path)?;
    let equal = match actual {
        // A member the object lacks passes a test for null (the API
        // server's patch library reads it as null).
        None => expected.is_null(),
        Some(actual) => &*actual == expected,
    };
    if equal {
        Ok(())
    } else {
        Err(PatchError(format!(
            "test: {} is not {expected}",
            show(path)
        )))
    }
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
