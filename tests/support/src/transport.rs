//! An in-process client: a `kube::Client` whose requests go straight to the
//! server's router as function calls, with no socket in between.
//!
//! Over TCP the order in which the OS delivers bytes and wakes the runtime
//! decides which of two concurrent requests the server sees first. In
//! process, every step is a task on the caller's runtime, so on a
//! `current_thread` runtime with a paused clock the interleaving depends
//! only on the program (what a [`Simulation`](crate::Simulation) relies on).

use std::sync::Arc;

use crate::{FakeApiServer, http};

impl FakeApiServer {
    /// A `kube::Client` that calls this server's request handler directly,
    /// in process: no TCP connection, no OS scheduling, and every answer
    /// the same as over [`client`](Self::client) (default namespace
    /// `default`, no retries of its own). Its requests are served on the
    /// runtime of the task that sends them, and a response body is produced
    /// as the client reads it: a watch "from now" (resourceVersion `""` or
    /// `"0"`) takes its starting state when the client first reads its
    /// body, not when the request arrived.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::{Api, ListParams};
    /// use kube_informer_testing::FakeApiServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube::Error> {
    /// let server = FakeApiServer::start().await;
    /// let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    /// assert!(api.list(&ListParams::default()).await?.items.is_empty());
    /// assert_eq!(server.requests().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn in_process_client(&self) -> kube::Client {
        let router = axum::Router::new()
            .fallback(http::handle)
            .with_state(Arc::clone(&self.shared));
        kube::Client::new(router, "default")
    }
}
