//! The little of the built-in types' schemas that merging needs: how each
//! list merges, which objects are replaced whole, and which fields every
//! object of a type has.
//!
//! The server has no OpenAPI schemas, so this is a table of the fields
//! reconcilers touch most, found by the field names on the way to them:
//!
//! | list | server-side apply key | strategic merge key |
//! |---|---|---|
//! | `containers`, `initContainers`, `ephemeralContainers` | `name` | `name` |
//! | `env`, `volumes`, `imagePullSecrets` | `name` | `name` |
//! | container `ports` | `containerPort`, `protocol` | `containerPort` |
//! | Service `spec.ports` | `port`, `protocol` | `port` |
//! | `volumeMounts` | `mountPath` | `mountPath` |
//! | `conditions` | `type` | `type` |
//! | `metadata.ownerReferences` | `uid` (items atomic) | `uid` |
//! | `metadata.finalizers` | a set | a set (merged) |
//!
//! Every other list of a built-in type is atomic (replaced whole). For
//! custom resources only the `metadata` lists above are keyed: a CRD's own
//! lists are atomic unless its schema says `x-kubernetes-list-type`, which
//! the server does not read.
//!
//! Objects merge member by member (maps and structs alike); label
//! selectors of workloads are atomic.
//!
//! A built-in object always has some fields, empty when nobody set them:
//! the API server works on typed objects, whose struct fields (`spec`,
//! `status`, a workload's `spec.template` with its `metadata` and `spec`,
//! a Deployment's `spec.strategy`, a StatefulSet's or DaemonSet's
//! `spec.updateStrategy`, a CronJob's `spec.jobTemplate`) and required
//! lists (a Pod's `spec.containers`) exist before any write, so no write
//! creates them (MF4).

use crate::resource::ResourceType;

/// How a list merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced whole.
    Atomic,
    /// Scalars merged as a set (`metadata.finalizers`).
    Set,
    /// Objects merged by these key fields (sorted by name); `atomic_items`
    /// when each item is replaced whole (`ownerReferences`).
    Map {
        keys: &'static [&'static str],
        atomic_items: bool,
    },
}

/// What the server knows about one resource type's schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema {
    builtin: bool,
    core: bool,
}

impl Schema {
    pub(crate) fn of(rt: &ResourceType) -> Self {
        Self {
            builtin: crate::builtin::is_builtin_group(&rt.group),
            core: rt.group.is_empty(),
        }
    }

    /// Whether strategic merge patches are understood for this type (the
    /// API server refuses them for custom resources).
    pub(crate) fn is_builtin(&self) -> bool {
        self.builtin
    }

    /// The list at `fields` (field names from the root, list items skipped).
    pub(crate) fn list_type(&self, fields: &[&str]) -> ListType {
        let map = |keys| ListType::Map {
            keys,
            atomic_items: false,
        };
        match fields {
            ["metadata", "finalizers"] => return ListType::Set,
            ["metadata", "ownerReferences"] => {
                return ListType::Map {
                    keys: &["uid"],
                    atomic_items: true,
                };
            }
            _ => {}
        }
        if !self.builtin {
            return ListType::Atomic;
        }
        match fields {
            [.., "containers" | "initContainers" | "ephemeralContainers"] => map(&["name"]),
            [.., "env" | "volumes" | "imagePullSecrets"] => map(&["name"]),
            [.., "containers" | "initContainers", "ports"] => map(&["containerPort", "protocol"]),
            ["spec", "ports"] if self.core => map(&["port", "protocol"]),
            [.., "volumeMounts"] => map(&["mountPath"]),
            [.., "conditions"] => map(&["type"]),
            _ => ListType::Atomic,
        }
    }

    /// The strategic merge patch key of the list at `fields`, if it merges
    /// by key; `Some("")` for a merged list of scalars.
    pub(crate) fn strategic_key(&self, fields: &[&str]) -> Option<&'static str> {
        match self.list_type(fields) {
            ListType::Atomic => None,
            ListType::Set => Some(""),
            ListType::Map { keys, .. } => Some(match keys {
                ["containerPort", ..] => "containerPort",
                ["port", ..] => "port",
                [first, ..] => first,
                [] => return None,
            }),
        }
    }

    /// Whether the field at `fields` (field names from the root, outside
    /// any list item) exists in every object of this type, even one
    /// nobody has written (MF4): a struct or required list of a built-in
    /// type.
    pub(crate) fn always_present(&self, fields: &[&str]) -> bool {
        if !self.builtin {
            return false;
        }
        // A pod template's fields, wherever the template is.
        let template =
            |rest: &[&str]| matches!(rest, [] | ["metadata"] | ["spec"] | ["spec", "containers"]);
        match fields {
            ["spec"] | ["status"] => true,
            ["spec", "containers"] => self.core,
            ["spec", "strategy" | "updateStrategy"] => !self.core,
            ["spec", "template", rest @ ..] => template(rest),
            ["spec", "jobTemplate"] | ["spec", "jobTemplate", "spec"] => !self.core,
            ["spec", "jobTemplate", "spec", "template", rest @ ..] => template(rest),
            _ => false,
        }
    }

    /// Whether the object at `fields` is replaced whole (a workload's
    /// label selector).
    pub(crate) fn is_atomic_object(&self, fields: &[&str]) -> bool {
        self.builtin && !self.core && matches!(fields, ["spec", "selector"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sa5_containers_merge_by_name_everywhere_in_built_in_types() {
        let apps = Schema::of(&ResourceType::new(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
        ));
        assert!(matches!(
            apps.list_type(&["spec", "template", "spec", "containers"]),
            ListType::Map { keys: ["name"], .. }
        ));
        assert_eq!(
            apps.strategic_key(&["spec", "template", "spec", "containers", "ports"]),
            Some("containerPort")
        );
        let cr = Schema::of(&ResourceType::new(
            "example.com",
            "v1",
            "widgets",
            "Widget",
            true,
        ));
        assert_eq!(cr.list_type(&["spec", "containers"]), ListType::Atomic);
        assert_eq!(cr.list_type(&["metadata", "finalizers"]), ListType::Set);
    }
}
