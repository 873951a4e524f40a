//! A TCP proxy in front of a kube-apiserver that a test can pause in one
//! direction: while paused, bytes from the client are held (connections,
//! old and new, stay open) and bytes from the server still flow. A watch
//! that was open goes on to its end; the client's next request is then held
//! and the test knows exactly when one is waiting.
//!
//! Cutting connections instead would leave it to the HTTP client's
//! connection pool whether the next request is a watch on a dead pooled
//! connection, a relist, or a request on a fresh connection.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, tcp::OwnedReadHalf, tcp::OwnedWriteHalf};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::within;

/// A TCP proxy on 127.0.0.1 whose client-to-server direction can be paused
/// (see the module docs).
pub struct PausableProxy {
    addr: SocketAddr,
    /// `true` while paused.
    paused: watch::Sender<bool>,
    /// Bytes from clients received while paused and not yet forwarded.
    held: watch::Sender<usize>,
    /// Ends the accept loop and every connection when the proxy is dropped.
    stop: CancellationToken,
}

impl PausableProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (paused, _) = watch::channel(false);
        let (held, _) = watch::channel(0);
        let stop = CancellationToken::new();
        let (paused_rx, held_tx, stop_accept) = (paused.subscribe(), held.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let inbound = tokio::select! {
                    () = stop_accept.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((inbound, _)) => inbound,
                        Err(_) => return,
                    },
                };
                let connection = forward(inbound, upstream, paused_rx.clone(), held_tx.clone());
                let stop = stop_accept.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = stop.cancelled() => {}
                        _ = connection => {}
                    }
                });
            }
        });
        Ok(Self {
            addr,
            paused,
            held,
            stop,
        })
    }

    /// `https://127.0.0.1:<port>` of the proxy.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Holds every byte clients send from now on, until [`resume`](Self::resume).
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    /// Forwards what was held, and everything after.
    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// Waits (at most `limit`) until a client has sent something that is
    /// being held: its next request.
    pub async fn wait_for_held(&self, limit: Duration) -> Result<()> {
        let mut held = self.held.subscribe();
        within(limit, "a held request", async {
            held.wait_for(|n| *n > 0).await.context("proxy gone")?;
            Ok(())
        })
        .await
    }
}

impl Drop for PausableProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One connection, piped both ways until either side closes.
async fn forward(
    inbound: TcpStream,
    upstream: SocketAddr,
    paused: watch::Receiver<bool>,
    held: watch::Sender<usize>,
) -> Result<()> {
    let outbound = TcpStream::connect(upstream).await?;
    let (mut from_client, mut to_client) = inbound.into_split();
    let (from_server, to_server) = outbound.into_split();
    let upstream_bound = client_to_server(&mut from_client, to_server, paused, held);
    let downstream_bound = server_to_client(from_server, &mut to_client);
    tokio::try_join!(upstream_bound, downstream_bound)?;
    Ok(())
}

/// Copies client bytes to the server, holding them while paused.
async fn client_to_server(
    from_client: &mut OwnedReadHalf,
    mut to_server: OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
    held: watch::Sender<usize>,
) -> Result<()> {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let n = from_client.read(&mut buffer).await?;
        if n == 0 {
            to_server.shutdown().await?;
            return Ok(());
        }
        if *paused.borrow_and_update() {
            held.send_modify(|h| *h += n);
            let resumed = paused.wait_for(|p| !*p).await.is_ok();
            held.send_modify(|h| *h -= n);
            if !resumed {
                return Ok(());
            }
        }
        to_server.write_all(&buffer[..n]).await?;
    }
}

/// Copies server bytes to the client, never held.
async fn server_to_client(
    mut from_server: OwnedReadHalf,
    to_client: &mut OwnedWriteHalf,
) -> Result<()> {
    tokio::io::copy(&mut from_server, to_client).await?;
    to_client.shutdown().await?;
    Ok(())
}
