//! The collection being listed and watched, and the requests for it.
//!
//! The source builds its own requests instead of calling `Api::list` /
//! `Api::watch`: kube's `ListParams` drops `resourceVersion=0` whenever a
//! `limit` is set, while client-go sends both on the first list; and the
//! watch needs raw lines so that unknown event types and undecodable
//! objects become error items instead of ending the stream.

use std::time::Duration;

use kube::Api;

use super::{
    error::Error,
    lines::{Body, WatchBody},
};
use crate::resource::WatchedResource;

/// How long one list request (one page) may take, answer read whole, before
/// it is abandoned. kube-apiserver ends requests other than watches after
/// its `--request-timeout`, 60 s by default, so a page not in after twice
/// that will not come; kube's client has no read timeout of its own.
pub const LIST_DEADLINE: Duration = Duration::from_secs(120);

const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Query parameters of one list request.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListQuery {
    pub(crate) resource_version: String,
    pub(crate) limit: Option<u32>,
    pub(crate) continue_token: Option<String>,
}

/// Query parameters of one watch request.
#[derive(Debug, Clone)]
pub(crate) struct WatchQuery {
    pub(crate) resource_version: String,
    pub(crate) timeout: Duration,
    pub(crate) send_initial_events: bool,
    pub(crate) bookmarks: bool,
}

/// Where requests go and how objects are asked for.
#[derive(Clone)]
pub(crate) struct Target {
    client: kube::Client,
    url: String,
    metadata_only: bool,
    /// What is listed and watched: the selectors of every request, and the
    /// names of every span.
    resource: WatchedResource,
    /// `resource` as error messages name it.
    name: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("metadata_only", &self.metadata_only)
            .field("resource", &self.resource)
            .finish()
    }
}

impl Target {
    pub(crate) fn new<K>(api: Api<K>, metadata_only: bool, resource: WatchedResource) -> Self
    where
        K: kube::Resource,
    {
        let url = api.resource_url().to_owned();
        Self {
            client: api.into_client(),
            url,
            metadata_only,
            name: resource.to_string(),
            resource,
        }
    }

    /// What this target lists and watches, for spans.
    pub(crate) fn resource(&self) -> &WatchedResource {
        &self.resource
    }

    /// The collection as error messages name it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn query_start(&self) -> form_urlencoded::Serializer<'static, String> {
        let mut qp = form_urlencoded::Serializer::new(format!("{}?", self.url));
        if let Some(labels) = &self.resource.label_selector {
            qp.append_pair("labelSelector", labels);
        }
        if let Some(fields) = &self.resource.field_selector {
            qp.append_pair("fieldSelector", fields);
        }
        qp
    }

    fn request(&self, url: String, accept: &str) -> Result<http::Request<Vec<u8>>, Error> {
        let mut builder = http::Request::get(url);
        if self.metadata_only {
            builder = builder.header(http::header::ACCEPT, accept);
        }
        builder.body(Vec::new()).map_err(Error::BuildRequest)
    }

    /// One list request, abandoned after [`LIST_DEADLINE`]; the answer's text.
    pub(crate) async fn list(&self, query: &ListQuery) -> Result<String, Error> {
        let request = self.request(self.list_url(query), METADATA_LIST_ACCEPT)?;
        match tokio::time::timeout(LIST_DEADLINE, self.client.request_text(request)).await {
            Ok(answer) => answer.map_err(|source| Error::List {
                resource: self.name.clone(),
                source,
            }),
            Err(_) => Err(Error::ListTimeout {
                resource: self.name.clone(),
                after: LIST_DEADLINE,
            }),
        }
    }

    fn list_url(&self, query: &ListQuery) -> String {
        let mut qp = self.query_start();
        if let Some(limit) = query.limit {
            qp.append_pair("limit", &limit.to_string());
        }
        match &query.continue_token {
            // The server refuses a resourceVersion next to a continue token:
            // the token already pins the snapshot.
            Some(token) => {
                qp.append_pair("continue", token);
            }
            None if !query.resource_version.is_empty() => {
                qp.append_pair("resourceVersion", &query.resource_version);
            }
            None => {}
        }
        qp.finish()
    }

    fn watch_url(&self, query: &WatchQuery) -> String {
        let mut qp = self.query_start();
        qp.append_pair("watch", "true");
        qp.append_pair("resourceVersion", &query.resource_version);
        qp.append_pair("timeoutSeconds", &query.timeout.as_secs().to_string());
        // A streaming list ends at a bookmark, so it always asks for them.
        if query.bookmarks || query.send_initial_events {
            qp.append_pair("allowWatchBookmarks", "true");
        }
        if query.send_initial_events {
            qp.append_pair("sendInitialEvents", "true");
            qp.append_pair("resourceVersionMatch", "NotOlderThan");
        }
        qp.finish()
    }

    /// Opens a watch; its body, unparsed.
    pub(crate) async fn watch(&self, query: &WatchQuery) -> Result<WatchBody, Error> {
        let mut request = self.request(self.watch_url(query), METADATA_ACCEPT)?;
        // One gzip member per event would defeat line framing; ask for plain bytes.
        request.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static("identity"),
        );
        let body = self
            .client
            .request_stream(request)
            .await
            .map_err(|source| Error::WatchStart {
                resource: self.name.clone(),
                source,
            })?;
        let body: Body = Box::pin(body);
        Ok(WatchBody::new(body))
    }
}
