//! [`WatchedResource`]: which resource an informer lists and watches.
//!
//! One type for that one question, so every stage that names the resource
//! names it the same way: the source builds its requests' selectors and its
//! error messages from it, the informer's span and metrics carry it, and
//! the [`InformerFactory`](crate::InformerFactory) shares informers by it
//! (with the cached Rust type). It sits below all of them (see "Layers" in
//! the crate docs).
//!
//! The names come from the `Api`'s URL rather than from the Rust type, so
//! two `DynamicObject` informers over different resources are told apart.

use std::fmt;

/// Which resource an informer lists and watches: API group and version,
/// resource plural, namespace and selectors.
///
/// An informer's [`metrics`](crate::Informer::metrics) carry it as
/// [`resource`](crate::metrics::InformerMetrics::resource), and its
/// `Display` is how logs and error messages name the resource
/// (`configmaps in namespace default`, `deployments.apps with labels
/// "app=web"`). An informer fed by a stream
/// ([`Informer::builder_from_stream`](crate::Informer::builder_from_stream))
/// has no URL: its resource is the Rust type's short name
/// (`PartialObjectMeta<Pod>`), with the other fields empty.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{Informer, source};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// let informer = Informer::builder(Api::<ConfigMap>::namespaced(server.client(), "web"))
///     .source_config(source::Config::default().label_selector("app=web"))
///     .build();
/// let resource = informer.metrics().resource;
/// assert_eq!((resource.group.as_str(), resource.version.as_str()), ("", "v1"));
/// assert_eq!(resource.resource, "configmaps");
/// assert_eq!(resource.namespace.as_deref(), Some("web"));
/// assert_eq!(resource.label_selector.as_deref(), Some("app=web"));
/// assert_eq!(
///     resource.to_string(),
///     r#"configmaps in namespace web with labels "app=web""#
/// );
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WatchedResource {
    /// API group, empty for the core group and for an informer fed by a
    /// stream.
    pub group: String,
    /// API version (`v1`), empty for an informer fed by a stream.
    pub version: String,
    /// Resource plural (`configmaps`), or the Rust type's short name for an
    /// informer fed by a stream.
    pub resource: String,
    /// The namespace watched; `None` for all namespaces or cluster-scoped
    /// resources (the metrics' `namespace` label then says `all`).
    pub namespace: Option<String>,
    /// The label selector sent with every list and watch.
    pub label_selector: Option<String>,
    /// The field selector sent with every list and watch.
    pub field_selector: Option<String>,
}

impl WatchedResource {
    /// Reads group, version, plural and namespace from a collection URL as
    /// kube builds them: `/api/v1[/namespaces/{ns}]/{plural}` or
    /// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}`. An unexpected
    /// shape keeps the whole path as the resource name, so no two paths
    /// kube builds (no query, no trailing slash) read the same: the factory
    /// shares informers by what this reads.
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

    /// The apiVersion of the collection's objects (`v1`, `apps/v1`).
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resource of an informer fed by a stream, whose URL is unknown:
    /// the Rust type `K`'s short name.
    pub(crate) fn of_type<K>() -> Self {
        Self {
            resource: short_type_name::<K>(),
            ..Self::default()
        }
    }

    /// The collection's URL path, as [`from_url`](Self::from_url) read it
    /// (`/api/v1/namespaces/default/configmaps`), without selectors: how
    /// the factory names an informer in its messages.
    pub(crate) fn path(&self) -> String {
        if self.resource.contains('/') {
            // An unexpected shape, kept whole by `from_url`.
            return self.resource.clone();
        }
        let mut path = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if let Some(namespace) = &self.namespace {
            path.push_str("/namespaces/");
            path.push_str(namespace);
        }
        path.push('/');
        path.push_str(&self.resource);
        path
    }
}

/// `configmaps in namespace default`, `deployments.apps`, with selectors
/// when there are any: the short name used in logs and error messages.
impl fmt::Display for WatchedResource {
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

    #[test]
    fn names_come_from_the_url() {
        let core = WatchedResource::from_url("/api/v1/namespaces/default/configmaps", None, None);
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
            WatchedResource::from_url("/apis/apps/v1/deployments", Some("app=web".into()), None);
        assert_eq!(grouped.group, "apps");
        assert_eq!(grouped.namespace, None);
        assert_eq!(
            grouped.to_string(),
            r#"deployments.apps with labels "app=web""#
        );

        let namespaces = WatchedResource::from_url("/api/v1/namespaces", None, None);
        assert_eq!(namespaces.resource, "namespaces");
        assert_eq!(namespaces.namespace, None);

        let odd = WatchedResource::from_url("/custom/path", None, None);
        assert_eq!(odd.resource, "/custom/path");
    }

    /// The factory's messages name the URL the informer was asked for: the
    /// path read back is the path read, whatever its shape, so two
    /// different URLs are two different resources.
    #[test]
    fn the_path_is_the_url_read() {
        for url in [
            "/api/v1/configmaps",
            "/api/v1/namespaces",
            "/api/v1/namespaces/default/configmaps",
            "/apis/apps/v1/deployments",
            "/apis/apps/v1/namespaces/web/deployments",
            "/custom/path",
            "/api/v1/a/b",
            "/apis/x.example.com/v1alpha1/namespaces//things",
        ] {
            assert_eq!(WatchedResource::from_url(url, None, None).path(), url);
        }
    }

    // ER2
    #[test]
    fn er2_labels_name_the_resource_and_default_to_the_type() {
        let metadata = WatchedResource::of_type::<
            kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Pod>,
        >();
        assert_eq!(metadata.to_string(), "PartialObjectMeta<Pod>");
        let deployments =
            WatchedResource::from_url("/apis/apps/v1/namespaces/web/deployments", None, None);
        assert_eq!(deployments.to_string(), "deployments.apps in namespace web");
    }
}
