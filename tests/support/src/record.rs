//! What the fake server was asked.

/// One HTTP request the fake server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// URL path without the query.
    pub path: String,
    /// Query parameters in the order they were sent, decoded.
    pub query: Vec<(String, String)>,
    /// The `Accept` header, if any.
    pub accept: Option<String>,
    /// When it arrived, on tokio's clock (so paused-clock tests can check delays).
    pub received_at: tokio::time::Instant,
}

impl RecordedRequest {
    /// The value of a query parameter, if it was sent.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this was a watch (`watch=true` or `watch=1`).
    pub fn is_watch(&self) -> bool {
        matches!(self.param("watch"), Some("true" | "1"))
    }

    /// Whether this was a list: a `GET` that is neither a watch nor the
    /// read of one named object.
    pub fn is_list(&self) -> bool {
        let names_object = crate::resource::CollectionPath::parse_with_name(&self.path)
            .is_some_and(|(_, name)| name.is_some());
        self.method == "GET" && !self.is_watch() && !names_object
    }

    /// Whether this was a write (`POST`, `PUT`, `PATCH` or `DELETE`).
    pub fn is_write(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
    }

    /// Whether this asked for metadata-only objects (`as=PartialObjectMetadata…`).
    pub fn is_metadata_only(&self) -> bool {
        self.accept
            .as_deref()
            .is_some_and(|a| a.contains("as=PartialObjectMetadata"))
    }
}
