//! The collection being listed and watched, and the requests for it.
//!
//! The source builds its own requests instead of calling `Api::list` /
//! `Api::watch`: kube's `ListParams` drops `resourceVersion=0` whenever a
//! `limit` is set, while client-go sends both on the first list; and the
//! watch needs raw lines so that unknown event types and undecodable
//! objects become error items instead of ending the stream.
//!
//! A collection of a built-in kind, or any collection's metadata-only
//! view, with `Encoding::Protobuf`, asks for protobuf with JSON as the
//! fallback (client-go's Accept header then);
//! its answers are read as bytes and decoded by their `Content-Type`, and
//! its error bodies (a `Status` in either encoding) are read here, as
//! kube reads JSON ones, so that both encodings fail alike.

use std::time::Duration;

use futures::TryStreamExt;
use http_body_util::BodyExt;
use kube::{Api, core::Status};

use super::{
    error::Error,
    lines::{Body, Framing, WatchBody},
};
use crate::{protobuf::KindSchema, resource::WatchedResource};

/// How long one list request (one page) may take, answer read whole, before
/// it is abandoned. kube-apiserver ends requests other than watches after
/// its `--request-timeout`, 60 s by default, so a page not in after twice
/// that will not come; kube's client has no read timeout of its own.
pub const LIST_DEADLINE: Duration = Duration::from_secs(120);

const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// Protobuf, or JSON where the server has no protobuf for the resource:
/// what client-go sends when its content type is protobuf.
const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";
/// The metadata-only views in protobuf first, then as JSON.
const PROTOBUF_METADATA_LIST_ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";
const PROTOBUF_METADATA_ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";
/// The media type of protobuf bodies (`;stream=watch` follows it on a
/// watch).
const PROTOBUF_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// A list answer, as the server encoded it.
#[derive(Debug)]
pub(crate) enum ListBody {
    Json(String),
    Protobuf(Vec<u8>),
}

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
    /// The kind's protobuf schema, when protobuf is asked for.
    protobuf: Option<KindSchema>,
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
            .field("protobuf", &self.protobuf.map(|schema| schema.kind()))
            .field("resource", &self.resource)
            .finish()
    }
}

impl Target {
    /// Requests for `api`'s collection (its metadata-only view if
    /// `metadata_only`); protobuf ones if `protobuf` is the schema of what
    /// they return.
    pub(crate) fn new<K>(
        api: Api<K>,
        metadata_only: bool,
        protobuf: Option<KindSchema>,
        resource: WatchedResource,
    ) -> Self
    where
        K: kube::Resource,
    {
        let url = api.resource_url().to_owned();
        Self {
            client: api.into_client(),
            url,
            metadata_only,
            protobuf,
            name: resource.to_string(),
            resource,
        }
    }

    /// The kind's protobuf schema, if protobuf is asked for.
    pub(crate) fn protobuf(&self) -> Option<KindSchema> {
        self.protobuf
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

    /// A GET of `url`, a list's or (`watch`) a watch's, with the Accept
    /// header of this target's view and encoding (none: kube's JSON).
    fn request(&self, url: String, watch: bool) -> Result<http::Request<Vec<u8>>, Error> {
        let accept = match (self.metadata_only, self.protobuf.is_some(), watch) {
            (false, false, _) => None,
            (false, true, _) => Some(PROTOBUF_ACCEPT),
            (true, false, false) => Some(METADATA_LIST_ACCEPT),
            (true, false, true) => Some(METADATA_ACCEPT),
            (true, true, false) => Some(PROTOBUF_METADATA_LIST_ACCEPT),
            (true, true, true) => Some(PROTOBUF_METADATA_ACCEPT),
        };
        let mut builder = http::Request::get(url);
        if let Some(accept) = accept {
            builder = builder.header(http::header::ACCEPT, accept);
        }
        builder.body(Vec::new()).map_err(Error::BuildRequest)
    }

    /// One list request, abandoned after [`LIST_DEADLINE`]; the answer,
    /// whole.
    pub(crate) async fn list(&self, query: &ListQuery) -> Result<ListBody, Error> {
        let request = self.request(self.list_url(query), false)?;
        let answer = async {
            if self.protobuf.is_none() {
                return self.client.request_text(request).await.map(ListBody::Json);
            }
            let response = self.send(request).await?;
            let protobuf = is_protobuf(&response);
            let bytes = Vec::from(response.into_body().collect_bytes().await?);
            if protobuf {
                Ok(ListBody::Protobuf(bytes))
            } else {
                String::from_utf8(bytes)
                    .map(ListBody::Json)
                    .map_err(kube::Error::FromUtf8)
            }
        };
        match tokio::time::timeout(LIST_DEADLINE, answer).await {
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
        let mut request = self.request(self.watch_url(query), true)?;
        // One gzip member per event would defeat line framing; ask for plain bytes.
        request.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static("identity"),
        );
        let start_error = |source| Error::WatchStart {
            resource: self.name.clone(),
            source,
        };
        if self.protobuf.is_none() {
            let body = self
                .client
                .request_stream(request)
                .await
                .map_err(start_error)?;
            let body: Body = Box::pin(body);
            return Ok(WatchBody::new(body, Framing::Lines));
        }
        let response = self.send(request).await.map_err(start_error)?;
        let framing = if is_protobuf(&response) {
            Framing::LengthPrefixed
        } else {
            Framing::Lines
        };
        let body = response
            .into_body()
            .into_data_stream()
            .map_err(std::io::Error::other)
            .into_async_read();
        Ok(WatchBody::new(Box::pin(body), framing))
    }

    /// Sends `request`; an error status is `kube::Error::Api` with the
    /// server's `Status`, whichever encoding it came in.
    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<kube::client::Body>, kube::Error> {
        let response = self.client.send(request.map(Into::into)).await?;
        let code = response.status();
        if !(code.is_client_error() || code.is_server_error()) {
            return Ok(response);
        }
        let body = response.into_body().collect_bytes().await?;
        Err(kube::Error::Api(Box::new(error_status(
            code.as_u16(),
            &body,
        ))))
    }
}

/// Whether an answer is protobuf, by its `Content-Type`.
fn is_protobuf<B>(response: &http::Response<B>) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with(PROTOBUF_TYPE))
}

/// The `Status` of an error answer: protobuf or JSON, else one made of the
/// HTTP code and the body's text, as kube makes it for a JSON request.
fn error_status(code: u16, body: &[u8]) -> Status {
    let decoded = crate::protobuf::decode_status(body)
        .ok()
        .or_else(|| serde_json::from_slice::<Status>(body).ok());
    match decoded {
        Some(mut status) => {
            if status.code == 0 {
                status.code = code;
            }
            status
        }
        None => Status::failure(
            String::from_utf8_lossy(body).trim(),
            "Failed to parse error data",
        )
        .with_code(code),
    }
}
