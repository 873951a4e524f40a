//! How the source lists and watches.

use std::{fmt, sync::Arc, time::Duration};

/// How a relist fetches the whole state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListStrategy {
    /// `GET` lists, page by page with `limit` and `continue` (R1, R2).
    #[default]
    Paginated,
    /// One watch with `sendInitialEvents=true` whose first events are the
    /// state, ended by the `k8s.io/initial-events-end` bookmark; the same
    /// watch then goes on (R8). When the server refuses or the stream fails
    /// before that bookmark, that relist falls back to a paginated list.
    Streaming,
}

/// Retry delays after failures (R5).
///
/// The n-th delay is `min(initial × factorⁿ, max)`, then stretched by a random
/// factor in `[1, 1 + jitter)`; so with the defaults delays run 0.8 s, 1.6 s,
/// 3.2 s … up to 30 s, each up to twice as long with jitter, i.e. capped in
/// `[30 s, 60 s)`. When no delay was needed for `reset_after`, the sequence
/// starts over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// First delay (default 800 ms).
    pub initial: Duration,
    /// Largest delay before jitter (default 30 s).
    pub max: Duration,
    /// Growth per failure (default 2.0).
    pub factor: f64,
    /// Random stretch: a delay `d` becomes `d × (1 + jitter × r)`, `r` in `[0, 1)` (default 1.0).
    pub jitter: f64,
    /// Quiet time after which delays start over (default 2 min).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// A function applied to every object before it leaves the source.
pub(crate) type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Settings of a list/watch source: what to select, how to list, how long
/// watches last, how to back off, and an optional transform.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_informer::source::{Config, ListStrategy};
///
/// let config: Config<Pod> = Config::default()
///     .label_selector("app=web")
///     .field_selector("spec.nodeName=node-1")
///     .page_size(200)
///     .list_strategy(ListStrategy::Streaming)
///     .watch_timeout(Duration::from_secs(60), Duration::from_secs(120))
///     .transform(|mut pod: Pod| {
///         pod.metadata.managed_fields = None;
///         pod
///     });
/// assert_eq!(config.get_page_size(), Some(200));
/// ```
pub struct Config<K> {
    pub(crate) label_selector: Option<String>,
    pub(crate) field_selector: Option<String>,
    pub(crate) page_size: Option<u32>,
    pub(crate) watch_timeout: (Duration, Duration),
    pub(crate) list_strategy: ListStrategy,
    pub(crate) backoff: BackoffConfig,
    pub(crate) transform: Option<Transform<K>>,
}

/// The page size used when none is set explicitly.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

impl<K> Default for Config<K> {
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            page_size: None,
            watch_timeout: (Duration::from_secs(300), Duration::from_secs(600)),
            list_strategy: ListStrategy::default(),
            backoff: BackoffConfig::default(),
            transform: None,
        }
    }
}

impl<K> Clone for Config<K> {
    fn clone(&self) -> Self {
        Self {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            page_size: self.page_size,
            watch_timeout: self.watch_timeout,
            list_strategy: self.list_strategy,
            backoff: self.backoff,
            transform: self.transform.clone(),
        }
    }
}

impl<K> fmt::Debug for Config<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("page_size", &self.page_size)
            .field("watch_timeout", &self.watch_timeout)
            .field("list_strategy", &self.list_strategy)
            .field("backoff", &self.backoff)
            .field("transform", &self.transform.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl<K> Config<K> {
    /// Only objects whose labels match, e.g. `app=web,tier!=cache`.
    #[must_use]
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match, e.g. `metadata.name=web`.
    #[must_use]
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Always list in pages of `size` objects (0 turns paging off).
    ///
    /// Without this setting the source pages the way client-go's reflector
    /// does: `limit=500` on the first list (resourceVersion "0") and on
    /// consistent lists (resourceVersion ""), and no `limit` on relists from
    /// a known resourceVersion, which the API server then serves from its
    /// watch cache in one answer, unless the first list came back in pages
    /// (no watch cache), in which case every later list is paged too.
    #[must_use]
    pub fn page_size(mut self, size: u32) -> Self {
        self.page_size = Some(size);
        self
    }

    /// The explicitly set page size, if any (see [`page_size`](Self::page_size)).
    pub fn get_page_size(&self) -> Option<u32> {
        self.page_size
    }

    /// Each watch asks the server to end it after a duration drawn uniformly
    /// from `[min, max)`, in whole seconds (default `[300 s, 600 s)`), which
    /// spreads reconnections of many clients. When `max <= min`, `min` is used.
    #[must_use]
    pub fn watch_timeout(mut self, min: Duration, max: Duration) -> Self {
        self.watch_timeout = (min, max);
        self
    }

    /// Paginated lists (default) or streaming lists.
    #[must_use]
    pub fn list_strategy(mut self, strategy: ListStrategy) -> Self {
        self.list_strategy = strategy;
        self
    }

    /// Retry delays after failures.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// A function run on every object before it leaves the source, e.g. to
    /// drop `managedFields` so no later stage keeps them in memory.
    #[must_use]
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Draws one watch timeout in whole seconds from the configured bounds.
    pub(crate) fn draw_watch_timeout(&self) -> u32 {
        let (min, max) = self.watch_timeout;
        let (min, max) = (min.as_secs_f64(), max.as_secs_f64());
        let secs = if max > min {
            min + rand::random::<f64>() * (max - min)
        } else {
            min
        };
        (secs as u32).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_timeouts_stay_in_bounds() {
        let config = Config::<()>::default();
        for _ in 0..1000 {
            let t = config.draw_watch_timeout();
            assert!((300..600).contains(&t), "{t}");
        }
        let fixed =
            Config::<()>::default().watch_timeout(Duration::from_secs(7), Duration::from_secs(7));
        assert_eq!(fixed.draw_watch_timeout(), 7);
    }
}
