//! Which collection a request or an object belongs to.

use std::fmt;

use kube::Resource;

/// One kind of object the fake server stores: its API group, version,
/// plural name (as in the URL), kind and scope.
///
/// Build it from a typed resource with [`ResourceType::of`], or by hand for
/// anything else (custom resources, `DynamicObject`s).
///
/// # Examples
///
/// ```
/// use kube_informer_testing::ResourceType;
/// use k8s_openapi::api::core::v1::Node;
///
/// let nodes = ResourceType::of::<Node>();
/// assert_eq!(nodes.plural, "nodes");
/// assert!(!nodes.namespaced);
///
/// let crd = ResourceType::new("example.com", "v1", "widgets", "Widget", true);
/// assert_eq!(crd.api_version(), "example.com/v1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceType {
    /// API group, empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural name used in URLs, e.g. `configmaps`.
    pub plural: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the kind has a `/status` subresource: then a write of the
    /// object leaves `status` alone and only `…/NAME/status` changes it.
    /// [`ResourceType::new`] sets it for the built-in kinds that have one
    /// (Pods, Deployments, Nodes, …; not ConfigMaps or Secrets); set it
    /// for a custom resource with [`with_status_subresource`](Self::with_status_subresource).
    pub status_subresource: bool,
}

impl ResourceType {
    /// A resource type from its parts.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            kind: kind.to_owned(),
            namespaced,
            status_subresource: crate::builtin::has_status_subresource(group, plural),
        }
    }

    /// The same type with (`true`) or without a `/status` subresource, as a
    /// custom resource whose CRD version declares `subresources: {status: {}}`
    /// has one.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer_testing::ResourceType;
    ///
    /// let widgets = ResourceType::new("example.com", "v1", "widgets", "Widget", true);
    /// assert!(!widgets.status_subresource);
    /// assert!(widgets.with_status_subresource(true).status_subresource);
    /// ```
    #[must_use]
    pub fn with_status_subresource(mut self, yes: bool) -> Self {
        self.status_subresource = yes;
        self
    }

    /// The resource type of a static Kubernetes type such as `ConfigMap`.
    pub fn of<K>() -> Self
    where
        K: Resource<DynamicType = ()>,
        K::Scope: ScopeName,
    {
        Self::new(
            &K::group(&()),
            &K::version(&()),
            &K::plural(&()),
            &K::kind(&()),
            <K::Scope as ScopeName>::NAMESPACED,
        )
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub(crate) fn id(&self) -> ResourceId {
        ResourceId {
            group: self.group.clone(),
            version: self.version.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// Tells [`ResourceType::of`] whether a k8s-openapi scope marker is namespaced.
pub trait ScopeName {
    /// True for namespace-scoped resources.
    const NAMESPACED: bool;
}

impl ScopeName for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeName for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// The part of a resource type that a URL names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResourceId {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.plural)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.plural)
        }
    }
}

/// A collection URL taken apart: which resource, and which namespace if the
/// request is limited to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CollectionPath {
    pub(crate) resource: ResourceId,
    pub(crate) namespace: Option<String>,
}

impl CollectionPath {
    /// Parses `/api/v1[/namespaces/NS]/PLURAL` and
    /// `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL`; anything else is `None`.
    #[cfg(test)]
    pub(crate) fn parse(path: &str) -> Option<Self> {
        match Self::parse_with_name(path)? {
            (collection, None) => Some(collection),
            (_, Some(_)) => None,
        }
    }

    /// Parses a collection URL as [`parse`](Self::parse) does, or the URL of
    /// one object in it (`…/PLURAL/NAME`), returning the object's name too.
    ///
    /// The two cannot be confused: `/api/v1/namespaces/NS` is the namespace
    /// object `NS` (two segments after the version), while a namespaced
    /// collection has three (`namespaces/NS/PLURAL`).
    pub(crate) fn parse_with_name(path: &str) -> Option<(Self, Option<String>)> {
        match Self::parse_object(path)? {
            (collection, name, None) => Some((collection, name)),
            (_, _, Some(_)) => None,
        }
    }

    /// Parses what [`parse_with_name`](Self::parse_with_name) does, or the
    /// URL of a subresource of one object (`…/PLURAL/NAME/SUBRESOURCE`),
    /// returning the subresource's name too.
    pub(crate) fn parse_object(path: &str) -> Option<(Self, Option<String>, Option<String>)> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match parts.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return None,
        };
        let (namespace, plural, name) = match rest {
            // A Namespace's own subresources, not collections inside it.
            ["namespaces", _, "status" | "finalize"] => {
                return Self::parse_subresource(group, version, rest);
            }
            [plural] => (None, *plural, None),
            [plural, name] => (None, *plural, Some(*name)),
            ["namespaces", ns, plural] => (Some((*ns).to_owned()), *plural, None),
            ["namespaces", ns, plural, name] => (Some((*ns).to_owned()), *plural, Some(*name)),
            _ => return Self::parse_subresource(group, version, rest),
        };
        if plural.is_empty() || name.is_some_and(str::is_empty) {
            return None;
        }
        let collection = Self {
            resource: ResourceId {
                group: group.to_owned(),
                version: version.to_owned(),
                plural: plural.to_owned(),
            },
            namespace,
        };
        Some((collection, name.map(str::to_owned), None))
    }

    /// `[namespaces/NS/]PLURAL/NAME/SUBRESOURCE` after the version.
    fn parse_subresource(
        group: &str,
        version: &str,
        rest: &[&str],
    ) -> Option<(Self, Option<String>, Option<String>)> {
        let (namespace, plural, name, subresource) = match rest {
            [plural, name, sub] => (None, *plural, *name, *sub),
            ["namespaces", ns, plural, name, sub] => (Some((*ns).to_owned()), *plural, *name, *sub),
            _ => return None,
        };
        if [plural, name, subresource].iter().any(|s| s.is_empty()) {
            return None;
        }
        let collection = Self {
            resource: ResourceId {
                group: group.to_owned(),
                version: version.to_owned(),
                plural: plural.to_owned(),
            },
            namespace,
        };
        Some((
            collection,
            Some(name.to_owned()),
            Some(subresource.to_owned()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_core_and_group_paths() {
        let p = CollectionPath::parse("/api/v1/namespaces/default/configmaps").unwrap();
        assert_eq!(p.resource.plural, "configmaps");
        assert_eq!(p.namespace.as_deref(), Some("default"));
        let p = CollectionPath::parse("/apis/apps/v1/deployments").unwrap();
        assert_eq!(p.resource.group, "apps");
        assert_eq!(p.namespace, None);
        assert!(CollectionPath::parse("/healthz").is_none());
        assert!(CollectionPath::parse("/api/v1/namespaces/default/configmaps/x").is_none());
    }

    #[test]
    fn parses_object_paths() {
        let (p, name) =
            CollectionPath::parse_with_name("/api/v1/namespaces/default/configmaps/x").unwrap();
        assert_eq!(
            (p.namespace.as_deref(), name.as_deref()),
            (Some("default"), Some("x"))
        );
        // A namespace is a cluster-scoped object named in the URL.
        let (p, name) = CollectionPath::parse_with_name("/api/v1/namespaces/team-a").unwrap();
        assert_eq!(p.resource.plural, "namespaces");
        assert_eq!((p.namespace, name.as_deref()), (None, Some("team-a")));
        let (p, name) =
            CollectionPath::parse_with_name("/apis/apps/v1/namespaces/ns/deployments/web").unwrap();
        assert_eq!(p.resource.group, "apps");
        assert_eq!(name.as_deref(), Some("web"));
        assert!(CollectionPath::parse_with_name("/api/v1/namespaces/ns/pods/p/status").is_none());
        assert!(CollectionPath::parse_with_name("/api/v1/configmaps/").is_some());
    }

    #[test]
    fn ss3_parses_subresource_paths() {
        let (p, name, sub) =
            CollectionPath::parse_object("/api/v1/namespaces/ns/pods/p/status").unwrap();
        assert_eq!(
            (p.namespace.as_deref(), name.as_deref(), sub.as_deref()),
            (Some("ns"), Some("p"), Some("status"))
        );
        let (p, name, sub) = CollectionPath::parse_object("/api/v1/nodes/n1/status").unwrap();
        assert_eq!(
            (p.namespace, name.as_deref(), sub.as_deref()),
            (None, Some("n1"), Some("status"))
        );
        // `namespaces/NS/PLURAL` is a collection, not the subresource PLURAL of namespace NS.
        let (p, name, sub) = CollectionPath::parse_object("/api/v1/namespaces/ns/pods").unwrap();
        assert_eq!(
            (p.resource.plural.as_str(), name, sub),
            ("pods", None, None)
        );
        assert!(CollectionPath::parse_object("/api/v1/nodes/n1/status/x").is_none());
        let (p, name, sub) = CollectionPath::parse_object("/api/v1/namespaces/ns/status").unwrap();
        assert_eq!(
            (p.resource.plural.as_str(), name.as_deref(), sub.as_deref()),
            ("namespaces", Some("ns"), Some("status"))
        );
    }
}
