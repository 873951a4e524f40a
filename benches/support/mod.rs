//! Fixtures the informer benches share.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

/// ConfigMap `bench/cm-{index}` at resourceVersion `rv`, with one data
/// entry.
pub fn config_map(index: usize, rv: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("bench".into()),
            name: Some(format!("cm-{index}")),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        data: Some([("index".to_string(), index.to_string())].into()),
        ..Default::default()
    }
}
