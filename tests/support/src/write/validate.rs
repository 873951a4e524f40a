//! The few update checks of built-in kinds that the write scripts and
//! reconcilers run into, with the API server's 422 answers.
//!
//! - **WR7** A Pod's `spec.activeDeadlineSeconds` may only shrink: an
//!   update may lower it or leave it, not raise it, not remove it once set,
//!   and never set it outside 1..=2147483647 (a running Pod's deadline can
//!   be brought forward, never put off).
//! - **WR8** A new object's name (and its `generateName` prefix) is a
//!   lowercase RFC 1123 subdomain of at most 253 characters, a
//!   Namespace's an RFC 1123 label of at most 63, for the kinds that
//!   require it (every custom resource, and the built-in kinds in
//!   [`SUBDOMAIN_NAMED`]); 422 with the API server's messages otherwise.

use serde_json::Value;

use crate::{faults::ApiStatus, resource::ResourceType};

/// Built-in collections whose objects are named by RFC 1123 subdomains,
/// as `(group, plural)`. Other built-in kinds have their own rules (RBAC
/// roles allow `:`, Services need DNS labels), which the server does not
/// check.
const SUBDOMAIN_NAMED: &[(&str, &str)] = &[
    ("", "configmaps"),
    ("", "secrets"),
    ("", "pods"),
    ("", "nodes"),
    ("", "serviceaccounts"),
    ("", "persistentvolumeclaims"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("coordination.k8s.io", "leases"),
];

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
    characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
    'example.com', regex used for validation is \
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
    characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  \
    or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// WR8: checks the name of `object`, about to be created.
pub(super) fn create(rt: &ResourceType, object: &Value) -> Result<(), ApiStatus> {
    let is_label = rt.group.is_empty() && rt.plural == "namespaces";
    let is_subdomain = !crate::builtin::is_builtin_group(&rt.group)
        || SUBDOMAIN_NAMED.contains(&(rt.group.as_str(), rt.plural.as_str()));
    if !is_label && !is_subdomain {
        return Ok(());
    }
    let check = |value: &str| -> Vec<String> {
        let (max, ok, pattern) = if is_label {
            (63, is_dns_label(value), LABEL)
        } else {
            (253, value.split('.').all(is_dns_label), SUBDOMAIN)
        };
        let mut why = Vec::new();
        if value.len() > max {
            why.push(format!("must be no more than {max} characters"));
        }
        if !ok {
            why.push(pattern.to_owned());
        }
        why
    };
    let meta = &object["metadata"];
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut errors = Vec::new();
    if let Some(prefix) = meta["generateName"].as_str().filter(|p| !p.is_empty()) {
        // A prefix may end in the `-` before the generated part.
        let masked = prefix
            .strip_suffix('-')
            .map_or(prefix.to_owned(), |p| format!("{p}a"));
        for why in check(&masked) {
            errors.push((
                "metadata.generateName",
                format!("Invalid value: {}: {why}", quoted(prefix)),
            ));
        }
    }
    let name = meta["name"].as_str().unwrap_or("");
    if !name.is_empty() {
        for why in check(name) {
            errors.push((
                "metadata.name",
                format!("Invalid value: {}: {why}", quoted(name)),
            ));
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let causes: Vec<(&str, &str, &str)> = errors
        .iter()
        .map(|(field, why)| ("FieldValueInvalid", *field, why.as_str()))
        .collect();
    Err(ApiStatus::invalid(&rt.group, &rt.kind, name, &causes))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

/// Checks the update of `current` to `object`.
pub(super) fn update(rt: &ResourceType, current: &Value, object: &Value) -> Result<(), ApiStatus> {
    if rt.group.is_empty() && rt.plural == "pods" {
        pod_deadline(rt, current, object)?;
    }
    Ok(())
}

/// WR7.
fn pod_deadline(rt: &ResourceType, current: &Value, object: &Value) -> Result<(), ApiStatus> {
    let field = "spec.activeDeadlineSeconds";
    let deadline = |pod: &Value| {
        pod["spec"]
            .get("activeDeadlineSeconds")
            .filter(|v| !v.is_null())
            .cloned()
    };
    let (old, new) = (deadline(current), deadline(object));
    let why = match (&old, &new) {
        (_, Some(new))
            if !new
                .as_i64()
                .is_some_and(|n| (1..=2_147_483_647).contains(&n)) =>
        {
            format!("Invalid value: {new}: must be between 1 and 2147483647, inclusive")
        }
        (Some(old), Some(new)) if old.as_i64() < new.as_i64() => {
            format!("Invalid value: {new}: must be less than or equal to previous value")
        }
        (Some(_), None) => {
            "Invalid value: null: must not update from a positive integer to nil value".to_owned()
        }
        _ => return Ok(()),
    };
    let name = current["metadata"]["name"].as_str().unwrap_or("");
    Err(ApiStatus::invalid(
        &rt.group,
        &rt.kind,
        name,
        &[("FieldValueInvalid", field, &why)],
    ))
}

#[cfg(test)]
mod tests {
    use super::{create, update};
    use crate::resource::ResourceType;
    use serde_json::{Value, json};

    fn pod(deadline: Value) -> Value {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        if !deadline.is_null() {
            pod["spec"]["activeDeadlineSeconds"] = deadline;
        }
        pod
    }

    #[test]
    fn wr7_a_pods_deadline_may_only_shrink() {
        let pods = ResourceType::new("", "v1", "pods", "Pod", true);
        let check = |old: Value, new: Value| update(&pods, &pod(old), &pod(new));
        assert!(check(json!(100), json!(99)).is_ok());
        assert!(check(json!(100), json!(100)).is_ok());
        assert!(check(Value::Null, json!(100)).is_ok());
        assert!(check(Value::Null, Value::Null).is_ok());
        let refused = check(json!(100), json!(101)).unwrap_err();
        assert_eq!(
            refused.message,
            "Pod \"p\" is invalid: spec.activeDeadlineSeconds: Invalid value: 101: must be \
             less than or equal to previous value"
        );
        assert_eq!(refused.code, 422);
        let removed = check(json!(100), Value::Null).unwrap_err();
        assert!(removed.message.ends_with(
            "Invalid value: null: must not update from a positive integer to nil value"
        ));
        let zero = check(json!(100), json!(0)).unwrap_err();
        assert!(
            zero.message
                .ends_with("Invalid value: 0: must be between 1 and 2147483647, inclusive")
        );
        // Other kinds are not checked.
        let jobs = ResourceType::new("batch", "v1", "jobs", "Job", true);
        assert!(update(&jobs, &pod(json!(100)), &pod(json!(101))).is_ok());
    }

    #[test]
    fn wr8_names_are_rfc_1123_subdomains_or_labels() {
        let configmaps = ResourceType::new("", "v1", "configmaps", "ConfigMap", true);
        let named = |name: &str| json!({"metadata": {"name": name}});
        for good in ["a", "a-b.c", "0", &"a".repeat(253)] {
            assert!(create(&configmaps, &named(good)).is_ok(), "{good}");
        }
        let refused = create(&configmaps, &named("Bad_Name")).unwrap_err();
        assert_eq!(refused.code, 422);
        assert!(
            refused.message.starts_with(
                "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": \
                 a lowercase RFC 1123 subdomain must consist of"
            ),
            "{}",
            refused.message
        );
        for bad in ["-a", "a-", "a..b", ".a", &"a".repeat(254)] {
            assert!(create(&configmaps, &named(bad)).is_err(), "{bad}");
        }
        // A generateName prefix may end in `-`; both it and the name are checked.
        let prefixed =
            |prefix: &str, name: &str| json!({"metadata": {"generateName": prefix, "name": name}});
        assert!(create(&configmaps, &prefixed("web-", "web-x1")).is_ok());
        let both = create(&configmaps, &prefixed("Bad_", "Bad_x1")).unwrap_err();
        let fields: Vec<&str> = both
            .details
            .iter()
            .flat_map(|d| d.causes.iter().map(|c| c.field.as_str()))
            .collect();
        assert_eq!(fields, ["metadata.generateName", "metadata.name"]);
        // Namespaces are labels: no dots.
        let namespaces = ResourceType::new("", "v1", "namespaces", "Namespace", false);
        assert!(create(&namespaces, &named("a.b")).is_err());
        assert!(create(&namespaces, &named("team-a")).is_ok());
        // Kinds with other rules are left alone.
        let roles = ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            false,
        );
        assert!(create(&roles, &named("system:controller:x")).is_ok());
    }
}
