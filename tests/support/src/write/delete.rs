//! `DELETE` of one object and of a collection, with DeleteOptions from the
//! query and the body (rules DL1–DL11 in `deletion/mod.rs`): the
//! finalizers decide whether the object goes now or is marked, the
//! propagation policy adds the garbage collector's finalizers, and the
//! answer is the one the API server gives.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, decode::json_type, not_found, obj_key};
use crate::{
    deletion::{self, Outcome, Plan, Propagation},
    faults::ApiStatus,
    http::Query,
    resource::{CollectionPath, ResourceType},
    store::State,
};

/// Namespaces the API server never lets go (DL11).
const PROTECTED_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// A DeleteOptions as the request gave it.
#[derive(Debug, Default)]
pub(super) struct DeleteOptions {
    propagation: Option<String>,
    orphan_dependents: Option<bool>,
    dry_run: Vec<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

impl DeleteOptions {
    /// Reads the DeleteOptions of a request (DL8). For one object the API
    /// server reads the body, or the query parameters when there is no
    /// body, so a body makes the query's options (`dryRun` among them)
    /// count for nothing (`body_replaces_query`); for a collection the
    /// query's options are read, then the body's over them.
    pub(super) fn parse(
        params: &[(String, String)],
        body: &[u8],
        body_replaces_query: bool,
    ) -> Result<Self, ApiStatus> {
        let mut options = Self::default();
        let has_body = !body.iter().all(u8::is_ascii_whitespace);
        let params = if has_body && body_replaces_query {
            &[]
        } else {
            params
        };
        for (name, value) in params {
            match name.as_str() {
                "propagationPolicy" => options.propagation = Some(value.clone()),
                "orphanDependents" => {
                    options.orphan_dependents = Some(value.parse().map_err(|_| {
                        bad_request(&format!(
                            "strconv.ParseBool: parsing {value:?}: invalid syntax"
                        ))
                    })?);
                }
                "gracePeriodSeconds" => {
                    value.parse::<i64>().map_err(|_| {
                        bad_request(&format!(
                            "strconv.ParseInt: parsing {value:?}: invalid syntax"
                        ))
                    })?;
                }
                "dryRun" => options.dry_run.push(value.clone()),
                _ => {}
            }
        }
        if has_body {
            options.read_body(body)?;
        }
        options.validate()?;
        Ok(options)
    }

    fn read_body(&mut self, body: &[u8]) -> Result<(), ApiStatus> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            decode_error(&format!("couldn't get version/kind; json parse error: {e}"))
        })?;
        let Value::Object(fields) = &value else {
            return Err(decode_error(&format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go \
                 value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; \
                 Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                json_type(&value)
            )));
        };
        if let Some(kind) = fields.get("kind").and_then(Value::as_str)
            && kind != "DeleteOptions"
        {
            let version = fields
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(decode_error(&format!(
                "no kind {kind:?} is registered for version {version:?} in scheme \
                 \"pkg/runtime/scheme.go:110\""
            )));
        }
        let wrong = |field: &str, found: &Value, go_type: &str| {
            decode_error(&format!(
                "json: cannot unmarshal {} into Go struct field DeleteOptions.{field} of type \
                 {go_type}",
                json_type(found)
            ))
        };
        for (field, found) in fields {
            match (field.as_str(), found) {
                (_, Value::Null) => {}
                ("propagationPolicy", Value::String(s)) => self.propagation = Some(s.clone()),
                ("propagationPolicy", other) => {
                    return Err(wrong(field, other, "v1.DeletionPropagation"));
                }
                ("orphanDependents", Value::Bool(b)) => self.orphan_dependents = Some(*b),
                ("orphanDependents", other) => return Err(wrong(field, other, "bool")),
                ("gracePeriodSeconds", Value::Number(n)) if n.is_i64() => {}
                ("gracePeriodSeconds", other) => return Err(wrong(field, other, "int64")),
                ("dryRun", Value::Array(list)) if list.iter().all(Value::is_string) => {
                    self.dry_run = list
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect();
                }
                ("dryRun", other) => return Err(wrong(field, other, "[]string")),
                ("preconditions", Value::Object(pre)) => {
                    for (name, found) in pre {
                        let slot = match name.as_str() {
                            "uid" => &mut self.uid,
                            "resourceVersion" => &mut self.resource_version,
                            _ => continue,
                        };
                        match found {
                            Value::String(s) => *slot = Some(s.clone()),
                            Value::Null => {}
                            other => {
                                return Err(wrong(
                                    &format!("preconditions.{name}"),
                                    other,
                                    "string",
                                ));
                            }
                        }
                    }
                }
                ("preconditions", other) => return Err(wrong(field, other, "v1.Preconditions")),
                _ => {}
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ApiStatus> {
        let invalid = |field: &str, cause: &str, why: &str| {
            ApiStatus::invalid("meta.k8s.io", "DeleteOptions", "", &[(cause, field, why)])
        };
        if let (Some(_), Some(policy)) = (self.orphan_dependents, &self.propagation) {
            return Err(invalid(
                "propagationPolicy",
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"
                ),
            ));
        }
        if let Some(policy) = &self.propagation
            && !matches!(policy.as_str(), "Foreground" | "Background" | "Orphan")
        {
            return Err(invalid(
                "propagationPolicy",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \
                     \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
        if self.dry_run.iter().any(|d| d != "All") {
            return Err(invalid(
                "dryRun",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {}: supported values: \"All\"",
                    serde_json::to_string(&self.dry_run).unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }

    /// The policy the request asked for, the older `orphanDependents` form
    /// included (DL7).
    fn policy(&self) -> Option<Propagation> {
        match (self.orphan_dependents, self.propagation.as_deref()) {
            (Some(true), _) | (_, Some("Orphan")) => Some(Propagation::Orphan),
            (Some(false), _) | (_, Some("Background")) => Some(Propagation::Background),
            (_, Some("Foreground")) => Some(Propagation::Foreground),
            _ => None,
        }
    }

    fn dry_run(&self) -> bool {
        !self.dry_run.is_empty()
    }

    /// The preconditions against the stored object (DL8).
    fn check(&self, rt: &ResourceType, name: &str, current: &Value) -> Result<(), ApiStatus> {
        let conflict = |what: &str, wanted: &str, found: &str, hint: &str| {
            ApiStatus::new(
                409,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on {} {name:?}: the {what} in the precondition \
                     ({wanted}) does not match the {what} in record ({found}). The object might \
                     have been {hint}",
                    if rt.group.is_empty() {
                        rt.kind.clone()
                    } else {
                        format!("{}.{}", rt.kind, rt.group)
                    }
                ),
            )
            .naming(&rt.group, &rt.kind, name)
        };
        let meta = &current["metadata"];
        if let Some(wanted) = &self.uid {
            let found = meta["uid"].as_str().unwrap_or("");
            if wanted != found {
                return Err(conflict("UID", wanted, found, "deleted and then recreated"));
            }
        }
        if let Some(wanted) = &self.resource_version {
            let found = meta["resourceVersion"].as_str().unwrap_or("");
            if wanted != found {
                return Err(conflict("ResourceVersion", wanted, found, "modified"));
            }
        }
        Ok(())
    }
}

fn bad_request(message: &str) -> ApiStatus {
    ApiStatus::new(400, "BadRequest", message)
}

/// The API server answers an undecodable DeleteOptions body with a 500
/// that has no reason.
fn decode_error(message: &str) -> ApiStatus {
    ApiStatus::new(500, "", message)
}

/// Whether the API server's storage for `rt` answers an immediate deletion
/// with the object rather than a `Status` (DL1).
fn returns_object(rt: &ResourceType) -> bool {
    rt.group.is_empty()
        && matches!(
            rt.plural.as_str(),
            "pods" | "services" | "namespaces" | "persistentvolumes" | "persistentvolumeclaims"
        )
}

/// The `Status` the API server answers an immediate deletion with.
fn success(rt: &ResourceType, gone: &Value) -> Value {
    let mut details = json!({
        "name": gone["metadata"]["name"],
        "kind": rt.plural,
        "uid": gone["metadata"]["uid"],
    });
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// Deletes (or, with dryRun, pretends to delete) the object at `current`.
fn delete_one(
    state: &mut State,
    rt: &ResourceType,
    current: std::sync::Arc<Value>,
    options: &DeleteOptions,
) -> Result<Outcome, ApiStatus> {
    let now = state.clock.now();
    let plan = deletion::plan(rt, current, options.policy(), &now);
    if options.dry_run() {
        return Ok(match plan {
            Plan::Unchanged(object) => Outcome::Stays((*object).clone()),
            Plan::Mark(object) => Outcome::Stays(object),
            Plan::Remove(object) => Outcome::Gone((*object).clone()),
        });
    }
    deletion::carry_out(state, rt, plan).map_err(|e| super::store_error(rt, e))
}

pub(super) fn delete(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    name: &str,
    options: &DeleteOptions,
) -> Answer {
    // Admission comes before the object is read.
    if deletion::is_namespace(rt) && PROTECTED_NAMESPACES.contains(&name) {
        return Err(ApiStatus::new(
            403,
            "Forbidden",
            &format!("namespaces {name:?} is forbidden: this namespace may not be deleted"),
        ));
    }
    let current = state
        .current(&path.resource, &obj_key(path, name))
        .ok_or_else(|| not_found(rt, name))?;
    options.check(rt, name, &current)?;
    match delete_one(state, rt, current, options)? {
        Outcome::Stays(object) => {
            // Asking for cascading deletion with the older field gets 202.
            let code = if options.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok((code, object))
        }
        Outcome::Gone(last) if returns_object(rt) => Ok((StatusCode::OK, last)),
        Outcome::Gone(last) => Ok((StatusCode::OK, success(rt, &last))),
    }
}

pub(super) fn delete_collection(
    state: &mut State,
    rt: &ResourceType,
    path: &CollectionPath,
    query: &Query,
    options: &DeleteOptions,
) -> Answer {
    let listed_at = state.rv;
    let listed: Vec<Value> = state
        .current_objects(rt)
        .into_iter()
        .filter(|o| query.selects(path.namespace.as_deref(), o))
        .collect();
    for object in &listed {
        let key = deletion::key_of(object);
        let Some(current) = state.current(&rt.id(), &key) else {
            continue;
        };
        if deletion::is_namespace(rt) && PROTECTED_NAMESPACES.contains(&key.1.as_str()) {
            continue;
        }
        delete_one(state, rt, current, options)?;
    }
    // The items of the answer carry no kind or apiVersion, as in the API
    // server's lists.
    let items: Vec<Value> = listed
        .into_iter()
        .map(|mut item| {
            if let Some(fields) = item.as_object_mut() {
                fields.remove("kind");
                fields.remove("apiVersion");
            }
            item
        })
        .collect();
    let body = json!({
        "kind": format!("{}List", rt.kind),
        "apiVersion": rt.api_version(),
        "metadata": {"resourceVersion": listed_at.to_string()},
        "items": items,
    });
    Ok((StatusCode::OK, body))
}
