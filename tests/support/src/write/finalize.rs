//! The deletion rules that other writes must respect: an update of an
//! object being deleted (DL4–DL6) and a creation in a terminating
//! namespace or of a namespace (DL12, DL13). Each is one call from the
//! create and update paths.

use serde_json::{Value, json};

use super::store_error;
use crate::{
    deletion::{self, field_mut, is_deleting, is_namespace},
    faults::ApiStatus,
    resource::ResourceType,
    store::State,
};

/// Call before storing an update of `current` into `object` (after the
/// server-owned fields are restored, before the no-op check): keeps the
/// deletion fields (DL6), refuses new finalizers on an object being
/// deleted (DL5), and when the update empties the finalizers of an object
/// being deleted, deletes it and returns the answer (DL4).
pub(super) fn before_update(
    state: &mut State,
    rt: &ResourceType,
    current: &Value,
    object: &mut Value,
) -> Result<Option<Value>, ApiStatus> {
    let added = deletion::new_finalizers(current, object);
    if !added.is_empty() {
        let name = current["metadata"]["name"].as_str().unwrap_or("");
        let listed: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
        let why = format!(
            "Forbidden: no new finalizers can be added if the object is being deleted, found new \
             finalizers []string{{{}}}",
            listed.join(", ")
        );
        // The API server checks the finalizers twice (object metadata, then
        // the update's rules) and reports both.
        let error = ("FieldValueForbidden", "metadata.finalizers", why.as_str());
        return Err(ApiStatus::invalid(
            &rt.group,
            &rt.kind,
            name,
            &[error, error],
        ));
    }
    let released =
        deletion::finish_update(state, rt, current, object).map_err(|e| store_error(rt, e))?;
    Ok(released.then(|| object.clone()))
}

/// Call before storing a creation: refuses one in a namespace being
/// terminated (DL12) and gives a new namespace the API server's defaults
/// (DL13).
pub(super) fn before_create(
    state: &State,
    rt: &ResourceType,
    object: &mut Value,
) -> Result<(), ApiStatus> {
    if is_namespace(rt) {
        let name = object["metadata"]["name"].clone();
        let label = ["metadata", "labels", "kubernetes.io/metadata.name"];
        *field_mut(object, &label) = name;
        *field_mut(object, &["spec", "finalizers"]) = json!([deletion::NAMESPACE_FINALIZER]);
        *field_mut(object, &["status", "phase"]) = json!("Active");
        return Ok(());
    }
    let Some(namespace) = object["metadata"]["namespace"].as_str() else {
        return Ok(());
    };
    let namespaces = ResourceType::new("", "v1", "namespaces", "Namespace", false);
    let terminating = state
        .current(&namespaces.id(), &(String::new(), namespace.to_owned()))
        .is_some_and(|ns| is_deleting(&ns));
    if terminating {
        let name = object["metadata"]["name"].as_str().unwrap_or("");
        return Err(ApiStatus::new(
            403,
            "Forbidden",
            &format!(
                "{} {name:?} is forbidden: unable to create new content in namespace {namespace} \
                 because it is being terminated",
                super::qualified(rt)
            ),
        )
        .naming(&rt.group, &rt.plural, name)
        .with_cause(
            "NamespaceTerminating",
            &format!("namespace {namespace} is being terminated"),
            "metadata.namespace",
        ));
    }
    Ok(())
}
