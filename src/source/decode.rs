//! From JSON values to typed objects, with the checks of R7: an object must
//! have metadata and a name, and be of the kind the list announced.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{config::Transform, error::Error};

/// Decodes objects of one collection and runs the transform on them.
pub(crate) struct Decoder<T> {
    /// Learned from the `kind` of list answers (`ConfigMapList` → `ConfigMap`).
    /// Typed k8s-openapi objects also refuse a wrong kind while decoding.
    expected_kind: Option<String>,
    transform: Option<Transform<T>>,
}

impl<T> std::fmt::Debug for Decoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("expected_kind", &self.expected_kind)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> Decoder<T> {
    pub(crate) fn new(transform: Option<Transform<T>>) -> Self {
        Self {
            expected_kind: None,
            transform,
        }
    }

    /// Remembers the item kind of a list answer.
    pub(crate) fn learn_list_kind(&mut self, list_kind: Option<&str>) {
        if let Some(kind) = list_kind
            .and_then(|k| k.strip_suffix("List"))
            .filter(|k| !k.is_empty())
        {
            self.expected_kind = Some(kind.to_owned());
        }
    }

    /// Checks, decodes and transforms one object.
    pub(crate) fn object(&self, value: Value, what: &'static str) -> Result<T, Error> {
        let metadata = value.get("metadata").filter(|m| m.is_object());
        let Some(metadata) = metadata else {
            return Err(Error::MissingMetadata);
        };
        if metadata
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(Error::MissingName);
        }
        if let (Some(expected), Some(found)) = (
            &self.expected_kind,
            value.get("kind").and_then(Value::as_str),
        ) && expected != found
        {
            return Err(Error::WrongKind {
                expected: expected.clone(),
                found: found.to_owned(),
            });
        }
        let object =
            serde_json::from_value(value).map_err(|source| Error::Decode { what, source })?;
        Ok(match &self.transform {
            Some(transform) => transform(object),
            None => object,
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    #[test]
    fn r7_checks_metadata_name_and_kind() {
        let mut d = Decoder::<ConfigMap>::new(None);
        d.learn_list_kind(Some("ConfigMapList"));
        assert!(matches!(
            d.object(json!({"kind": "ConfigMap"}), "x"),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(
            d.object(json!({"metadata": {}}), "x"),
            Err(Error::MissingName)
        ));
        assert!(matches!(
            d.object(json!({"kind": "Secret", "metadata": {"name": "a"}}), "x"),
            Err(Error::WrongKind { .. })
        ));
        assert!(matches!(
            d.object(json!({"metadata": {"name": "a"}, "data": 3}), "x"),
            Err(Error::Decode { .. })
        ));
        let cm = d.object(json!({"metadata": {"name": "a"}}), "x").unwrap();
        assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn transform_runs_on_decoded_objects() {
        let d = Decoder::<ConfigMap>::new(Some(std::sync::Arc::new(|mut cm: ConfigMap| {
            cm.metadata.labels = None;
            cm
        })));
        let cm = d
            .object(
                json!({"metadata": {"name": "a", "labels": {"x": "y"}}}),
                "x",
            )
            .unwrap();
        assert_eq!(cm.metadata.labels, None);
    }
}
