//! Helpers shared by the end-to-end tests (`tests/e2e*.rs`), which run against
//! the real etcd and kube-apiserver that `e2e/cluster.sh up` starts.
//!
//! Every test begins with [`Cluster::from_env`]: when the harness's
//! environment is not set it prints why the test is skipped and returns
//! `None`, so `cargo test` on a machine without the servers still passes and
//! says so.
//!
//! The e2e tests are the modules of one binary (`tests/e2e.rs`);
//! scripts/suites/e2e.sh runs one module at a time, its tests in parallel. Ones that take the main
//! kube-apiserver down hold [`Cluster::exclusive`]; all others hold
//! [`Cluster::shared`], so no test sees a restart it did not ask for.

// Each tests/e2e*.rs uses only some of these helpers.
#![allow(dead_code)]

pub mod informer;
mod proxy;
mod recorder;

// Not every build of the binary uses every helper.
#[allow(unused_imports)]
pub use proxy::PausableProxy;
#[allow(unused_imports)]
pub use recorder::{
    Folded, Recorder, describe, fold, server_state, store_state, wait_until_cached,
};

use std::env;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::process::Command;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The variable that `e2e/cluster.sh` sets to the admin kubeconfig; its
/// absence means "no real cluster here".
pub const KUBECONFIG_VAR: &str = "KUBE_INFORMER_E2E_KUBECONFIG";

/// Field manager recorded on everything the tests write.
const FIELD_MANAGER: &str = "kube-informer-e2e";

/// Orders disruptive tests (apiserver restarts) against all the others.
static DISRUPTION: RwLock<()> = RwLock::const_new(());

/// The running harness, as described by the environment of `e2e/cluster.sh`.
#[derive(Debug, Clone)]
pub struct Cluster {
    admin_kubeconfig: PathBuf,
    norights_kubeconfig: PathBuf,
    nocache_kubeconfig: Option<PathBuf>,
    cluster_script: PathBuf,
    /// etcd's client URL, e.g. `http://127.0.0.1:23790`.
    pub etcd_endpoint: String,
}

impl Cluster {
    /// Reads the harness's environment, or prints why `test` is skipped and
    /// returns `None` when [`KUBECONFIG_VAR`] is unset.
    pub fn from_env(test: &str) -> Option<Self> {
        let Some(admin) = env::var_os(KUBECONFIG_VAR) else {
            // Written to the real stderr, past the test harness's capture,
            // so a run without the cluster says plainly what it skipped.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {KUBECONFIG_VAR} is not set; start a real cluster with \
                 `bash e2e/cluster.sh up` and source its env file, or run \
                 `bash scripts/suites/e2e.sh`"
            );
            return None;
        };
        let var = |name: &str| env::var_os(name).map(PathBuf::from);
        let script = var("KUBE_INFORMER_E2E_CLUSTER_SCRIPT")
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("e2e/cluster.sh"));
        Some(Cluster {
            admin_kubeconfig: PathBuf::from(admin),
            norights_kubeconfig: var("KUBE_INFORMER_E2E_NORIGHTS_KUBECONFIG")
                .expect("KUBE_INFORMER_E2E_NORIGHTS_KUBECONFIG is set with the admin kubeconfig"),
            nocache_kubeconfig: var("KUBE_INFORMER_E2E_NOCACHE_KUBECONFIG"),
            cluster_script: script,
            etcd_endpoint: env::var("KUBE_INFORMER_E2E_ETCD_ENDPOINTS").unwrap_or_default(),
        })
    }

    /// A client acting as the admin (`system:masters`).
    pub async fn admin_client(&self) -> Result<Client> {
        client_from_kubeconfig(&self.admin_kubeconfig).await
    }

    /// A client whose identity is authenticated but has no RBAC rights.
    pub async fn norights_client(&self) -> Result<Client> {
        client_from_kubeconfig(&self.norights_kubeconfig).await
    }

    /// An admin client talking to the second kube-apiserver, which has its
    /// watch cache disabled: a watch from a compacted resourceVersion gets
    /// 410 Gone there. `None` when the harness was started without it.
    pub async fn nocache_client(&self) -> Result<Option<Client>> {
        match &self.nocache_kubeconfig {
            Some(path) => client_from_kubeconfig(path).await.map(Some),
            None => Ok(None),
        }
    }

    /// The address the watch-cache-less kube-apiserver listens on, for a
    /// [`PausableProxy`] in front of it; `None` when the harness runs
    /// without it.
    pub fn nocache_address(&self) -> Result<Option<std::net::SocketAddr>> {
        let Some(path) = &self.nocache_kubeconfig else {
            return Ok(None);
        };
        let kubeconfig = Kubeconfig::read_from(path)?;
        let server = kubeconfig
            .clusters
            .first()
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.server.clone())
            .context("the kubeconfig names a server")?;
        let uri: http::Uri = server.parse()?;
        let authority = uri.authority().context("the server URL has a host")?;
        Ok(Some(authority.as_str().parse()?))
    }

    /// An admin client of the watch-cache-less kube-apiserver that connects
    /// to `server_url` instead (a [`PausableProxy`] in front of it; the
    /// serving certificate is for 127.0.0.1, so the proxy must listen
    /// there). `None` when the harness runs without that apiserver.
    pub async fn nocache_client_via(&self, server_url: &str) -> Result<Option<Client>> {
        let Some(path) = &self.nocache_kubeconfig else {
            return Ok(None);
        };
        let mut kubeconfig = Kubeconfig::read_from(path)?;
        for named in &mut kubeconfig.clusters {
            if let Some(cluster) = &mut named.cluster {
                cluster.server = Some(server_url.to_owned());
            }
        }
        let config =
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(Some(Client::try_from(config)?))
    }

    /// Held by every test that needs the main kube-apiserver to stay up.
    pub async fn shared(&self) -> RwLockReadGuard<'static, ()> {
        DISRUPTION.read().await
    }

    /// Held by a test that restarts the main kube-apiserver.
    pub async fn exclusive(&self) -> RwLockWriteGuard<'static, ()> {
        DISRUPTION.write().await
    }

    /// Stops the main kube-apiserver (SIGKILL when `kill`, else SIGTERM),
    /// keeps it down for `down_for`, starts it again on the same port and
    /// waits until it is ready. Hold [`Cluster::exclusive`] around it.
    pub async fn restart_apiserver(&self, kill: bool, down_for: Duration) -> Result<()> {
        let mut args = vec!["restart-apiserver".to_owned()];
        if kill {
            args.push("--kill".into());
        }
        args.extend([
            "--down-for".into(),
            format!("{:.1}", down_for.as_secs_f64()),
        ]);
        self.script(&args).await.map(drop)
    }

    /// etcd's current revision (what a resourceVersion is made of).
    pub async fn etcd_revision(&self) -> Result<u64> {
        let out = self.script(&["revision".to_owned()]).await?;
        out.trim()
            .parse()
            .with_context(|| format!("etcd revision {out:?}"))
    }

    /// Compacts etcd at its current revision `r` and returns `r`: revisions
    /// below `r` are gone. A watch from resourceVersion `v` starts at `v + 1`,
    /// so it gets 410 Gone (where it reaches etcd) only when `v + 1 < r`.
    pub async fn compact_etcd(&self) -> Result<u64> {
        let out = self.script(&["compact".to_owned()]).await?;
        out.trim()
            .parse()
            .with_context(|| format!("compacted revision {out:?}"))
    }

    async fn script(&self, args: &[String]) -> Result<String> {
        let output = Command::new("bash")
            .arg(&self.cluster_script)
            .args(args)
            .output()
            .await
            .with_context(|| format!("running {}", self.cluster_script.display()))?;
        ensure!(
            output.status.success(),
            "cluster.sh {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?)
    }
}

/// How a test shares the main kube-apiserver with the other tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// It needs the apiserver up ([`Cluster::shared`]).
    Shared,
    /// It stops or restarts an apiserver ([`Cluster::exclusive`]).
    Exclusive,
}

/// A test's hold on the apiservers, released when dropped.
#[derive(Debug)]
pub enum Hold {
    /// See [`Access::Shared`].
    Shared(RwLockReadGuard<'static, ()>),
    /// See [`Access::Exclusive`].
    Exclusive(RwLockWriteGuard<'static, ()>),
}

/// What most tests start from: the harness, their hold on it, an admin
/// client and a namespace of their own. Bind `_hold` by name so the hold
/// lasts until the end of the test.
pub struct Scene {
    /// The harness.
    pub cluster: Cluster,
    /// An admin client.
    pub client: Client,
    /// A fresh namespace named after the test.
    pub ns: TestNamespace,
    /// Keeps the test's [`Access`] until dropped.
    pub _hold: Hold,
}

impl Scene {
    /// Sets up `test`, or returns `None` (saying why on stderr) when the
    /// harness is not running.
    pub async fn start(test: &str, access: Access) -> Result<Option<Scene>> {
        let Some(cluster) = Cluster::from_env(test) else {
            return Ok(None);
        };
        let _hold = match access {
            Access::Shared => Hold::Shared(cluster.shared().await),
            Access::Exclusive => Hold::Exclusive(cluster.exclusive().await),
        };
        let client = cluster.admin_client().await?;
        let ns = TestNamespace::create(&client, test.trim_start_matches("e2e_")).await?;
        Ok(Some(Scene {
            cluster,
            client,
            ns,
            _hold,
        }))
    }
}

/// Builds a client from a kubeconfig file (its current context).
pub async fn client_from_kubeconfig(path: &std::path::Path) -> Result<Client> {
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// A namespace made for one test, named after it and unique per run.
///
/// No kube-controller-manager runs in the harness, so a deleted namespace
/// stays `Terminating` with its contents; [`TestNamespace::delete`] empties it
/// of ConfigMaps first so the tests leave little behind.
pub struct TestNamespace {
    /// The namespace's name.
    pub name: String,
    client: Client,
}

impl TestNamespace {
    /// Creates `kie2e-<test>-<pid>-<n>` (cut to a valid name).
    pub async fn create(client: &Client, test: &str) -> Result<Self> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let slug: String = test
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let name = format!(
            "kie2e-{}-{}-{n}",
            slug.trim_matches('-'),
            std::process::id()
        );
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&post_params(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(TestNamespace {
            name,
            client: client.clone(),
        })
    }

    /// ConfigMaps in this namespace.
    pub fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Deletes the ConfigMaps in the namespace, then the namespace.
    pub async fn delete(self) -> Result<()> {
        self.configmaps()
            .delete_collection(&DeleteParams::default(), &Default::default())
            .await?;
        Api::<Namespace>::all(self.client.clone())
            .delete(&self.name, &DeleteParams::default())
            .await?;
        Ok(())
    }
}

impl std::fmt::Debug for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNamespace")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// `PostParams` naming the tests' field manager.
pub fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

/// A ConfigMap named `name` holding `data` under the key `value`.
pub fn configmap(name: &str, data: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some([("value".to_owned(), data.to_owned())].into()),
        ..Default::default()
    }
}

/// Creates `count` ConfigMaps named `<prefix>-00000`, `<prefix>-00001`, ...
/// with at most `concurrency` requests in flight; returns them as created
/// (in name order).
pub async fn create_configmaps(
    api: &Api<ConfigMap>,
    prefix: &str,
    count: usize,
    concurrency: usize,
) -> Result<Vec<ConfigMap>> {
    if concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    let params = post_params();
    let mut created: Vec<ConfigMap> = stream::iter(0..count)
        .map(|i| {
            let (api, params) = (api.clone(), &params);
            async move {
                let name = format!("{prefix}-{i:05}");
                api.create(params, &configmap(&name, &i.to_string()))
                    .await
                    .with_context(|| format!("creating configmap {name}"))
            }
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    created.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(created)
}

/// The HTTP status code of an API error (403, 409, 410...), `None` for
/// success or for an error that never reached the API server.
pub fn api_error_code<T>(result: &kube::Result<T>) -> Option<u16> {
    match result {
        Err(kube::Error::Api(status)) => Some(status.code),
        _ => None,
    }
}

/// Bounds a network step so that a hung server fails the test instead of
/// hanging CI; `what` names the step in the error.
pub async fn within<T>(
    limit: Duration,
    what: &str,
    step: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(limit, step)
        .await
        .with_context(|| format!("{what}: no answer within {limit:?}"))?
}
