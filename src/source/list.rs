//! Paginated lists (R1, R2): which resourceVersion and limit to ask for,
//! following continue tokens, and the two immediate retries: a full list
//! when a continue token expired, and a consistent list (resourceVersion
//! "") when the resourceVersion is gone or ahead of the server.

use std::ops::Range;

use serde::de::DeserializeOwned;

use super::{
    Watchable,
    config::DEFAULT_PAGE_SIZE,
    decode::{Decoder, parallel},
    envelope::read_envelope,
    error::{DecodeTarget, Error, api_status, is_expired, is_too_large_resource_version},
    prefetch::{self, Failure, PageTask},
    target::{ListQuery, Target},
};

/// Decodes a list answer's items as [`Pager::next_page`] does, but with
/// the caller blocked, on `threads` threads (`None`: as many as the page is
/// worth, see `decode::parallel`); for the decode benchmark.
pub(crate) fn decode_items<T: DeserializeOwned + Send>(
    text: &str,
    decoder: &mut Decoder,
    threads: Option<usize>,
) -> Result<Vec<Result<T, Error>>, Error> {
    let envelope = read_envelope(text)?;
    decoder.learn_list_kind(envelope.kind.as_deref());
    let decoder = &*decoder;
    let decode =
        |item: &Range<usize>| decoder.object_text(&text[item.clone()], DecodeTarget::ListItem);
    Ok(match threads {
        Some(threads) => parallel::decode_on(&envelope.items, threads, text.len(), decode),
        None => parallel::decode_all(&envelope.items, text.len(), decoder.thread_limit(), decode),
    })
}

/// Which lists get a `limit`: client-go's rule unless the user fixed a size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageSizePolicy {
    /// Set by `Config::page_size`: always used (0 means no limit).
    pub(crate) explicit: Option<u32>,
    /// A first list at resourceVersion "0" came back in pages, so the server
    /// has no watch cache for this resource and every list should page.
    pub(crate) paginated_at_rv0: bool,
}

impl PageSizePolicy {
    /// The limit for a list at `resource_version`. A list from a known
    /// resourceVersion goes without limit so the watch cache can answer it;
    /// "0" keeps the limit since a cache ignores it anyway and a server
    /// without cache then pages; "" is a read from etcd and pages.
    pub(crate) fn limit_for(&self, resource_version: &str) -> Option<u32> {
        match self.explicit {
            Some(0) => None,
            Some(size) => Some(size),
            None if self.paginated_at_rv0 => Some(DEFAULT_PAGE_SIZE),
            None if !resource_version.is_empty() && resource_version != "0" => None,
            None => Some(DEFAULT_PAGE_SIZE),
        }
    }
}

/// What one step of a list gave.
#[derive(Debug)]
pub(crate) enum PageOutcome<T> {
    /// One page. `fresh` marks the first page of a list attempt (a relist
    /// starts there); `done` carries the list's resourceVersion on the last page.
    Page {
        fresh: bool,
        items: Vec<Result<T, Error>>,
        done: Option<String>,
    },
    /// This attempt failed; the next call retries at once.
    Retry(Error),
    /// This relist failed; retry after a backoff.
    Failed(Error),
}

/// One relist, page by page.
#[derive(Debug)]
pub(crate) struct Pager<T: Watchable> {
    requested_rv: String,
    query: ListQuery,
    /// The snapshot's resourceVersion, from the first page of this attempt.
    list_rv: Option<String>,
    tried_consistent: bool,
    paginated: bool,
    /// The next page, fetched and decoded while this one is queued.
    ahead: Option<PageTask<T>>,
}

impl<T: Watchable> Pager<T> {
    /// A relist at `resource_version` with `limit` per page.
    pub(crate) fn new(resource_version: String, limit: Option<u32>) -> Self {
        Self {
            query: ListQuery {
                resource_version: resource_version.clone(),
                limit,
                continue_token: None,
            },
            requested_rv: resource_version,
            list_rv: None,
            tried_consistent: false,
            paginated: false,
            ahead: None,
        }
    }

    /// The resourceVersion the relist was asked for.
    pub(crate) fn requested_resource_version(&self) -> &str {
        &self.requested_rv
    }

    /// Whether the resourceVersion turned out unavailable (410 or too large),
    /// so the next relist must be a consistent one until a list succeeds.
    pub(crate) fn resource_version_unavailable(&self) -> bool {
        self.tried_consistent
    }

    /// Whether the answer came in more than one page.
    pub(crate) fn paginated(&self) -> bool {
        self.paginated
    }

    /// Fetches and decodes the next page; its items are decoded in
    /// parallel when the page is big enough (same order, same errors).
    ///
    /// Pages are fetched and decoded ahead (`prefetch`): the page this
    /// returns was, as a rule, fetched and decoded while the caller queued
    /// the one before, and the next one is on its way when this returns.
    pub(crate) async fn next_page(
        &mut self,
        target: &Target,
        decoder: &mut Decoder,
    ) -> PageOutcome<T> {
        let fresh = self.query.continue_token.is_none();
        let ahead = match self.ahead.take() {
            Some(task) => task.join().await,
            None => None,
        };
        let fetched = match ahead {
            Some(fetched) => fetched,
            None => prefetch::page(target.clone(), self.query.clone(), decoder.clone(), None).await,
        };
        let fetched = match fetched {
            Ok(fetched) => fetched,
            Err(Failure::Request(error)) => return self.on_error(error),
            Err(Failure::Answer(error)) => return PageOutcome::Failed(error),
        };
        decoder.learn_list_kind(fetched.kind.as_deref());
        if fresh {
            self.list_rv = fetched.resource_version;
        }
        let done = match fetched.continue_token.filter(|t| !t.is_empty()) {
            Some(token) => {
                self.paginated = true;
                self.query.continue_token = Some(token);
                self.ahead = prefetch::spawn_page(
                    target.clone(),
                    self.query.clone(),
                    decoder.clone(),
                    fetched.next,
                );
                None
            }
            None => Some(self.list_rv.clone().unwrap_or_default()),
        };
        PageOutcome::Page {
            fresh,
            items: fetched.items,
            done,
        }
    }

    /// Decides how a failed request continues: a full list after an
    /// expired continue token, a consistent list after an unavailable
    /// resourceVersion, otherwise give up this relist.
    fn on_error(&mut self, error: Error) -> PageOutcome<T> {
        let status = match &error {
            Error::List { source, .. } => api_status(source),
            _ => None,
        };
        let expired = status.is_some_and(|s| is_expired(s.code, &s.reason));
        let too_large = status.is_some_and(is_too_large_resource_version);
        if expired && self.query.continue_token.is_some() {
            // The snapshot behind the token was compacted: list everything at
            // the requested resourceVersion in one go.
            self.query = ListQuery {
                resource_version: self.requested_rv.clone(),
                limit: None,
                continue_token: None,
            };
            return PageOutcome::Retry(error);
        }
        if (expired || too_large) && !self.tried_consistent {
            self.tried_consistent = true;
            self.query.resource_version = String::new();
            self.query.continue_token = None;
            return PageOutcome::Retry(error);
        }
        PageOutcome::Failed(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r2_limits_follow_client_go() {
        let default = PageSizePolicy {
            explicit: None,
            paginated_at_rv0: false,
        };
        assert_eq!(default.limit_for("0"), Some(500));
        assert_eq!(default.limit_for(""), Some(500));
        assert_eq!(default.limit_for("42"), None);
        let no_cache = PageSizePolicy {
            paginated_at_rv0: true,
            ..default
        };
        assert_eq!(no_cache.limit_for("42"), Some(500));
        let fixed = PageSizePolicy {
            explicit: Some(7),
            ..default
        };
        assert_eq!(fixed.limit_for("42"), Some(7));
        let off = PageSizePolicy {
            explicit: Some(0),
            ..default
        };
        assert_eq!(off.limit_for("0"), None);
    }
}
