//! The pages of a paginated relist, fetched and decoded ahead of the relist
//! that queues their objects.
//!
//! A page's continue token names the next page, so a relist is a chain; run
//! one step after another (fetch, read, decode, queue, then ask for the
//! next page), the decoding waits for every fetch and the fetch waits
//! for every decode. Here each page is read by a task of its own, which asks
//! for the page after it as soon as it has read its own continue token, and
//! then decodes its items. The relist takes a page once it is decoded and
//! starts the next page's task (whose text is already on its way) before it
//! queues this page's objects. So a relist holds at most three pages: the
//! one being queued, the next (being decoded, or decoded and waiting), and
//! the text of the one after that; and it waits only when the server or the
//! decoding is slower than the queueing.
//!
//! Dropping a [`Task`] aborts it, and with it the request for the page after
//! it: a relist that is given up, or an informer that stops, leaves no
//! request running.

use std::ops::Range;

use tokio::task::JoinHandle;
use tracing::Instrument;

use super::{
    Watchable,
    decode::{
        Decoder,
        parallel::{self, Slices},
        protobuf_error,
    },
    envelope::{Envelope, read_envelope},
    error::{DecodeTarget, Error},
    target::{ListBody, ListQuery, Target},
};

/// Work running on a task of its own, aborted when dropped.
#[derive(Debug)]
pub(crate) struct Task<O>(JoinHandle<O>);

impl<O> Drop for Task<O> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<O: Send + 'static> Task<O> {
    /// Runs `work` on a task of its own; `None` outside a tokio runtime.
    fn spawn(work: impl Future<Output = O> + Send + 'static) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(Self(runtime.spawn(work.in_current_span())))
    }

    /// What the work gave; `None` if the runtime cancelled it. A panic in
    /// the work goes on here.
    pub(crate) async fn join(mut self) -> Option<O> {
        match (&mut self.0).await {
            Ok(output) => Some(output),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => None,
        }
    }
}

/// A request for one page's answer.
pub(crate) type Fetch = Task<Result<ListBody, Error>>;

/// One page, read and decoded.
#[derive(Debug)]
pub(crate) struct Fetched<T> {
    /// The list's kind (`ConfigMapList`).
    pub(crate) kind: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) continue_token: Option<String>,
    pub(crate) items: Vec<Result<T, Error>>,
    /// The request for the page the continue token names, already sent.
    pub(crate) next: Option<Fetch>,
}

/// Why a page could not be had.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The request failed: the relist decides whether to retry.
    Request(Error),
    /// The answer is not a list.
    Answer(Error),
}

/// A page being fetched and decoded.
pub(crate) type PageTask<T> = Task<Result<Fetched<T>, Failure>>;

/// The page `query` names: its text from `fetch` if that request was sent
/// already (else asked for now), read, the next page requested, and its
/// items decoded.
pub(crate) async fn page<T: Watchable>(
    target: Target,
    query: ListQuery,
    mut decoder: Decoder,
    fetch: Option<Fetch>,
) -> Result<Fetched<T>, Failure> {
    let body = match fetch {
        Some(fetch) => match fetch.join().await {
            Some(body) => body,
            None => target.list(&query).await,
        },
        None => target.list(&query).await,
    }
    .map_err(Failure::Request)?;
    let envelope = match &body {
        ListBody::Json(text) => read_envelope(text),
        ListBody::Protobuf(bytes) => protobuf_envelope(bytes, &decoder),
    }
    .map_err(Failure::Answer)?;
    decoder.learn_list_kind(envelope.kind.as_deref());
    let next = envelope
        .continue_token
        .as_ref()
        .filter(|token| !token.is_empty())
        .and_then(|token| {
            let query = ListQuery {
                continue_token: Some(token.clone()),
                ..query.clone()
            };
            Task::spawn(async move { target.list(&query).await })
        });
    let items = decode_items(body, envelope.items, decoder).await;
    Ok(Fetched {
        kind: envelope.kind,
        resource_version: envelope.resource_version,
        continue_token: envelope.continue_token,
        items,
        next,
    })
}

/// [`page`] on a task of its own; `None` outside a tokio runtime (the page
/// is then fetched when it is asked for).
pub(crate) fn spawn_page<T: Watchable>(
    target: Target,
    query: ListQuery,
    decoder: Decoder,
    fetch: Option<Fetch>,
) -> Option<PageTask<T>> {
    Task::spawn(page(target, query, decoder, fetch))
}

/// A protobuf list answer read as far as its metadata, as
/// [`read_envelope`] reads a JSON one.
fn protobuf_envelope(bytes: &[u8], decoder: &Decoder) -> Result<Envelope, Error> {
    let schema = decoder.schema(DecodeTarget::List)?;
    let page = schema
        .list(bytes)
        .map_err(|error| protobuf_error(error, DecodeTarget::List))?;
    let start = bytes.as_ptr() as usize;
    let items = page
        .items
        .iter()
        .map(|item| {
            // Each item is a slice of `bytes`, so its address is an
            // offset into it.
            let offset = item.as_ptr() as usize - start;
            offset..offset + item.len()
        })
        .collect();
    Ok(Envelope {
        kind: Some(format!("{}List", schema.kind())),
        resource_version: Some(page.resource_version).filter(|rv| !rv.is_empty()),
        continue_token: page.continue_token,
        items,
    })
}

async fn decode_items<T: Watchable>(
    body: ListBody,
    ranges: Vec<Range<usize>>,
    decoder: Decoder,
) -> Vec<Result<T, Error>> {
    let limit = decoder.thread_limit();
    match body {
        ListBody::Json(text) => {
            parallel::decode_detached(Slices { text, ranges }, limit, move |item: &str| {
                decoder.object_text(item, DecodeTarget::ListItem)
            })
            .await
        }
        ListBody::Protobuf(text) => {
            parallel::decode_detached(Slices { text, ranges }, limit, move |item: &[u8]| {
                decoder.protobuf_object(item, DecodeTarget::ListItem)
            })
            .await
        }
    }
}
