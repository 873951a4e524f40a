//! Strategic merge patch (`application/strategic-merge-patch+json`) of
//! built-in kinds, the patch `kubectl` and many controllers send.
//!
//! # Rules
//!
//! - SM1: objects merge key by key, `null` removes a key (as a merge patch).
//! - SM2: lists with a merge key in the table of `merge_keys.rs`
//!   (containers, env, volumes by `name`; container ports by
//!   `containerPort`; conditions by `type`; …) merge item by item: a patch
//!   item changes the item with the same key or is added; the order is the
//!   patch's for its items and the stored one for the rest, the two
//!   interleaved as the API server does.
//! - SM3: `{"<key>": …, "$patch": "delete"}` in such a list deletes that
//!   item; `{"$patch": "replace"}` among the items replaces the whole list
//!   with the other items; `"$patch": "replace"` in an object replaces the
//!   object, `"$patch": "delete"` removes it.
//! - SM4: lists of scalars with a merge strategy (`metadata.finalizers`)
//!   are merged as sets; `$deleteFromPrimitiveList/<field>` removes values
//!   from them. `$setElementOrder/<field>` and `$retainKeys` are accepted
//!   and `$retainKeys` drops the keys it does not list.
//! - SM5: every other list is replaced whole, as the API server does for
//!   lists without a patch strategy.
//! - SM6: custom resources refuse strategic merge patches with 415 (see
//!   `update.rs`); an unknown `$patch` value is the API server's 500.
//!
//! Not modelled: `$patch: merge` on lists of scalars with `retainKeys`
//! strategy beyond what SM4 says, and patch strategies of fields outside
//! the table (they are replaced whole).

use serde_json::{Map, Value};

use crate::{faults::ApiStatus, merge_keys::Schema};

/// Patches `target` with `patch` (both JSON objects).
pub(super) fn patch(schema: &Schema, target: &mut Value, patch: &Value) -> Result<(), ApiStatus> {
    merge_object(schema, &mut Vec::new(), target, patch)
}

fn unknown_directive(value: &Value) -> ApiStatus {
    let shown = value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned);
    ApiStatus::new(
        500,
        "InternalError",
        &format!("unknown patch type: {shown} in map: map[$patch:{shown}]"),
    )
}

fn merge_object<'a>(
    schema: &Schema,
    fields: &mut Vec<&'a str>,
    target: &mut Value,
    patch: &'a Value,
) -> Result<(), ApiStatus> {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    if let Some(directive) = patch.get("$patch") {
        match directive.as_str() {
            Some("replace") => {
                *target = Value::Object(without_directives(patch));
                return Ok(());
            }
            Some("delete") => {
                *target = Value::Object(Map::new());
                return Ok(());
            }
            Some("merge") => {}
            _ => return Err(unknown_directive(directive)),
        }
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        if let Some(map) = target.as_object_mut() {
            map.retain(|k, _| keep.contains(&k.as_str()));
        }
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let doomed = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(items)) = target.get_mut(field) {
                items.retain(|item| !doomed.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        let map = target.as_object_mut().expect("made an object above");
        if value.is_null() {
            map.remove(key);
            continue;
        }
        fields.push(key);
        let slot = map.entry(key.clone()).or_insert(Value::Null);
        match value {
            Value::Object(_) => {
                let deleted = value.get("$patch").and_then(Value::as_str) == Some("delete");
                merge_object(schema, fields, slot, value)?;
                if deleted {
                    map.remove(key);
                }
            }
            Value::Array(items) => merge_list(schema, fields, slot, items)?,
            _ => *slot = value.clone(),
        }
        fields.pop();
    }
    Ok(())
}

fn without_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn merge_list<'a>(
    schema: &Schema,
    fields: &mut Vec<&'a str>,
    target: &mut Value,
    patch: &'a [Value],
) -> Result<(), ApiStatus> {
    let original = target.as_array().cloned().unwrap_or_default();
    let merged = match schema.strategic_key(fields) {
        None => patch.to_vec(),
        Some("") => {
            let mut set = original;
            for item in patch {
                if !set.contains(item) {
                    set.push(item.clone());
                }
            }
            set
        }
        Some(key) => merge_keyed(schema, fields, original, patch, key)?,
    };
    *target = Value::Array(merged);
    Ok(())
}

fn merge_keyed<'a>(
    schema: &Schema,
    fields: &mut Vec<&'a str>,
    original: Vec<Value>,
    patch: &'a [Value],
    key: &str,
) -> Result<Vec<Value>, ApiStatus> {
    let replace = patch
        .iter()
        .any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"));
    if replace {
        return Ok(patch
            .iter()
            .filter(|item| item.get("$patch").is_none())
            .cloned()
            .collect());
    }
    let position = |item: &Value| {
        let wanted = item.get(key)?;
        original.iter().position(|o| o.get(key) == Some(wanted))
    };
    // Items of the patch (in patch order, each with its stored position if
    // it has one) and the stored items the patch does not name.
    let mut from_patch: Vec<(Option<usize>, Value)> = Vec::new();
    let mut deleted: Vec<usize> = Vec::new();
    for item in patch {
        let at = position(item);
        match item.get("$patch") {
            Some(d) if d.as_str() == Some("delete") => {
                deleted.extend(at);
                continue;
            }
            Some(d) if d.as_str() != Some("merge") => return Err(unknown_directive(d)),
            _ => {}
        }
        let mut merged = at.map_or(Value::Null, |i| original[i].clone());
        merge_object(schema, fields, &mut merged, item)?;
        from_patch.push((at, merged));
    }
    let named: Vec<usize> = from_patch.iter().filter_map(|(at, _)| *at).collect();
    let mut stored_only: Vec<(usize, Value)> = original
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !named.contains(i) && !deleted.contains(i))
        .collect();
    // Interleave: a stored-only item goes first only when the next patch
    // item sits after it in the stored order.
    let mut out = Vec::new();
    let mut patch_items = from_patch.into_iter().peekable();
    stored_only.reverse();
    while let Some((at, item)) = patch_items.peek() {
        match stored_only.last() {
            Some((stored_at, _)) if at.is_some_and(|a| a > *stored_at) => {
                out.push(stored_only.pop().expect("peeked").1);
            }
            _ => {
                out.push(item.clone());
                patch_items.next();
            }
        }
    }
    out.extend(stored_only.into_iter().rev().map(|(_, item)| item));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceType;
    use serde_json::json;

    fn apps() -> Schema {
        Schema::of(&ResourceType::new(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
        ))
    }

    #[test]
    fn sm1_objects_merge_key_by_key_and_null_removes_a_key() {
        let mut target = json!({"metadata": {"labels": {"a": "1", "b": "2"},
            "annotations": {"keep": "x"}}, "spec": {"replicas": 1, "paused": true}});
        let p = json!({"metadata": {"labels": {"b": null, "c": "3"}},
            "spec": {"replicas": 3, "paused": null, "minReadySeconds": 5}});
        patch(&apps(), &mut target, &p).unwrap();
        assert_eq!(
            target,
            json!({"metadata": {"labels": {"a": "1", "c": "3"}, "annotations": {"keep": "x"}},
                "spec": {"replicas": 3, "minReadySeconds": 5}})
        );
        // A key the target lacks, set to null, stays absent; an object
        // replacing a scalar (or the reverse) is set whole.
        let p = json!({"spec": {"missing": null, "replicas": {"n": 1}}});
        patch(&apps(), &mut target, &p).unwrap();
        assert_eq!(
            target["spec"],
            json!({"replicas": {"n": 1}, "minReadySeconds": 5})
        );
    }

    #[test]
    fn sm2_containers_merge_by_name_and_new_items_come_first() {
        let mut target = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx", "env": [{"name": "A", "value": "1"}]}
        ]}}}});
        let p = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "env": [{"name": "B", "value": "2"}]},
            {"name": "side", "image": "busybox"}
        ]}}}});
        patch(&apps(), &mut target, &p).unwrap();
        // What kube-apiserver 1.34 answered to the same patch.
        assert_eq!(
            target["spec"]["template"]["spec"]["containers"],
            json!([
                {"name": "c", "image": "nginx", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox"}
            ])
        );
    }

    #[test]
    fn sm2_a_changed_item_keeps_its_place() {
        let mut target = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "1"}
        ]}}}});
        let p =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}});
        patch(&apps(), &mut target, &p).unwrap();
        assert_eq!(
            target["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
        );
    }

    #[test]
    fn sm3_and_sm4_directives() {
        let mut target = json!({"metadata": {"finalizers": ["a", "b"]},
            "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "side"}]}}}});
        let p = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]},
            "spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}}});
        patch(&apps(), &mut target, &p).unwrap();
        assert_eq!(target["metadata"]["finalizers"], json!(["b", "c"]));
        assert_eq!(
            target["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a"}])
        );
        // SM6: an unknown `$patch` value is the API server's 500.
        let bad = json!({"metadata": {"$patch": "bogus"}});
        assert_eq!(patch(&apps(), &mut target, &bad).unwrap_err().code, 500);
    }

    #[test]
    fn sm5_lists_without_a_key_are_replaced() {
        let mut target = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "a"}]}}}});
        let p = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "b"}]}}}});
        patch(&apps(), &mut target, &p).unwrap();
        assert_eq!(
            target["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "b"}])
        );
    }
}
