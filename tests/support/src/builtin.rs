//! What the server knows of the built-in kinds without their schemas:
//! which have a `/status` subresource and which count `metadata.generation`.
//!
//! Custom resources (any group that is not a Kubernetes one) always count
//! generations; whether they have a `/status` subresource is their CRD's
//! choice, carried by [`ResourceType::status_subresource`](crate::ResourceType).

/// Built-in collections with a `/status` subresource, as `(group, plural)`.
const WITH_STATUS: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("", "resourcequotas"),
    ("", "services"),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("batch", "cronjobs"),
    ("batch", "jobs"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingresses"),
    ("policy", "poddisruptionbudgets"),
    ("storage.k8s.io", "volumeattachments"),
];

/// Built-in collections whose registry sets `metadata.generation` to 1 on
/// create and counts changes to the desired state; the others (ConfigMaps,
/// Secrets, Namespaces, Nodes, Services, …) leave it unset.
const WITH_GENERATION: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "replicationcontrollers"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "cronjobs"),
    ("batch", "jobs"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "networkpolicies"),
    ("policy", "poddisruptionbudgets"),
];

/// Whether `group` is one of Kubernetes' own: the core group, a group
/// without a dot (`apps`, `batch`, `policy`, …) or one under `k8s.io`.
pub(crate) fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

pub(crate) fn has_status_subresource(group: &str, plural: &str) -> bool {
    WITH_STATUS.contains(&(group, plural))
}

pub(crate) fn counts_generation(group: &str, plural: &str) -> bool {
    !is_builtin_group(group) || WITH_GENERATION.contains(&(group, plural))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gn3_tables_are_sorted_so_entries_are_easy_to_find() {
        for table in [WITH_STATUS, WITH_GENERATION] {
            assert!(table.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn gn3_custom_groups_count_generations() {
        assert!(counts_generation("example.com", "widgets"));
        assert!(counts_generation("cluster.x-k8s.io", "machines"));
        assert!(!counts_generation("", "configmaps"));
        assert!(counts_generation("apps", "deployments"));
    }
}
