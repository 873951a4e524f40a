//! The fault methods added for simulations: watch lag, write conflicts,
//! latency (FT1–FT4).

use std::time::Duration;

use super::{Answer, ConflictFault, RequestFault, RequestMatch, WriteTarget};
use crate::FakeApiServer;

impl FakeApiServer {
    /// Makes the next `times` watches matching `matcher` deliver every line
    /// `lag` after the server produced it, in order, the end of the stream
    /// included (FT1): the client sees the cluster as it was `lag` ago.
    /// `usize::MAX` lags every matching watch.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer_testing::{FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // The next watch hears of each change 3 s late.
    /// server.lag_watches(RequestMatch::Watch, Duration::from_secs(3), 1);
    /// # }
    /// ```
    pub fn lag_watches(&self, matcher: RequestMatch, lag: Duration, times: usize) {
        self.shared.faults.lock().requests.push(RequestFault {
            matcher,
            name: None,
            answer: Answer::Lag(lag),
            remaining: times,
        });
    }

    /// Lets `after_writes` writes to `target` through, then answers the next
    /// one 409 `Conflict` with the API server's message, as if another
    /// client had changed the object first; that write is not applied
    /// (FT2). Only writes to one object count (`PUT`, `PATCH`, `DELETE`).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer_testing::{FakeApiServer, RequestMatch, WriteTarget};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// // The second write to default/settings conflicts…
    /// server.inject_write_conflict(WriteTarget::object::<ConfigMap>(Some("default"), "settings"), 1);
    /// // …and so does the next update of any object.
    /// server.inject_write_conflict(RequestMatch::Update, 0);
    /// # }
    /// ```
    pub fn inject_write_conflict(&self, target: impl Into<WriteTarget>, after_writes: usize) {
        self.shared.faults.lock().conflicts.push(ConflictFault {
            target: target.into(),
            skip: after_writes,
        });
    }

    /// Delays the answer to every request matching `matcher` by `latency`
    /// from now on, failed answers included (FT3). On a paused clock this
    /// advances virtual time only. Latencies add up when several match.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer_testing::{FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// server.add_latency(RequestMatch::Write, Duration::from_millis(40));
    /// # }
    /// ```
    pub fn add_latency(&self, matcher: RequestMatch, latency: Duration) {
        self.shared.faults.lock().requests.push(RequestFault {
            matcher,
            name: None,
            answer: Answer::Delay(latency),
            remaining: usize::MAX,
        });
    }

    /// Drops every fault not yet used: failures, delays, holds, latency,
    /// lag, write conflicts, watch faults for watches not yet open, and a
    /// simulation's fault schedule (FT4). Watches already open keep what
    /// they were given.
    ///
    /// ```
    /// use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = FakeApiServer::start().await;
    /// server.fail_requests(RequestMatch::Any, ApiStatus::internal_error(), 100);
    /// server.clear_faults(); // the next request is served
    /// # }
    /// ```
    pub fn clear_faults(&self) {
        let mut faults = self.shared.faults.lock();
        faults.requests.clear();
        faults.watches.clear();
        faults.conflicts.clear();
        faults.plan = None;
    }
}
