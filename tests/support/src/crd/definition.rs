//! A `CustomResourceDefinition` read from JSON: the names, scope and
//! versions the server serves, and the checks the API server makes before
//! it accepts one (CR2).

use serde_json::{Value, json};

use crate::{faults::ApiStatus, resource::ResourceType};

/// The group and resource a CRD's objects live under.
pub(crate) const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The plural the CRDs themselves are served under.
pub(crate) const CRD_PLURAL: &str = "customresourcedefinitions";

/// The resource type of `CustomResourceDefinition` objects.
pub(crate) fn crd_resource_type() -> ResourceType {
    ResourceType::new(
        CRD_GROUP,
        "v1",
        CRD_PLURAL,
        "CustomResourceDefinition",
        false,
    )
}

/// One entry of `spec.versions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VersionDef {
    pub(crate) name: String,
    pub(crate) served: bool,
    pub(crate) storage: bool,
    pub(crate) status: bool,
    pub(crate) scale: bool,
}

/// What the server needs of a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) group: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) namespaced: bool,
    pub(crate) versions: Vec<VersionDef>,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One failed check: the field and what is wrong with it, worded as the
/// API server's field errors are.
struct FieldError {
    field: &'static str,
    detail: String,
}

impl Definition {
    /// Reads and checks a CRD; a CRD the API server would refuse gets its
    /// 422 `Invalid` answer.
    pub(crate) fn parse(crd: &Value) -> Result<Self, ApiStatus> {
        let spec = &crd["spec"];
        let name = crd["metadata"]["name"].as_str().unwrap_or("");
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        let names = &spec["names"];
        let definition = Self {
            group: text(&spec["group"]),
            plural: text(&names["plural"]),
            singular: names["singular"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| text(&names["kind"]).to_lowercase()),
            kind: text(&names["kind"]),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            namespaced: spec["scope"].as_str() == Some("Namespaced"),
            versions: spec["versions"]
                .as_array()
                .map(|versions| {
                    versions
                        .iter()
                        .map(|v| VersionDef {
                            name: text(&v["name"]),
                            served: v["served"].as_bool().unwrap_or(false),
                            storage: v["storage"].as_bool().unwrap_or(false),
                            status: v["subresources"]["status"].is_object(),
                            scale: v["subresources"]["scale"].is_object(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        let errors = definition.errors(name, spec);
        if errors.is_empty() {
            Ok(definition)
        } else {
            Err(invalid(name, &errors))
        }
    }

    fn errors(&self, name: &str, spec: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut error = |field, detail: String| errors.push(FieldError { field, detail });
        if name.is_empty() {
            error(
                "metadata.name",
                "Required value: name or generateName is required".into(),
            );
        } else if name != format!("{}.{}", self.plural, self.group) {
            error(
                "metadata.name",
                format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            );
        }
        if self.group.is_empty() {
            error("spec.group", "Required value".into());
        } else if !self.group.contains('.') {
            error(
                "spec.group",
                format!(
                    "Invalid value: {:?}: should be a domain with at least one dot",
                    self.group
                ),
            );
        }
        match spec["scope"].as_str() {
            Some("Namespaced" | "Cluster") => {}
            Some(scope) => error(
                "spec.scope",
                format!(
                    "Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""
                ),
            ),
            None => error("spec.scope", "Required value".into()),
        }
        if self.plural.is_empty() {
            error("spec.names.plural", "Required value".into());
        }
        if self.kind.is_empty() {
            error("spec.names.kind", "Required value".into());
        }
        if self.versions.is_empty() {
            error(
                "spec.versions",
                "Required value: must have exactly one version marked as storage version".into(),
            );
        } else if self.versions.iter().filter(|v| v.storage).count() != 1 {
            let listed: Vec<&str> = self.versions.iter().map(|v| v.name.as_str()).collect();
            error(
                "spec.versions",
                format!(
                    "Invalid value: {listed:?}: must have exactly one version marked as storage version"
                ),
            );
        }
        for (i, version) in self.versions.iter().enumerate() {
            if version.name.is_empty() {
                error(
                    "spec.versions[].name",
                    format!("Required value: spec.versions[{i}].name is required"),
                );
            }
        }
        errors
    }

    /// The version objects are stored at (there is exactly one once parsed).
    pub(crate) fn storage(&self) -> &VersionDef {
        self.versions
            .iter()
            .find(|v| v.storage)
            .expect("a parsed definition has one storage version")
    }

    /// The served version named `version`, if any.
    pub(crate) fn served(&self, version: &str) -> Option<&VersionDef> {
        self.versions.iter().find(|v| v.served && v.name == version)
    }

    /// The resource type of one version.
    pub(crate) fn resource_type(&self, version: &VersionDef) -> ResourceType {
        ResourceType::new(
            &self.group,
            &version.name,
            &self.plural,
            &self.kind,
            self.namespaced,
        )
        .with_status_subresource(version.status)
    }

    /// `status.acceptedNames` as the API server records them.
    pub(crate) fn accepted_names(&self, names: &Value) -> Value {
        let mut accepted = names.clone();
        if accepted["singular"].is_null() {
            accepted["singular"] = json!(self.singular);
        }
        if accepted["listKind"].is_null() {
            accepted["listKind"] = json!(format!("{}List", self.kind));
        }
        accepted
    }
}

/// The 422 `Invalid` answer for a refused CRD, one cause per failed check.
fn invalid(name: &str, errors: &[FieldError]) -> ApiStatus {
    let causes: Vec<(&str, &str, &str)> = errors
        .iter()
        .map(|e| {
            let reason = if e.detail.starts_with("Required value") {
                "FieldValueRequired"
            } else if e.detail.starts_with("Unsupported value") {
                "FieldValueNotSupported"
            } else {
                "FieldValueInvalid"
            };
            (reason, e.field, e.detail.as_str())
        })
        .collect();
    ApiStatus::invalid(CRD_GROUP, "CustomResourceDefinition", name, &causes)
}
