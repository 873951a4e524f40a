//! The operator's `/metrics` endpoint: a small axum server that encodes a
//! `prometheus-client` registry on every request, in the Prometheus text
//! format (0.0.4) that every scraper reads.
//!
//! It is off unless the operator is given an address to listen on; the
//! caller binds the listener (so a bad address fails at start-up, and tests
//! can bind port 0) and cancels `shutdown` to stop it.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use prometheus_client::{encoding::prometheus_text, registry::Registry};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The content type of the Prometheus text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How long a shutdown waits for the connections still open: a scrape
/// takes milliseconds, and a client that keeps its connection open past
/// this (idle, or sending nothing) does not hold the operator's exit.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves `GET /metrics` from `registry` on `listener` until `shutdown` is
/// cancelled; requests under way are finished first, for at most
/// [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry);
    let server =
        axum::serve(listener, app).with_graceful_shutdown(shutdown.clone().cancelled_owned());
    tokio::select! {
        served = server => served,
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

async fn metrics(State(registry): State<Arc<Registry>>) -> Response {
    let mut body = String::new();
    match prometheus_text::encode(&mut body, &registry) {
        Ok(()) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        // Only a collector's own formatting error gets here.
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
