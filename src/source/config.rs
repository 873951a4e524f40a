//! How the source lists and watches.

use std::{fmt, marker::PhantomData, time::Duration};

use kube::core::Selector;

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

/// Which resourceVersion the first list asks for (R1).
///
/// Later relists ask for the last resourceVersion the source saw, whatever
/// the semantic; a relist after that version became unavailable reads
/// consistently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListSemantic {
    /// resourceVersion "0": any recent state, answered from the API
    /// server's watch cache. Cheap for the server; what client-go's
    /// reflector does, and the default here (kube-runtime's default is
    /// [`MostRecent`](Self::MostRecent)).
    #[default]
    Any,
    /// resourceVersion "": a consistent read of the newest state, from
    /// etcd or a consistent cache.
    MostRecent,
}

/// Settings of a list/watch source: what to select, how to list, how long
/// watches last and how to back off. Each setting has one method; where
/// kube-runtime's `watcher::Config` has the same setting, the name is the
/// same or says more (`label_selector` for its `labels`, `field_selector`
/// for `fields`, `watch_timeout` for `timeout`; `labels_from`,
/// `page_size` and `disable_bookmarks` are its names; its `streaming_lists()`
/// is `list_strategy(ListStrategy::Streaming)` here).
///
/// The type parameter is the object type the source decodes; the settings
/// themselves do not depend on it, and `Config` alone (`Config<()>`) is the
/// config of no type in particular, what
/// [`Defaults::source_config`](crate::informer::Defaults::source_config)
/// takes. There is no transform here: set it once
/// on the informer (`InformerBuilder::transform`), which applies it where
/// objects enter the FIFO.
///
/// A `Config` is plain data, whatever `K`: a clone has every setting of the
/// original, and two configs are equal (`==`) when every setting is. How
/// the source decodes, and where it counts what it does, are not settings
/// of its `Config`: the informer that runs the source decides those
/// (`InformerBuilder::strip_managed_fields`, `Informer::metrics`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::core::{Expression, Selector};
/// use kube_informer::source::{Config, ListSemantic, ListStrategy};
///
/// let selector: Selector = Expression::Equal("app".into(), "web".into()).into();
/// let config: Config<Pod> = Config::default()
///     .labels_from(&selector)
///     .field_selector("spec.nodeName=node-1")
///     .page_size(200)
///     .list_semantic(ListSemantic::MostRecent)
///     .list_strategy(ListStrategy::Streaming)
///     .watch_timeout(Duration::from_secs(60), Duration::from_secs(120));
/// assert_eq!(config.clone(), config);
/// assert_ne!(config, Config::default());
/// ```
pub struct Config<K = ()> {
    settings: Settings,
    kind: PhantomData<fn() -> K>,
}

/// The settings of a [`Config`], whatever its object type: what the
/// source reads, and what an `InformerFactory` compares. Plain data, so
/// `Clone` copies every setting and `PartialEq` compares every one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub(crate) label_selector: Option<String>,
    pub(crate) field_selector: Option<String>,
    pub(crate) page_size: Option<u32>,
    pub(crate) watch_timeout: (Duration, Duration),
    pub(crate) list_strategy: ListStrategy,
    pub(crate) list_semantic: ListSemantic,
    pub(crate) bookmarks: bool,
    pub(crate) backoff: BackoffConfig,
}

/// The page size used when none is set explicitly.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

impl Default for Settings {
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            page_size: None,
            watch_timeout: (Duration::from_secs(300), Duration::from_secs(600)),
            list_strategy: ListStrategy::default(),
            list_semantic: ListSemantic::default(),
            bookmarks: true,
            backoff: BackoffConfig::default(),
        }
    }
}

// `Default`, `Clone`, `PartialEq` and `Debug` are those of the settings,
// for every `K`: a derive would ask `K` for each of them as well, though no
// value of `K` is held.

impl<K> Default for Config<K> {
    fn default() -> Self {
        Self::from_settings(Settings::default())
    }
}

impl<K> Clone for Config<K> {
    fn clone(&self) -> Self {
        Self::from_settings(self.settings.clone())
    }
}

impl<K> PartialEq for Config<K> {
    fn eq(&self, other: &Self) -> bool {
        self.settings == other.settings
    }
}

impl<K> fmt::Debug for Config<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Config").field(&self.settings).finish()
    }
}

impl<K> Config<K> {
    pub(crate) fn from_settings(settings: Settings) -> Self {
        Self {
            settings,
            kind: PhantomData,
        }
    }

    /// The settings alone, for the source and the factory.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The settings alone, for the source and the factory.
    pub(crate) fn into_settings(self) -> Settings {
        self.settings
    }
}

impl<K> Config<K> {
    /// Only objects whose labels match, e.g. `app=web,tier!=cache`.
    #[must_use]
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.settings.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose labels match a typed [`Selector`].
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::core::{Expression, Selector};
    /// use kube_informer::source::Config;
    ///
    /// let selector = Selector::from_iter([
    ///     Expression::Equal("app".into(), "web".into()),
    ///     Expression::Exists("tier".into()),
    /// ]);
    /// let config = Config::<Pod>::default().labels_from(&selector);
    /// ```
    #[must_use]
    pub fn labels_from(self, selector: &Selector) -> Self {
        self.label_selector(selector.to_string())
    }

    /// Only objects whose fields match, e.g. `metadata.name=web`.
    #[must_use]
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.settings.field_selector = Some(selector.into());
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
        self.settings.page_size = Some(size);
        self
    }

    /// Each watch asks the server to end it after a duration drawn uniformly
    /// from `[min, max)`, in whole seconds (default `[300 s, 600 s)`), which
    /// spreads reconnections of many clients. When `max <= min`, `min` is
    /// used. Any duration is accepted; one beyond `u32::MAX` seconds counts
    /// as `u32::MAX` seconds.
    ///
    /// A watch that sends nothing for its timeout plus a margin is taken
    /// for dead and reopened (R10).
    #[must_use]
    pub fn watch_timeout(mut self, min: Duration, max: Duration) -> Self {
        self.settings.watch_timeout = (min, max);
        self
    }

    /// Paginated lists (default) or streaming lists: with
    /// [`ListStrategy::Streaming`] relists are streaming lists (R8), falling
    /// back to a paginated list where the server refuses them.
    #[must_use]
    pub fn list_strategy(mut self, strategy: ListStrategy) -> Self {
        self.settings.list_strategy = strategy;
        self
    }

    /// Which resourceVersion the first paginated list asks for (default
    /// [`ListSemantic::Any`]).
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.settings.list_semantic = semantic;
        self
    }

    /// Stops asking for bookmarks on plain watches (they stay on for
    /// streaming lists, which end at one). Without bookmarks a re-watch
    /// after a quiet spell may start from a resourceVersion the server has
    /// compacted, which costs a relist; keep them on unless the server
    /// mishandles them.
    #[must_use]
    pub fn disable_bookmarks(mut self) -> Self {
        self.settings.bookmarks = false;
        self
    }

    /// Retry delays after failures.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.settings.backoff = backoff;
        self
    }
}

impl Settings {
    /// Draws one watch timeout in whole seconds from the configured bounds.
    pub(crate) fn draw_watch_timeout(&self) -> u32 {
        let (min, max) = self.watch_timeout;
        let (min, max) = (min.as_secs_f64(), max.as_secs_f64());
        let secs = if max > min {
            min + rand::random::<f64>() * (max - min)
        } else {
            min
        };
        // `as` saturates: anything past u32::MAX seconds is u32::MAX.
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
            let t = config.settings().draw_watch_timeout();
            assert!((300..600).contains(&t), "{t}");
        }
        let fixed =
            Config::<()>::default().watch_timeout(Duration::from_secs(7), Duration::from_secs(7));
        assert_eq!(fixed.settings().draw_watch_timeout(), 7);
    }

    /// Plain data: a clone is equal to its original, every setting counts
    /// in `==`, and the object type does not.
    #[test]
    fn configs_clone_and_compare_as_their_settings() {
        let config = Config::<()>::default()
            .label_selector("app=web")
            .page_size(7)
            .list_strategy(ListStrategy::Streaming)
            .backoff(BackoffConfig {
                jitter: 0.5,
                ..BackoffConfig::default()
            });
        assert_eq!(config.clone(), config);
        assert_eq!(Config::<()>::default(), Config::<()>::default());
        let differ: [Config<()>; 9] = [
            config.clone().label_selector("app=db"),
            config.clone().field_selector("metadata.name=a"),
            config.clone().page_size(8),
            config
                .clone()
                .watch_timeout(Duration::from_secs(42), Duration::from_secs(42)),
            config.clone().list_strategy(ListStrategy::Paginated),
            config.clone().list_semantic(ListSemantic::MostRecent),
            config.clone().disable_bookmarks(),
            config.clone().backoff(BackoffConfig::default()),
            Config::default(),
        ];
        for (i, other) in differ.iter().enumerate() {
            assert_ne!(other, &config, "setting {i} does not count");
        }
        // Configs of unlike object types (which need not be comparable
        // themselves) compare as their settings.
        struct NotComparable;
        assert_eq!(
            Config::<NotComparable>::default().page_size(7),
            Config::<NotComparable>::default().page_size(7)
        );
        assert_eq!(
            format!("{:?}", Config::<NotComparable>::default()),
            format!("{:?}", Config::<()>::default())
        );
    }

    /// Durations from users never panic: huge timeouts saturate.
    #[test]
    fn huge_watch_timeouts_saturate() {
        let huge = Config::<()>::default().watch_timeout(Duration::MAX, Duration::MAX);
        assert_eq!(huge.settings().draw_watch_timeout(), u32::MAX);
        let wide = Config::<()>::default().watch_timeout(Duration::ZERO, Duration::MAX);
        for _ in 0..100 {
            assert!(wide.settings().draw_watch_timeout() >= 1);
        }
    }
}
