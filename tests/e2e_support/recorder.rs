//! Records what a subscriber receives and folds it into the state it
//! implies, so tests can compare a subscriber's view with the server's.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use futures::StreamExt;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use kube_informer::{Notification, Store, Subscription};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A state as tests compare it: object name → resourceVersion.
pub type Folded = BTreeMap<String, String>;

fn name_and_rv<K: Resource>(object: &K) -> (String, String) {
    (
        object.name_any(),
        object.resource_version().unwrap_or_default(),
    )
}

/// The state a subscriber believes in after `notifications`: every add and
/// update sets the key's resourceVersion, every delete removes the key.
pub fn fold<K: Resource>(notifications: &[Notification<K>]) -> Folded {
    let mut state = Folded::new();
    for notification in notifications {
        let (name, rv) = name_and_rv(notification.object().as_ref());
        match notification {
            Notification::Added { .. } | Notification::Updated { .. } => {
                state.insert(name, rv);
            }
            Notification::Deleted { .. } => {
                state.remove(&name);
            }
        }
    }
    state
}

/// What the server holds now (a consistent list, all pages).
pub async fn server_state<K>(api: &Api<K>) -> Result<Folded>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let mut state = Folded::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        state.extend(page.items.iter().map(name_and_rv));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(state),
        }
    }
}

/// Waits (at most `limit`) until a list with resourceVersion "0", which
/// the kube-apiserver answers from its watch cache without waiting for it to
/// catch up with etcd, shows `expected`. An informer's first list is such a
/// list (R1), so a test that has just written objects calls this before
/// asserting that a freshly synced store equals the server.
pub async fn wait_until_cached<K>(api: &Api<K>, expected: &Folded, limit: Duration) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let deadline = tokio::time::Instant::now() + limit;
    let mut retry = tokio::time::interval(Duration::from_millis(50));
    loop {
        retry.tick().await;
        let cached: Folded = api
            .list(&ListParams::default().match_any())
            .await?
            .items
            .iter()
            .map(name_and_rv)
            .collect();
        if cached == *expected {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("the watch cache did not catch up within {limit:?}");
        }
    }
}

/// A one-line description of each notification (name and resourceVersions),
/// for failure messages that stay readable.
pub fn describe<'a, K: Resource + 'a>(
    notifications: impl IntoIterator<Item = &'a Notification<K>>,
) -> String {
    let lines: Vec<String> = notifications
        .into_iter()
        .map(|n| match n {
            Notification::Added {
                object,
                in_initial_list,
            } => format!(
                "added {}@{} initial={in_initial_list}",
                object.name_any(),
                object.resource_version().unwrap_or_default()
            ),
            Notification::Updated { old, new, resync } => format!(
                "updated {}@{}->{} resync={resync}",
                new.name_any(),
                old.resource_version().unwrap_or_default(),
                new.resource_version().unwrap_or_default()
            ),
            Notification::Deleted {
                object,
                final_state_unknown,
            } => format!(
                "deleted {}@{} unknown={final_state_unknown}",
                object.name_any(),
                object.resource_version().unwrap_or_default()
            ),
        })
        .collect();
    format!("[{}]", lines.join(", "))
}

/// What an informer's store holds now.
pub fn store_state<K: Resource>(store: &Store<K>) -> Folded {
    store
        .list()
        .iter()
        .map(|o| name_and_rv(o.as_ref()))
        .collect()
}

/// Drains a [`Subscription`] on its own task and keeps every notification.
pub struct Recorder<K> {
    log: Arc<Mutex<Vec<Notification<K>>>>,
    /// Bumped after every recorded notification; closed when the
    /// subscription ends.
    changed: watch::Receiver<usize>,
    task: JoinHandle<()>,
}

impl<K> Recorder<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// Starts draining `subscription`.
    pub fn start(mut subscription: Subscription<K>) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (bump, changed) = watch::channel(0);
        let sink = Arc::clone(&log);
        let task = tokio::spawn(async move {
            while let Some(notification) = subscription.next().await {
                let len = {
                    let mut log = sink.lock().unwrap();
                    log.push(notification);
                    log.len()
                };
                bump.send_replace(len);
            }
        });
        Recorder { log, changed, task }
    }

    /// Everything received so far.
    pub fn notifications(&self) -> Vec<Notification<K>> {
        self.log.lock().unwrap().clone()
    }

    /// How many notifications were received so far.
    pub fn len(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// The state this subscriber believes in now.
    pub fn folded(&self) -> Folded {
        fold(&self.log.lock().unwrap())
    }

    /// Waits until `check` finds what it looks for in the notifications
    /// received so far (re-checked after each new one), at most `limit`.
    pub async fn wait_for<T>(
        &self,
        limit: Duration,
        what: &str,
        mut check: impl FnMut(&[Notification<K>]) -> Option<T>,
    ) -> Result<T> {
        let mut changed = self.changed.clone();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            changed.borrow_and_update();
            if let Some(found) = check(&self.log.lock().unwrap()) {
                return Ok(found);
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    if let Some(found) = check(&self.log.lock().unwrap()) {
                        return Ok(found);
                    }
                    bail!(
                        "{what}: the subscription ended first ({} notifications)",
                        self.len()
                    );
                }
                Err(_) => bail!(
                    "{what}: not within {limit:?} ({} notifications received)",
                    self.len()
                ),
            }
        }
    }

    /// Waits until this subscriber's folded view equals `expected`.
    pub async fn wait_for_state(
        &self,
        limit: Duration,
        what: &str,
        expected: &Folded,
    ) -> Result<()> {
        let outcome = self
            .wait_for(limit, what, |log| (fold(log) == *expected).then_some(()))
            .await;
        if outcome.is_err() {
            let folded = self.folded();
            let missing: Vec<_> = expected
                .iter()
                .filter(|(k, v)| folded.get(*k) != Some(v))
                .collect();
            let extra: Vec<_> = folded
                .iter()
                .filter(|(k, _)| !expected.contains_key(*k))
                .collect();
            bail!(
                "{what}: folded view differs from the server after {limit:?}: \
                 missing or stale {missing:?}, extra {extra:?}"
            );
        }
        outcome
    }
}

impl<K> Drop for Recorder<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}
