//! The resources the scripts write: ConfigMaps (no status), Pods and
//! Deployments (built-in, with a status subresource), and `Widget`, a
//! custom resource registered from its CRD.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The custom resource's group.
pub const CRD_GROUP: &str = "conformance.kube-informer.dev";
/// The CRD's name (`<plural>.<group>`).
pub const CRD_NAME: &str = "widgets.conformance.kube-informer.dev";

/// A resource a script writes or watches.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `v1` ConfigMaps.
    #[default]
    ConfigMaps,
    /// `v1` Pods (never scheduled, so a delete removes them at once).
    Pods,
    /// `apps/v1` Deployments.
    Deployments,
    /// `conformance.kube-informer.dev/v1` Widgets (namespaced, with a
    /// status subresource).
    Widgets,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 4] = [
        Kind::ConfigMaps,
        Kind::Pods,
        Kind::Deployments,
        Kind::Widgets,
    ];

    /// The plural as in URLs.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::ConfigMaps => "configmaps",
            Kind::Pods => "pods",
            Kind::Deployments => "deployments",
            Kind::Widgets => "widgets",
        }
    }

    /// The collection's URL in namespace `ns`.
    pub fn collection_path(self, ns: &str) -> String {
        let prefix = match self {
            Kind::ConfigMaps | Kind::Pods => "/api/v1".to_owned(),
            Kind::Deployments => "/apis/apps/v1".to_owned(),
            Kind::Widgets => format!("/apis/{CRD_GROUP}/v1"),
        };
        format!("{prefix}/namespaces/{ns}/{}", self.plural())
    }

    /// A valid object of this kind named `name`, without namespace: the
    /// sentinel that marks the end of a script's watch, and what the
    /// generator creates.
    pub fn object(self, name: &str) -> Value {
        let meta = json!({"name": name});
        match self {
            Kind::ConfigMaps => json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}
            }),
            Kind::Pods => json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "main", "image": "example.invalid/app:1"}]}
            }),
            Kind::Deployments => json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "main", "image": "example.invalid/app:1"}]}
                    }
                }
            }),
            Kind::Widgets => json!({
                "apiVersion": format!("{CRD_GROUP}/v1"), "kind": "Widget", "metadata": meta,
                "spec": {"size": 1}
            }),
        }
    }
}

/// The Widget CRD as the real server is given it: namespaced, one served
/// and stored version, a status subresource, and a schema that keeps any
/// field under `spec` and `status`.
pub fn widget_crd() -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": CRD_GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": open, "status": open}
                }}
            }]
        }
    })
}
