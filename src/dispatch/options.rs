//! What a subscriber asks for: its resync period and its lag policy.

use std::time::Duration;

/// What a slow subscriber's queue does while it falls behind.
///
/// See the [module docs](crate::dispatch#lagging) for how each policy affects
/// the other subscribers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lag {
    /// Queue every notification, however many (client-go's behaviour). A
    /// stalled subscriber grows its own queue and slows nobody else.
    #[default]
    Unbounded,
    /// Queue at most this many live notifications; when the queue is full the
    /// distributor waits for this subscriber, which delays every subscriber of
    /// the informer. A late subscriber's replay is queued whole regardless.
    /// `Bounded(0)` behaves as `Bounded(1)`.
    Bounded(usize),
    /// While the subscriber lags keep only the newest state per key, in the
    /// order keys first became pending. Its queue holds at most two
    /// notifications per key, and the final state of every key is always
    /// delivered. An `Added` followed by a `Deleted` that were both still
    /// queued cancel out: the subscriber never hears of that object.
    Coalesce,
}

/// Options of one subscription.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::dispatch::{Lag, SubscribeOptions};
///
/// let options = SubscribeOptions::default()
///     .resync(Duration::from_secs(30))
///     .lag(Lag::Coalesce);
/// assert_eq!(options.resync, Duration::from_secs(30));
/// assert_eq!(options.lag, Lag::Coalesce);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SubscribeOptions {
    /// The resync period asked for, set with
    /// [`resync`](SubscribeOptions::resync); zero means never.
    pub resync: Duration,
    /// The lag policy asked for, set with [`lag`](SubscribeOptions::lag).
    pub lag: Lag,
    /// The subscriber's name in metrics, set with
    /// [`name`](SubscribeOptions::name).
    pub name: Option<&'static str>,
}

/// `SubscribeOptions::default()`: no resync, [`Lag::Unbounded`], no name.
impl SubscribeOptions {
    /// Asks for a resync of the whole cache every `period` (zero, the
    /// default, means never). Periods under one second are raised to one
    /// second; the informer's resync check period may raise it further (L3).
    ///
    /// A period too long to add to the clock (up to `Duration::MAX`) means
    /// never (L3); it never panics.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Sets the lag policy.
    #[must_use]
    pub fn lag(mut self, lag: Lag) -> Self {
        self.lag = lag;
        self
    }

    /// Names the subscriber in its [`stats`](crate::Subscription::stats)
    /// and in the `subscriber` label of its metrics; without a name an
    /// informer's subscription is named by its index (`"0"`, `"1"`, …).
    /// Keep names few and fixed (one per handler, not per object): each is
    /// a metric label value.
    ///
    /// ```
    /// use kube_informer::dispatch::SubscribeOptions;
    ///
    /// let options = SubscribeOptions::default().name("audit-log");
    /// assert_eq!(options.name, Some("audit-log"));
    /// ```
    #[must_use]
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }
}
