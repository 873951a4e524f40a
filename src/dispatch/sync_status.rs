//! [`SyncStatus`]: whether one subscription has synced (L2), readable and
//! awaitable from tasks other than the one consuming it.

use std::{
    fmt,
    future::Future,
    pin::Pin,
    sync::{Arc, Weak},
};

use super::channel::{Channel, Phase};
use crate::{resource::WatchedResource, sync_error::SyncError};

/// The feeding informer's own wait for its first sync, which a
/// subscription's wait goes through first, so it answers with the
/// informer's refusals (I7) and names the informer's resource.
pub(crate) trait UpstreamSync: Send + Sync {
    /// The informer's wait (I6, I7, I9).
    fn wait_until_synced(
        self: Arc<Self>,
    ) -> Pin<Box<dyn Future<Output = Result<(), SyncError>> + Send + 'static>>;

    /// What the informer watches.
    fn resource(&self) -> WatchedResource;
}

/// A subscription's link to its informer's wait: weak, so a sync status
/// kept by another task does not keep the informer's cache in memory.
pub(super) type Upstream = Option<Weak<dyn UpstreamSync>>;

/// A clonable view of one [`Subscription`](super::Subscription)'s sync state
/// (L2), for tasks other than the one consuming it.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, dispatch::SubscribeOptions, source::Event};
///
/// # fn cm(name: &str) -> ConfigMap {
/// #     let mut c = ConfigMap::default();
/// #     c.metadata.name = Some(name.into());
/// #     c.metadata.namespace = Some("default".into());
/// #     c.metadata.resource_version = Some("1".into());
/// #     c
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let events = futures::stream::iter([
///     Ok::<_, std::io::Error>(Event::ListStart),
///     Ok(Event::Listed(cm("a"))),
///     Ok(Event::ListDone { resource_version: "1".into() }),
/// ]);
/// let informer = Informer::builder_from_stream(events).build();
/// let mut sub = informer.subscribe(SubscribeOptions::default())?;
/// let status = sub.sync_status();
/// // Another task waits while this one consumes the stream.
/// let waiter = tokio::spawn(async move { status.wait_until_synced().await });
/// informer.run().await?;
/// while sub.next().await.is_some() {}
/// assert!(waiter.await?.is_ok());
/// # Ok(()) }
/// ```
pub struct SyncStatus<K> {
    channel: Arc<Channel<K>>,
    upstream: Upstream,
}

impl<K> SyncStatus<K> {
    pub(super) fn new(channel: Arc<Channel<K>>, upstream: Upstream) -> Self {
        Self { channel, upstream }
    }

    /// Whether the informer has synced and the subscriber has been yielded
    /// every initial-list item queued for it (L2).
    pub fn has_synced(&self) -> bool {
        sync_state(&self.channel) == SyncState::Synced
    }

    /// Waits until [`has_synced`](Self::has_synced): the informer has
    /// synced and the subscriber has been yielded every initial-list item
    /// queued for it (L2). It answers as its informer's
    /// [`wait_until_synced`](crate::Informer::wait_until_synced) does while
    /// the informer has not synced (a refusal, I7, or
    /// [`SyncError::Stopped`], I9), then waits for this subscriber's
    /// initial list; [`SyncError::Stopped`] also if the subscription ended
    /// (refused, or the informer stopped) before it could sync. It has no
    /// deadline of its own (I12): wrap it in [`tokio::time::timeout`] for
    /// one. Cancel-safe.
    ///
    /// Items count as delivered when the subscription yields them, so await
    /// this on another task than the one that polls the subscription.
    pub async fn wait_until_synced(&self) -> Result<(), SyncError> {
        wait_until_synced(&self.channel, &self.upstream).await
    }
}

impl<K> Clone for SyncStatus<K> {
    fn clone(&self) -> Self {
        Self {
            channel: Arc::clone(&self.channel),
            upstream: self.upstream.clone(),
        }
    }
}

impl<K> fmt::Debug for SyncStatus<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncStatus")
            .field("synced", &self.has_synced())
            .finish()
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum SyncState {
    Synced,
    Waiting,
    /// It cannot sync any more: refused, dropped, or closed before upstream
    /// synced.
    Never,
}

pub(super) fn sync_state<K>(channel: &Channel<K>) -> SyncState {
    let state = channel.state.lock();
    let upstream = state.upstream_synced();
    match state.phase {
        Phase::Refused => SyncState::Never,
        _ if state.receiver_dropped && !upstream => SyncState::Never,
        Phase::Requested => SyncState::Waiting,
        _ if upstream && state.initial_pending == 0 => SyncState::Synced,
        Phase::Closed(_) if !upstream => SyncState::Never,
        Phase::Open | Phase::Closed(_) => SyncState::Waiting,
    }
}

/// A subscriber's wait (L2): the informer's first (its refusals and its
/// stop are the answer), then this subscriber's initial list.
pub(super) async fn wait_until_synced<K>(
    channel: &Channel<K>,
    upstream: &Upstream,
) -> Result<(), SyncError> {
    let upstream = upstream.as_ref().and_then(Weak::upgrade);
    let resource = match upstream {
        Some(upstream) => {
            let resource = upstream.resource();
            upstream.wait_until_synced().await?;
            resource
        }
        None => WatchedResource::of_type::<K>(),
    };
    if subscriber_synced(channel).await {
        Ok(())
    } else {
        Err(SyncError::Stopped { resource })
    }
}

/// Whether this subscriber synced (L2): `false` once it cannot any more.
async fn subscriber_synced<K>(channel: &Channel<K>) -> bool {
    // The feeding informer's end, observed once: a running informer closes
    // the channel itself (which wakes `changed`); one that ended without
    // running leaves that to its observers.
    let mut end = channel.life().map(|life| Box::pin(life.ended()));
    loop {
        let changed = channel.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match sync_state(channel) {
            SyncState::Synced => return true,
            SyncState::Never => return false,
            SyncState::Waiting => {}
        }
        let upstream = channel.state.lock().upstream.clone();
        let upstream_synced = async move {
            match upstream {
                // A dropped sender leaves the flag as it is; the next phase
                // change (close) wakes `changed`.
                Some(mut upstream) if !*upstream.borrow() => {
                    if upstream.wait_for(|s| *s).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                _ => std::future::pending().await,
            }
        };
        let ended = async {
            match &mut end {
                Some(ended) => ended.as_mut().await,
                None => std::future::pending().await,
            }
        };
        let ended = tokio::select! {
            biased;
            _ = changed => None,
            _ = upstream_synced => None,
            reason = ended => Some(reason),
        };
        if let Some(reason) = ended {
            end = None;
            channel.close_after_end(reason);
        }
    }
}
