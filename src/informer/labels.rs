//! What an informer watches, in words: the labels of its tracing span.

use std::fmt;

/// The resource an informer lists and watches, for its `tracing` span (E2):
/// group/version/kind (or the plural), namespace and selectors, so two
/// informers of one Rust type (two `DynamicObject` informers, or one kind in
/// two namespaces) log under different names.
///
/// Built from the `Api` and the source config where the informer is built
/// from one; otherwise [`ResourceLabels::from_type_name`] names the Rust
/// type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResourceLabels {
    /// API group; empty for the core group.
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    /// The plural resource name, e.g. `pods`.
    pub(crate) plural: String,
    /// `None` for every namespace (or a cluster-scoped kind).
    pub(crate) namespace: Option<String>,
    pub(crate) label_selector: Option<String>,
    pub(crate) field_selector: Option<String>,
}

impl ResourceLabels {
    /// Labels naming only the Rust type `K` (its last path segment), for an
    /// informer whose resource is not known, e.g. one fed by a stream.
    pub(crate) fn from_type_name<K>() -> Self {
        let name = std::any::type_name::<K>();
        // `a::b::Kind<c::D>` → `Kind<D>`: keep the last segment of each path.
        let mut short = String::new();
        let mut path = String::new();
        for c in name.chars() {
            if matches!(c, '<' | '>' | ',' | ' ') {
                short.push_str(path.rsplit("::").next().unwrap_or_default());
                path.clear();
                short.push(c);
            } else {
                path.push(c);
            }
        }
        short.push_str(path.rsplit("::").next().unwrap_or_default());
        Self {
            kind: short,
            ..Self::default()
        }
    }

    /// The span the informer's `run` is instrumented with.
    pub(crate) fn span(&self) -> tracing::Span {
        tracing::info_span!(
            "informer",
            resource = %self,
            namespace = self.namespace.as_deref().unwrap_or(""),
            label_selector = self.label_selector.as_deref().unwrap_or(""),
            field_selector = self.field_selector.as_deref().unwrap_or(""),
        )
    }
}

/// `group/version/Kind` (`version/Kind` for the core group), the plural when
/// the kind is unknown, the Rust type name as a last resort.
impl fmt::Display for ResourceLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.kind.is_empty() {
            &self.plural
        } else {
            &self.kind
        };
        match (self.group.is_empty(), self.version.is_empty()) {
            (_, true) => write!(f, "{name}"),
            (true, false) => write!(f, "{}/{name}", self.version),
            (false, false) => write!(f, "{}/{}/{name}", self.group, self.version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // E2
    #[test]
    fn e2_labels_name_the_resource_and_default_to_the_type() {
        let labels = ResourceLabels::from_type_name::<
            kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Pod>,
        >();
        assert_eq!(labels.to_string(), "PartialObjectMeta<Pod>");
        let deployments = ResourceLabels {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespace: Some("web".into()),
            ..ResourceLabels::default()
        };
        assert_eq!(deployments.to_string(), "apps/v1/Deployment");
        let pods = ResourceLabels {
            version: "v1".into(),
            plural: "pods".into(),
            ..ResourceLabels::default()
        };
        assert_eq!(pods.to_string(), "v1/pods");
    }
}
