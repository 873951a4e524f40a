//! What an informer watches, in words: the label of its tracing span.

use std::fmt;

use crate::source::SourceLabels;

/// The resource an informer lists and watches, for its `tracing` span (E2),
/// so two informers of one Rust type (two `DynamicObject` informers, or one
/// kind in two namespaces) log under different names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResourceLabels {
    /// Built from an `Api`: the source's own names (group, version, plural,
    /// namespace, selectors), the same ones its errors and spans carry.
    Api(SourceLabels),
    /// Fed by a stream, whose resource is unknown: the Rust type's short
    /// name.
    Type(String),
}

impl ResourceLabels {
    /// The labels given by the builder, or else the Rust type `K`'s name.
    pub(crate) fn new<K>(source: Option<SourceLabels>) -> Self {
        match source {
            Some(labels) => Self::Api(labels),
            None => Self::Type(short_type_name::<K>()),
        }
    }

    /// The span the informer's `run` is instrumented with: the resource in
    /// words, and as fields the labels its metrics carry (group, version,
    /// plural, namespace or `all`).
    pub(crate) fn span(&self) -> tracing::Span {
        let (group, version, plural, namespace) = match self {
            Self::Api(labels) => (
                &*labels.group,
                &*labels.version,
                &*labels.resource,
                labels.namespace.as_deref(),
            ),
            Self::Type(name) => ("", "", &**name, None),
        };
        tracing::info_span!(
            "informer",
            resource = %self,
            group,
            version,
            plural,
            namespace = namespace.unwrap_or("all"),
        )
    }
}

/// `configmaps in namespace default` (see [`SourceLabels`]), or the type
/// name for an informer fed by a stream.
impl fmt::Display for ResourceLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api(labels) => labels.fmt(f),
            Self::Type(name) => f.write_str(name),
        }
    }
}

/// `a::b::Kind<c::D>` → `Kind<D>`: the last segment of each path.
fn short_type_name<K>() -> String {
    let name = std::any::type_name::<K>();
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
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    // E2
    #[test]
    fn e2_labels_name_the_resource_and_default_to_the_type() {
        let metadata = ResourceLabels::new::<
            kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Pod>,
        >(None);
        assert_eq!(metadata.to_string(), "PartialObjectMeta<Pod>");
        let deployments = ResourceLabels::new::<kube::core::DynamicObject>(Some(
            SourceLabels::from_url("/apis/apps/v1/namespaces/web/deployments", None, None),
        ));
        assert_eq!(deployments.to_string(), "deployments.apps in namespace web");
    }
}
