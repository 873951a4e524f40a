//! Rate limiters for [`WorkQueue::add_rate_limited`](super::WorkQueue::add_rate_limited)
//! (W7, W8).

use std::{fmt, hash::Hash, time::Duration};

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::hash::KeyMap;

/// Decides how long an item waits before it is queued again after a failure.
///
/// The limiters client-go offers are functions that return one:
/// [`item_exponential`], [`token_bucket`], [`max_of`] and
/// [`default_rate_limiter`]. Implement the trait for a limiter of your own.
///
/// A [`WorkQueue`](super::WorkQueue) calls [`when`](RateLimiter::when) on every
/// [`add_rate_limited`](super::WorkQueue::add_rate_limited),
/// [`forget`](RateLimiter::forget) on [`forget`](super::WorkQueue::forget) and
/// [`requeues`](RateLimiter::requeues) on
/// [`requeues`](super::WorkQueue::requeues). Implementations keep their own
/// state behind their own lock; the queue never holds its lock while calling
/// them.
///
/// # Examples
///
/// A limiter that always waits one second:
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{QueueConfig, RateLimiter, WorkQueue};
///
/// struct OneSecond;
/// impl<T> RateLimiter<T> for OneSecond {
///     fn when(&self, _: &T) -> Duration { Duration::from_secs(1) }
///     fn forget(&self, _: &T) {}
///     fn requeues(&self, _: &T) -> usize { 0 }
/// }
/// let queue: WorkQueue<&str> = WorkQueue::with_config(QueueConfig::default(), OneSecond);
/// # let _ = queue;
/// ```
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` waits this time; records the failure.
    fn when(&self, item: &T) -> Duration;
    /// Drops what the limiter remembers about `item` (it succeeded).
    fn forget(&self, item: &T);
    /// How many failures of `item` the limiter remembers.
    fn requeues(&self, item: &T) -> usize;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn requeues(&self, item: &T) -> usize {
        (**self).requeues(item)
    }
}

/// Per-item exponential backoff: the n-th failure since the last
/// [`forget`](RateLimiter::forget) waits `base × 2ⁿ`, at most `max`
/// (client-go's `NewItemExponentialFailureRateLimiter`).
///
/// Remembers one counter per item that failed and was not forgotten.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{RateLimiter, item_exponential};
///
/// let limiter = item_exponential(Duration::from_millis(5), Duration::from_secs(1000));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.requeues(&"a"), 2);
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
pub fn item_exponential<T: Hash + Eq + Clone + Send>(
    base: Duration,
    max: Duration,
) -> impl RateLimiter<T> + fmt::Debug {
    ItemExponential {
        base,
        max,
        failures: Mutex::new(KeyMap::default()),
    }
}

/// The limiter [`item_exponential`] returns.
struct ItemExponential<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<KeyMap<T, u32>>,
}

impl<T> fmt::Debug for ItemExponential<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponential")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("items", &self.failures.lock().len())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ItemExponential<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            let count = failures.entry(item.clone()).or_insert(0);
            let exp = *count;
            *count = count.saturating_add(1);
            exp
        };
        // Computed in floating point as client-go does, so a huge exponent
        // saturates to `max` instead of overflowing.
        let backoff = self.base.as_nanos() as f64 * 2f64.powf(f64::from(exp));
        if backoff >= self.max.as_nanos() as f64 {
            self.max
        } else {
            Duration::from_nanos(backoff as u64)
        }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn requeues(&self, item: &T) -> usize {
        self.failures.lock().get(item).map_or(0, |n| *n as usize)
    }
}

/// An overall token bucket shared by all items: `rate` tokens per second, at
/// most `burst` saved up, full at first; each call takes a token and waits
/// until it exists (client-go's `BucketRateLimiter` over
/// `golang.org/x/time/rate`). Runs on tokio's clock. It remembers nothing
/// per item: `forget` does nothing and `requeues` is 0.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{RateLimiter, token_bucket};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let bucket = token_bucket(10.0, 2);
/// assert_eq!(bucket.when(&"a"), Duration::ZERO);
/// assert_eq!(bucket.when(&"b"), Duration::ZERO);
/// assert_eq!(bucket.when(&"c"), Duration::from_millis(100));
/// # }
/// ```
pub fn token_bucket<T>(rate: f64, burst: u32) -> impl RateLimiter<T> + fmt::Debug {
    TokenBucket::new(rate, burst)
}

/// The limiter [`token_bucket`] returns.
#[derive(Debug)]
struct TokenBucket {
    rate: f64,
    burst: f64,
    bucket: Mutex<Option<Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64, burst: u32) -> Self {
        Self {
            rate,
            burst: f64::from(burst),
            bucket: Mutex::new(None),
        }
    }
}

impl<T> RateLimiter<T> for TokenBucket {
    fn when(&self, _: &T) -> Duration {
        let now = Instant::now();
        let mut bucket = self.bucket.lock();
        let bucket = bucket.get_or_insert(Bucket {
            tokens: self.burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
        bucket.last = now;
        bucket.tokens -= 1.0;
        if bucket.tokens >= 0.0 || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-bucket.tokens / self.rate)
        }
    }

    fn forget(&self, _: &T) {}

    fn requeues(&self, _: &T) -> usize {
        0
    }
}

/// The longest wait of several limiters; `requeues` is their largest count
/// and `forget` reaches them all (client-go's `NewMaxOfRateLimiter`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{RateLimiter, item_exponential, max_of, token_bucket};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = max_of(vec![
///     Box::new(item_exponential(Duration::from_millis(5), Duration::from_secs(60))),
///     Box::new(token_bucket(1.0, 1)),
/// ]);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"b"), Duration::from_secs(1));
/// # }
/// ```
pub fn max_of<T>(limiters: Vec<Box<dyn RateLimiter<T>>>) -> impl RateLimiter<T> + fmt::Debug {
    MaxOf { limiters }
}

/// The limiter [`max_of`] and [`default_rate_limiter`] return.
struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter records the failure, as in client-go.
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        self.limiters.iter().for_each(|l| l.forget(item));
    }

    fn requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|l| l.requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultTypedControllerRateLimiter`, the limiter of
/// [`WorkQueue::new`](super::WorkQueue::new): the larger of a per-item
/// exponential backoff from 5 ms doubling up to 1,000 s and an overall token
/// bucket of 10 per second with a burst of 100 (W8).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer::queue::{RateLimiter, default_rate_limiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = default_rate_limiter::<&str>();
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// # }
/// ```
pub fn default_rate_limiter<T: Hash + Eq + Clone + Send + 'static>()
-> impl RateLimiter<T> + fmt::Debug {
    max_of(vec![
        Box::new(item_exponential(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(token_bucket(10.0, 100)),
    ])
}
