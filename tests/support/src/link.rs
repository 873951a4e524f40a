//! [`Link`]: one client's connection to the server, which a test cuts and
//! heals, as a network partition between one replica and the API server
//! would, while the other clients go on as before.
//!
//! Rules (the tests in `tests/link.rs` name them):
//! - LK1: while a link is cut, every request sent over it is held: it
//!   neither reaches the server (it is not recorded, not applied) nor is
//!   answered. Requests of other clients are served as usual.
//! - LK2: when the link heals, the requests it held reach the server one at
//!   a time, in the order they were sent, and each is served to the end even
//!   if its client gave up waiting: a write the client abandoned still lands,
//!   late. Answers go back to the clients that still wait.
//! - LK3: [`Link::held`] lists every request the link held, in the order
//!   sent, with the status of its answer once it was delivered.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::StatusCode,
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::{FakeApiServer, http};

/// One client's connection to a [`FakeApiServer`], from
/// [`FakeApiServer::linked_client`]; cut and heal it to partition that
/// client alone. Cheap to clone; every clone is the same link.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, ListParams};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kube::Error> {
/// let server = FakeApiServer::start().await;
/// let (client, link) = server.linked_client();
/// let api: Api<ConfigMap> = Api::default_namespaced(client);
///
/// link.cut();
/// let params = ListParams::default();
/// let list = tokio::time::timeout(Duration::from_millis(50), api.list(&params)).await;
/// assert!(list.is_err(), "no answer while cut");
/// assert!(server.requests().is_empty(), "the request did not reach the server");
///
/// link.heal();
/// assert!(api.list(&ListParams::default()).await?.items.is_empty());
/// assert_eq!(link.held()[0].status, Some(200), "the abandoned list was served late");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Link {
    shared: Arc<LinkShared>,
}

#[derive(Debug)]
struct LinkShared {
    state: watch::Sender<LinkState>,
    held: Mutex<Vec<HeldRequest>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct LinkState {
    cut: bool,
    /// How many held requests have reached the server: the next one to go
    /// is the held request of this index.
    delivered: usize,
}

/// A request a cut [`Link`] held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldRequest {
    /// HTTP method, e.g. `PUT`.
    pub method: String,
    /// URL path without the query.
    pub path: String,
    /// The HTTP status of its answer once it was delivered; `None` while
    /// it is still held.
    pub status: Option<u16>,
}

impl Link {
    /// Cuts the link: from now on its requests are held (LK1).
    pub fn cut(&self) {
        self.shared.state.send_modify(|state| state.cut = true);
    }

    /// Heals the link: held requests reach the server in the order sent,
    /// and new ones go straight through (LK2).
    pub fn heal(&self) {
        self.shared.state.send_modify(|state| state.cut = false);
    }

    /// Whether the link is cut.
    pub fn is_cut(&self) -> bool {
        self.shared.state.borrow().cut
    }

    /// Every request this link held, in the order sent (LK3).
    pub fn held(&self) -> Vec<HeldRequest> {
        self.shared.held.lock().clone()
    }
}

impl FakeApiServer {
    /// An in-process client (as [`in_process_client`](Self::in_process_client))
    /// whose connection to this server is a [`Link`] the test can cut and
    /// heal.
    pub fn linked_client(&self) -> (kube::Client, Link) {
        let link = Arc::new(LinkShared {
            state: watch::Sender::new(LinkState::default()),
            held: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .fallback(http::handle)
            .with_state(Arc::clone(&self.shared))
            .layer(middleware::from_fn_with_state(Arc::clone(&link), carry));
        (kube::Client::new(router, "default"), Link { shared: link })
    }
}

/// Passes a request on, or holds it while the link is cut.
async fn carry(State(link): State<Arc<LinkShared>>, request: Request, next: Next) -> Response {
    if !link.state.borrow().cut {
        return next.run(request).await;
    }
    let turn = {
        let mut held = link.held.lock();
        held.push(HeldRequest {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            status: None,
        });
        held.len() - 1
    };
    // On a task of its own, so the request reaches the server after the
    // heal even if its client has hung up and dropped this future (LK2).
    let delivery = tokio::spawn(async move {
        let mut state = link.state.subscribe();
        // The sender lives in `link`, which this task holds.
        let _ = state
            .wait_for(|state| !state.cut && state.delivered == turn)
            .await;
        let response = next.run(request).await;
        link.held.lock()[turn].status = Some(response.status().as_u16());
        link.state.send_modify(|state| state.delivered += 1);
        response
    });
    delivery
        .await
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
