//! The `Status` body of an error answer: code, reason, message, and the
//! `details` that name the object and list the causes.
//!
//! Rules (the tests in `tests/faults.rs` and `tests/writes.rs` name them):
//! - SD1: `details` is in the body only when the status has details (an
//!   empty `{}` when they name nothing: kube-apiserver's answer to a patch
//!   type it does not know); inside it, and inside each cause, an empty
//!   `name`, `group`, `kind` or `field` is left out, as kube-apiserver's
//!   JSON leaves out empty strings. A status with an empty reason has no
//!   `reason` (kube-apiserver's 500 for a create that carries a
//!   resourceVersion).
//! - SD2: a status about one object names it: `details.name`, the
//!   resource's plural as `details.kind` and its API group as
//!   `details.group` (none for the core group), as kube-apiserver's
//!   `NotFound`, `AlreadyExists` and `Conflict` do.

use serde_json::{Map, Value, json};

/// A Kubernetes `Status` failure: HTTP code, reason, message and details.
///
/// ```
/// use kube_informer_testing::ApiStatus;
///
/// let status = ApiStatus::new(422, "Invalid", "ConfigMap \"\" is invalid: …")
///     .naming("", "ConfigMap", "")
///     .with_cause("FieldValueRequired", "Required value", "metadata.name");
/// let body = status.to_json();
/// assert_eq!(body["details"]["kind"], "ConfigMap");
/// assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
/// assert!(body["details"].get("name").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiStatus {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason, e.g. `Expired`, `Forbidden`; empty for none.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// `details`, when the status has them (SD1); boxed, as most statuses
    /// have none and a status travels in every `Err`.
    pub details: Option<Box<StatusDetails>>,
}

/// The `details` of a [`ApiStatus`]: which object it is about, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusDetails {
    /// The object's name (empty: none).
    pub name: String,
    /// The API group of the resource or kind (empty: the core group).
    pub group: String,
    /// The resource's plural (`configmaps`) or, for a validation failure,
    /// the kind (`ConfigMap`); empty for none.
    pub kind: String,
    /// The causes, e.g. one per invalid field.
    pub causes: Vec<StatusCause>,
}

/// One cause in [`StatusDetails`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueRequired`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field it is about, e.g. `metadata.name` (empty: none).
    pub field: String,
}

impl ApiStatus {
    /// A status without details.
    pub fn new(code: u16, reason: &str, message: &str) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            details: None,
        }
    }

    /// This status with details that name an object: `group` and `kind`
    /// (a plural, or a kind for validation failures) and `name`; empty
    /// strings are left out of the body (SD1, SD2).
    ///
    /// ```
    /// use kube_informer_testing::ApiStatus;
    ///
    /// let status = ApiStatus::new(404, "NotFound", "deployments.apps \"web\" not found")
    ///     .naming("apps", "deployments", "web");
    /// assert_eq!(status.to_json()["details"]["group"], "apps");
    /// ```
    pub fn naming(mut self, group: &str, kind: &str, name: &str) -> Self {
        let details = self.details.get_or_insert_with(Box::default);
        details.group = group.to_owned();
        details.kind = kind.to_owned();
        details.name = name.to_owned();
        self
    }

    /// This status with details that name nothing: `details: {}` in the
    /// body (SD1).
    ///
    /// ```
    /// use kube_informer_testing::ApiStatus;
    ///
    /// let status = ApiStatus::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
    ///     .with_empty_details();
    /// assert_eq!(status.to_json()["details"], serde_json::json!({}));
    /// ```
    pub fn with_empty_details(mut self) -> Self {
        self.details.get_or_insert_with(Box::default);
        self
    }

    /// This status with one more cause (`field` empty for none).
    ///
    /// ```
    /// use kube_informer_testing::ApiStatus;
    ///
    /// let status = ApiStatus::new(422, "Invalid", "…")
    ///     .with_cause("FieldValueInvalid", "Invalid value", "spec.size");
    /// assert_eq!(status.causes().count(), 1);
    /// ```
    pub fn with_cause(mut self, reason: &str, message: &str, field: &str) -> Self {
        self.details
            .get_or_insert_with(Box::default)
            .causes
            .push(StatusCause {
                reason: reason.to_owned(),
                message: message.to_owned(),
                field: field.to_owned(),
            });
        self
    }

    /// The causes' reasons, in order.
    ///
    /// ```
    /// use kube_informer_testing::ApiStatus;
    ///
    /// let status = ApiStatus::too_large_resource_version();
    /// assert_eq!(status.causes().collect::<Vec<_>>(), ["ResourceVersionTooLarge"]);
    /// ```
    pub fn causes(&self) -> impl Iterator<Item = &str> {
        self.details
            .iter()
            .flat_map(|d| d.causes.iter().map(|c| c.reason.as_str()))
    }

    /// 410 Gone, reason `Expired`: the resourceVersion or continue token is too old.
    pub fn expired() -> Self {
        Self::new(410, "Expired", "too old resource version")
    }

    /// 504 with cause `ResourceVersionTooLarge`: the resourceVersion is ahead of the server.
    pub fn too_large_resource_version() -> Self {
        let message = "Too large resource version";
        Self::new(504, "Timeout", message).with_cause("ResourceVersionTooLarge", message, "")
    }

    /// 403 Forbidden.
    pub fn forbidden() -> Self {
        Self::new(403, "Forbidden", "forbidden by the fake server")
    }

    /// 429 Too Many Requests.
    pub fn too_many_requests() -> Self {
        Self::new(429, "TooManyRequests", "too many requests, try again later")
    }

    /// 409 Conflict as the API server answers a write based on an outdated
    /// object: `resource` is the plural, qualified by its group when it has
    /// one (`configmaps`, `deployments.apps`); the details name the object
    /// (SD2).
    ///
    /// ```
    /// use kube_informer_testing::ApiStatus;
    ///
    /// let status = ApiStatus::conflict("configmaps", "settings");
    /// assert_eq!(status.code, 409);
    /// assert!(status.message.starts_with("Operation cannot be fulfilled on configmaps \"settings\""));
    /// assert_eq!(status.to_json()["details"]["name"], "settings");
    /// ```
    pub fn conflict(resource: &str, name: &str) -> Self {
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        Self::new(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {resource} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        )
        .naming(group, plural, name)
    }

    /// 503 Service Unavailable, as an API server answers while it cannot
    /// reach etcd or is shutting down.
    pub fn service_unavailable() -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        )
    }

    /// 500 Internal Server Error.
    pub fn internal_error() -> Self {
        Self::new(
            500,
            "InternalError",
            "internal error injected by the fake server",
        )
    }

    /// 422 `Invalid`: `kind` (qualified by `group` in the message) `name`
    /// failed the checks in `errors`, each `(reason, field, detail)`. The
    /// message lists each distinct `field: detail` once (in brackets when
    /// there are several), the causes list them all, as kube-apiserver's
    /// validation errors do.
    pub(crate) fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        errors: &[(&str, &str, &str)],
    ) -> Self {
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut described: Vec<String> = Vec::new();
        for (_, field, detail) in errors {
            let line = format!("{field}: {detail}");
            if !described.contains(&line) {
                described.push(line);
            }
        }
        let summary = match described.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let mut status = Self::new(
            422,
            "Invalid",
            &format!("{qualified} {name:?} is invalid: {summary}"),
        )
        .naming(group, kind, name);
        for (reason, field, detail) in errors {
            status = status.with_cause(reason, detail, field);
        }
        status
    }

    /// The JSON `Status` object (SD1).
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(details) = &self.details {
            status["details"] = details.to_json();
        }
        status["code"] = json!(self.code);
        status
    }
}

impl StatusDetails {
    fn to_json(&self) -> Value {
        let mut details = Map::new();
        put_nonempty(&mut details, "name", &self.name);
        put_nonempty(&mut details, "group", &self.group);
        put_nonempty(&mut details, "kind", &self.kind);
        if !self.causes.is_empty() {
            let causes = self.causes.iter().map(|cause| {
                let mut out = Map::new();
                put_nonempty(&mut out, "reason", &cause.reason);
                put_nonempty(&mut out, "message", &cause.message);
                put_nonempty(&mut out, "field", &cause.field);
                Value::Object(out)
            });
            details.insert("causes".to_owned(), Value::Array(causes.collect()));
        }
        Value::Object(details)
    }
}

fn put_nonempty(map: &mut Map<String, Value>, key: &str, value: &str) {
    if !value.is_empty() {
        map.insert(key.to_owned(), json!(value));
    }
}
