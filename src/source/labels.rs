//! What a source lists and watches, named for logs, spans and error
//! messages.
//!
//! The names come from the `Api`'s URL rather than from the Rust type, so
//! two `DynamicObject` sources over different resources are told apart.

use std::fmt;

/// The collection a source reads: API group and version, resource plural,
/// namespace and selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SourceLabels {
    /// API group, empty for the core group.
    pub(crate) group: String,
    /// API version, e.g. `v1`.
    pub(crate) version: String,
    /// Resource plural, e.g. `configmaps`.
    pub(crate) resource: String,
    /// The namespace, or `None` for all namespaces and cluster-scoped resources.
    pub(crate) namespace: Option<String>,
    /// The label selector sent with every request.
    pub(crate) label_selector: Option<String>,
    /// The field selector sent with every request.
    pub(crate) field_selector: Option<String>,
}

impl SourceLabels {
    /// Reads group, version, plural and namespace from a collection URL as
    /// kube builds them: `/api/v1[/namespaces/{ns}]/{plural}` or
    /// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}`. An unexpected
    /// shape keeps the whole path as the resource name.
    pub(crate) fn from_url(
        url: &str,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Self {
        let path = url.split('?').next().unwrap_or(url);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => ("", "", &segments[..0]),
        };
        let (namespace, resource) = match rest {
            ["namespaces", namespace, resource] => (Some((*namespace).to_owned()), *resource),
            [resource] => (None, *resource),
            _ => (None, path),
        };
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
            namespace,
            label_selector,
            field_selector,
        }
    }

    /// A span for one phase of the source (`list` or `watch`), carrying the
    /// resource's names so every event and log line inside says what it is
    /// about.
    pub(crate) fn span(&self, phase: &'static str) -> tracing::Span {
        tracing::debug_span!(
            "source",
            phase,
            group = %self.group,
            version = %self.version,
            resource = %self.resource,
            namespace = self.namespace.as_deref().unwrap_or(""),
            labels = self.label_selector.as_deref().unwrap_or(""),
            fields = self.field_selector.as_deref().unwrap_or(""),
        )
    }
}

/// `configmaps in namespace default`, `deployments.apps`, with selectors
/// when there are any: the short name used in error messages.
impl fmt::Display for SourceLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.resource)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if let Some(namespace) = &self.namespace {
            write!(f, " in namespace {namespace}")?;
        }
        if let Some(labels) = &self.label_selector {
            write!(f, " with labels {labels:?}")?;
        }
        if let Some(fields) = &self.field_selector {
            write!(f, " with fields {fields:?}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_url() {
        let core = SourceLabels::from_url("/api/v1/namespaces/default/configmaps", None, None);
        assert_eq!(
            (
                core.group.as_str(),
                core.version.as_str(),
                core.resource.as_str()
            ),
            ("", "v1", "configmaps")
        );
        assert_eq!(core.namespace.as_deref(), Some("default"));
        assert_eq!(core.to_string(), "configmaps in namespace default");

        let grouped =
            SourceLabels::from_url("/apis/apps/v1/deployments", Some("app=web".into()), None);
        assert_eq!(grouped.group, "apps");
        assert_eq!(grouped.namespace, None);
        assert_eq!(
            grouped.to_string(),
            r#"deployments.apps with labels "app=web""#
        );

        let namespaces = SourceLabels::from_url("/api/v1/namespaces", None, None);
        assert_eq!(namespaces.resource, "namespaces");
        assert_eq!(namespaces.namespace, None);

        let odd = SourceLabels::from_url("/custom/path", None, None);
        assert_eq!(odd.resource, "/custom/path");
    }
}
