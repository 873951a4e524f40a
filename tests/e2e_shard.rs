//! Sharding end to end: replica processes of the mirror operator
//! (`examples/operator/`, sharded mode: `--shard`) share 1,000 source
//! ConfigMaps of a real kube-apiserver through Leases while the sources keep
//! changing, each mirroring the sources it owns into a target namespace;
//! one of three replicas is killed with SIGKILL, comes back as a new
//! process (as a restarted pod would), then a fourth joins.
//!
//! Each replica prints every reconcile (key, replica, start, end) and every
//! change of the keys it owns; the test reads them and checks:
//!
//! - every source's final state is reconciled, and at the end every
//!   source's copy holds the source's final data (the operator's effect);
//! - every key a replica acquires (on the kill, the restart, the join) is
//!   reconciled by it afterwards: acquired keys are replayed into its queue;
//! - no two replicas' reconcile intervals for one key overlap. A killed
//!   replica's unfinished reconcile counts as running until the kill. What
//!   makes this hold across the kill is the Lease: the survivors take the
//!   killed replica's keys only once its Lease expired by their clocks (a
//!   Lease duration after they last saw it renewed), never before;
//! - the killed replica's keys are taken over within the Lease duration
//!   plus one renew period of the SIGKILL, and not before the Lease could
//!   have expired (the Lease duration minus one renew period, less a
//!   margin for the last renewal's round trip);
//! - only the killed replica's keys move on the kill; its new process gets
//!   exactly those keys back; on the join only keys that go to the joiner
//!   move, and it ends owning about a quarter (20–30 %) of the keys.
//!
//! The build of the example is the caller's: `scripts/suites/e2e.sh` runs
//! `cargo build --workspace --all-features --example operator` first.
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set.

use crate::e2e_support;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::PathBuf,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result, bail, ensure};
use e2e_support::{Access, Scene, TestNamespace, configmap, post_params, within};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, Patch, PatchParams};
use parking_lot::Mutex;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    task::JoinSet,
};

const OBJECTS: usize = 1000;
/// Short Lease timings keep the run short; the defaults are 15 s / 10 s / 2 s.
const LEASE_DURATION: Duration = Duration::from_secs(4);
const RENEW_DEADLINE: Duration = Duration::from_millis(3000);
const RETRY_PERIOD: Duration = Duration::from_millis(2000);
/// Updates of random ConfigMaps per second while the replicas run.
const UPDATES_PER_SECOND: u64 = 40;

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// `target/<profile>/examples/operator`, next to this test's binary.
fn replica_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("the test binary lies in <target>/<profile>/deps")?;
    let binary = profile_dir.join("examples").join("operator");
    ensure!(
        binary.exists(),
        "{} is missing: build it first with \
         `cargo build --workspace --all-features --example operator`",
        binary.display()
    );
    Ok(binary)
}

/// One reconcile as a replica printed it; `end` is `None` while running.
#[derive(Clone, Debug)]
struct Reconcile {
    replica: String,
    key: String,
    /// The source's resourceVersion a successful reconcile read.
    version: Option<String>,
    failed: bool,
    start: u128,
    end: Option<u128>,
}

/// Everything the replicas printed, parsed.
#[derive(Default)]
struct Logs {
    reconciles: Vec<Reconcile>,
    /// Every `OWNS` line: (replica, time, owned keys).
    owns: Vec<(String, u128, Arc<BTreeSet<String>>)>,
    /// Each replica's last `OWNS`.
    current: HashMap<String, Arc<BTreeSet<String>>>,
    unparsed: Vec<String>,
}

impl Logs {
    /// A line printed by the process labelled `process`.
    fn take(&mut self, process: &str, line: &str) {
        if self.parse(process, line).is_none() {
            self.unparsed.push(line.to_owned());
        }
    }

    /// Records a line under the process that printed it (not the identity
    /// in it: a restarted replica has the identity of the one it replaces).
    fn parse(&mut self, process: &str, line: &str) -> Option<()> {
        let mut words = line.split(' ');
        match words.next()? {
            "BEGIN" => {
                let (_identity, key, start) = (words.next()?, words.next()?, words.next()?);
                self.reconciles.push(Reconcile {
                    replica: process.to_owned(),
                    key: key.to_owned(),
                    version: None,
                    failed: false,
                    start: start.parse().ok()?,
                    end: None,
                });
            }
            "RECONCILE" => {
                let (_identity, key, version) = (words.next()?, words.next()?, words.next()?);
                let start: u128 = words.next()?.parse().ok()?;
                let end = words.next()?.parse().ok()?;
                let ok = match words.next()? {
                    "ok" => true,
                    "failed" => false,
                    _ => return None,
                };
                let begun = self.reconciles.iter_mut().rev().find(|r| {
                    r.replica == process && r.key == key && r.start == start && r.end.is_none()
                })?;
                begun.version = ok.then(|| version.to_owned());
                begun.failed = !ok;
                begun.end = Some(end);
            }
            "OWNS" => {
                let _identity = words.next()?;
                let replica = process.to_owned();
                let at = words.next()?.parse().ok()?;
                let count: usize = words.next()?.parse().ok()?;
                let keys: BTreeSet<String> = words
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned)
                    .collect();
                if keys.len() != count {
                    return None;
                }
                let keys = Arc::new(keys);
                self.current.insert(replica.clone(), Arc::clone(&keys));
                self.owns.push((replica, at, keys));
            }
            _ => return None,
        }
        Some(())
    }

    /// The keys of `acquired` (key, new owner, when it was acquired) that
    /// their new owner did not reconcile successfully from then on: on
    /// acquisition the sharded stream replays every acquired key.
    fn unreconciled_acquisitions<'k>(
        &self,
        acquired: impl IntoIterator<Item = (&'k String, &'k str, u128)>,
    ) -> Vec<&'k String> {
        acquired
            .into_iter()
            .filter(|(key, owner, since)| {
                !self.reconciles.iter().any(|r| {
                    r.replica == *owner
                        && r.key == **key
                        && r.start >= *since
                        && r.version.is_some()
                })
            })
            .map(|(key, _, _)| key)
            .collect()
    }

    /// The owner of every key when the live replicas' last `OWNS` split
    /// `keys` exactly among them, each owning some (sources elsewhere in
    /// the cluster are not counted).
    fn partition(
        &self,
        live: &[&str],
        keys: &BTreeSet<String>,
    ) -> Option<BTreeMap<String, String>> {
        let mut owner = BTreeMap::new();
        for replica in live {
            let owned = self.current.get(*replica)?;
            if !owned.iter().any(|key| keys.contains(key)) {
                return None;
            }
            for key in owned.iter().filter(|key| keys.contains(*key)) {
                if owner.insert(key.clone(), (*replica).to_owned()).is_some() {
                    return None;
                }
            }
        }
        (owner.len() == keys.len() && owner.keys().eq(keys.iter())).then_some(owner)
    }
}

struct Replicas {
    binary: PathBuf,
    kubeconfig: PathBuf,
    /// Where the ring's Leases live.
    namespace: String,
    logs: Arc<Mutex<Logs>>,
    children: BTreeMap<String, Child>,
    /// When each killed replica was gone (its SIGKILL reaped).
    killed: BTreeMap<String, u128>,
    readers: JoinSet<()>,
}

impl Replicas {
    /// Starts a replica of `identity`, its output labelled `process`.
    fn start(&mut self, process: &str, identity: &str) -> Result<()> {
        let mut child = Command::new(&self.binary)
            .args(["--shard", "ring", "--identity", identity])
            .args(["--lease-namespace", &self.namespace])
            .env("KUBECONFIG", &self.kubeconfig)
            .env(
                "SHARD_LEASE_DURATION_SECS",
                LEASE_DURATION.as_secs().to_string(),
            )
            .env(
                "SHARD_RENEW_DEADLINE_MS",
                RENEW_DEADLINE.as_millis().to_string(),
            )
            .env(
                "SHARD_RETRY_PERIOD_MS",
                RETRY_PERIOD.as_millis().to_string(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        let stdout = child.stdout.take().context("piped stdout")?;
        let logs = Arc::clone(&self.logs);
        let label = process.to_owned();
        self.readers.spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                logs.lock().take(&label, &line);
            }
        });
        self.children.insert(process.to_owned(), child);
        Ok(())
    }

    /// SIGKILL; returns the time just before it was sent. The replica's
    /// unfinished work is taken to run until the kill was reaped, a later
    /// instant, so a pause of this test between the two never hides an
    /// overlap.
    async fn kill(&mut self, identity: &str) -> Result<u128> {
        let child = self.children.get_mut(identity).context("no such replica")?;
        let at = now_ms();
        child.start_kill()?;
        child.wait().await?;
        self.killed.insert(identity.to_owned(), now_ms());
        Ok(at)
    }

    async fn kill_all(&mut self) -> Result<()> {
        let live: Vec<String> = self
            .children
            .keys()
            .filter(|id| !self.killed.contains_key(*id))
            .cloned()
            .collect();
        for id in live {
            self.kill(&id).await?;
        }
        // The readers end with the pipes.
        while self.readers.join_next().await.is_some() {}
        Ok(())
    }
}

/// Polls `done` every 50 ms until it gives a value or `limit` passes.
async fn wait_for<T>(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> Option<T>,
) -> Result<T> {
    let until = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = done() {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= until {
            bail!("{what}: not within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Patches ConfigMaps in a scattered order, `UPDATES_PER_SECOND`, until
/// stopped; counts the updates made.
fn mutate(
    api: Api<ConfigMap>,
    stop: Arc<AtomicBool>,
    made: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<Result<()>> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1000 / UPDATES_PER_SECOND));
        let mut in_flight = JoinSet::new();
        let mut n: usize = 0;
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            while in_flight.len() >= 8 {
                in_flight.join_next().await.context("a patch task")???;
            }
            n += 1;
            let name = format!("obj-{:05}", (n * 7919) % OBJECTS);
            let api = api.clone();
            in_flight.spawn(async move {
                let patch = serde_json::json!({ "data": { "value": format!("update-{n}") } });
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .with_context(|| format!("updating {name}"))
                    .map(drop)
            });
            made.fetch_add(1, Ordering::Relaxed);
        }
        while let Some(result) = in_flight.join_next().await {
            result??;
        }
        Ok(())
    })
}

/// Creates `count` sources `obj-00000`, `obj-00001`, ... labelled
/// `mirror=true`, 16 requests at a time.
async fn create_sources(api: &Api<ConfigMap>, count: usize) -> Result<()> {
    let params = post_params();
    stream::iter(0..count)
        .map(|i| {
            let name = format!("obj-{i:05}");
            let mut source = configmap(&name, &i.to_string());
            source.metadata.labels = Some([("mirror".to_owned(), "true".to_owned())].into());
            let (api, params) = (api.clone(), &params);
            async move {
                api.create(params, &source)
                    .await
                    .with_context(|| format!("creating {name}"))
            }
        })
        .buffer_unordered(16)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
}

/// Waits until every source of `finals` has its copy in `targets` with the
/// source's data; lists every second. Returns how many copies differ (0) or
/// fails with the count after `limit`.
async fn copies_follow(
    targets: &Api<ConfigMap>,
    source_namespace: &str,
    finals: &BTreeMap<String, Option<BTreeMap<String, String>>>,
    limit: Duration,
) -> Result<usize> {
    let until = tokio::time::Instant::now() + limit;
    loop {
        let copies: HashMap<String, Option<BTreeMap<String, String>>> = targets
            .list(&ListParams::default().labels("mirror.kube-informer.dev/source"))
            .await?
            .items
            .into_iter()
            .map(|copy| (copy.metadata.name.unwrap_or_default(), copy.data))
            .collect();
        let differ = finals
            .iter()
            .filter(|(key, data)| {
                let name = key.rsplit('/').next().unwrap_or_default();
                copies.get(&format!("{source_namespace}.{name}")) != Some(*data)
            })
            .count();
        if differ == 0 {
            return Ok(0);
        }
        if tokio::time::Instant::now() >= until {
            bail!("{differ} copies do not hold their source's final data after {limit:?}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test]
async fn e2e_shard_replicas_share_keys_survive_a_kill_and_a_join() -> Result<()> {
    // A short name: the copies are named `<namespace>.<name>`, which must
    // fit in a label value (63 characters).
    let Some(scene) = Scene::start("e2e_shard", Access::Shared).await? else {
        return Ok(());
    };
    let run_started = tokio::time::Instant::now();
    let kubeconfig =
        PathBuf::from(std::env::var_os(e2e_support::KUBECONFIG_VAR).context("set by the harness")?);
    let api = scene.ns.configmaps();
    let targets = TestNamespace::create(&scene.client, "shard_targets").await?;
    Api::<Namespace>::all(scene.client.clone())
        .patch(
            &targets.name,
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({ "metadata": { "labels": { "mirror-target": "true" } } }),
            ),
        )
        .await
        .context("labelling the target namespace")?;
    within(
        Duration::from_secs(120),
        "creating the sources",
        create_sources(&api, OBJECTS),
    )
    .await?;
    let ns = scene.ns.name.clone();
    let keys: BTreeSet<String> = (0..OBJECTS).map(|i| format!("{ns}/obj-{i:05}")).collect();

    let logs = Arc::new(Mutex::new(Logs::default()));
    let mut replicas = Replicas {
        binary: replica_binary()?,
        kubeconfig,
        namespace: ns.clone(),
        logs: Arc::clone(&logs),
        children: BTreeMap::new(),
        killed: BTreeMap::new(),
        readers: JoinSet::new(),
    };
    for id in ["a", "b", "c"] {
        replicas.start(id, id)?;
    }
    wait_for(
        Duration::from_secs(60),
        "three replicas share the keys",
        || logs.lock().partition(&["a", "b", "c"], &keys),
    )
    .await?;

    let stop = Arc::new(AtomicBool::new(false));
    let updates = Arc::new(AtomicUsize::new(0));
    let mutator = mutate(api.clone(), Arc::clone(&stop), Arc::clone(&updates));
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Leave: SIGKILL b while everything changes.
    let before_kill = wait_for(
        Duration::from_secs(60),
        "a settled split before the kill",
        || logs.lock().partition(&["a", "b", "c"], &keys),
    )
    .await?;
    let victim: BTreeSet<String> = logs.lock().current["b"].as_ref().clone();
    let killed_at = replicas.kill("b").await?;
    let after_kill = wait_for(
        LEASE_DURATION + RETRY_PERIOD + Duration::from_secs(20),
        "the survivors take over the killed replica's keys",
        || logs.lock().partition(&["a", "c"], &keys),
    )
    .await?;
    // When each of the victim's keys was first owned by a survivor.
    let taken_at: BTreeMap<&String, u128> = {
        let logs = logs.lock();
        victim
            .iter()
            .map(|key| {
                let at = logs
                    .owns
                    .iter()
                    .filter(|(r, at, owned)| r != "b" && *at >= killed_at && owned.contains(key))
                    .map(|(_, at, _)| *at)
                    .min()
                    .unwrap_or(u128::MAX);
                (key, at)
            })
            .collect()
    };
    let first = *taken_at.values().min().context("the victim owned keys")? - killed_at;
    let last = *taken_at.values().max().context("the victim owned keys")? - killed_at;
    let moved_on_leave: Vec<&String> = keys
        .iter()
        .filter(|k| before_kill[*k] != after_kill[*k])
        .collect();
    // Each phase ends when every key it moved has been reconciled by its
    // new owner. A fixed pause is not enough on a busy machine: the next
    // phase could take a key back before its new owner's replay reached
    // it, and that owner would rightly never reconcile it.
    wait_for(
        Duration::from_secs(60),
        "the survivors reconcile the keys they took",
        || {
            let acquired = victim
                .iter()
                .map(|key| (key, after_kill[key].as_str(), killed_at));
            logs.lock()
                .unreconciled_acquisitions(acquired)
                .is_empty()
                .then_some(())
        },
    )
    .await?;

    tokio::time::sleep(Duration::from_secs(2)).await;

    // b comes back (a new process, as a restarted pod): same identity, so
    // the same weights, and it gets exactly its old keys back.
    let restarted_at = now_ms();
    replicas.start("b2", "b")?;
    let after_restart = wait_for(
        Duration::from_secs(60),
        "the restarted replica takes its share",
        || logs.lock().partition(&["a", "b2", "c"], &keys),
    )
    .await?;
    let back: BTreeSet<String> = keys
        .iter()
        .filter(|k| after_restart[*k] == "b2")
        .cloned()
        .collect();
    wait_for(
        Duration::from_secs(60),
        "the restarted replica reconciles the keys it took back",
        || {
            let acquired = back.iter().map(|key| (key, "b2", restarted_at));
            logs.lock()
                .unreconciled_acquisitions(acquired)
                .is_empty()
                .then_some(())
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Join: a fourth replica, d, comes.
    let before_join = wait_for(
        Duration::from_secs(60),
        "a settled split before the join",
        || logs.lock().partition(&["a", "b2", "c"], &keys),
    )
    .await?;
    let join_started = now_ms();
    replicas.start("d", "d")?;
    let after_join = wait_for(
        Duration::from_secs(60),
        "the joiner takes its share",
        || logs.lock().partition(&["a", "b2", "c", "d"], &keys),
    )
    .await?;
    let join_took = now_ms() - join_started;
    let moved_on_join: Vec<&String> = keys
        .iter()
        .filter(|k| before_join[*k] != after_join[*k])
        .collect();
    wait_for(
        Duration::from_secs(60),
        "the joiner reconciles the keys it took",
        || {
            let acquired = moved_on_join.iter().map(|key| (*key, "d", join_started));
            logs.lock()
                .unreconciled_acquisitions(acquired)
                .is_empty()
                .then_some(())
        },
    )
    .await?;

    // More changes under the new split, then the final states.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    within(Duration::from_secs(60), "the updates end", async {
        mutator.await?
    })
    .await?;
    let listed = api.list(&ListParams::default()).await?.items;
    let finals: BTreeMap<String, String> = listed
        .iter()
        .map(|cm| {
            (
                format!("{ns}/{}", cm.metadata.name.clone().unwrap_or_default()),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    let final_data: BTreeMap<String, Option<BTreeMap<String, String>>> = listed
        .into_iter()
        .map(|cm| {
            let key = format!("{ns}/{}", cm.metadata.name.unwrap_or_default());
            (key, cm.data)
        })
        .collect();
    ensure!(
        finals.len() == OBJECTS,
        "{} ConfigMaps listed",
        finals.len()
    );
    let unreconciled = wait_for(
        Duration::from_secs(60),
        "every final state is reconciled",
        || {
            let logs = logs.lock();
            let done: BTreeSet<(&str, &str)> = logs
                .reconciles
                .iter()
                .filter_map(|r| Some((r.key.as_str(), r.version.as_deref()?)))
                .collect();
            let missing = finals
                .iter()
                .filter(|(k, v)| !done.contains(&(k.as_str(), v.as_str())))
                .count();
            (missing == 0).then_some(missing)
        },
    )
    .await;
    // The operator's effect: every copy holds its source's final data.
    let copies_differ = copies_follow(
        &targets.configmaps(),
        &ns,
        &final_data,
        Duration::from_secs(60),
    )
    .await;
    let final_split = logs.lock().partition(&["a", "b2", "c", "d"], &keys);
    replicas.kill_all().await?;

    // The readers ended with the pipes: the logs are complete.
    let logs = std::mem::take(&mut *logs.lock());
    ensure!(
        logs.unparsed.is_empty(),
        "unparsed lines: {:?}",
        &logs.unparsed[..logs.unparsed.len().min(5)]
    );
    let reconciles = logs.reconciles.len();
    let failed = logs.reconciles.iter().filter(|r| r.failed).count();
    let mut lengths: Vec<u128> = logs
        .reconciles
        .iter()
        .filter_map(|r| Some(r.end? - r.start))
        .collect();
    lengths.sort_unstable();
    // Reconciles that wrote (a no-op one takes well under a millisecond).
    let long = lengths.iter().filter(|ms| **ms >= 5).count();
    let (median, slowest) = (
        lengths.get(lengths.len() / 2).copied().unwrap_or_default(),
        lengths.last().copied().unwrap_or_default(),
    );
    let d_owns = after_join.values().filter(|r| *r == "d").count();
    eprintln!(
        "e2e_shard: {reconciles} reconciles ({failed} failed and retried; median {median} ms, \
         {long} of 5 ms or more, slowest {slowest} ms), {} updates; SIGKILL of b: its {} keys taken over \
         {first}..{last} ms after the kill (Lease {LEASE_DURATION:?}, renew period \
         {RETRY_PERIOD:?}); keys moved on leave: {}; b's new process took back {}; join \
         of d took {join_took} ms, keys moved on join: {}, d owns {d_owns}; run {:?}",
        updates.load(Ordering::Relaxed),
        victim.len(),
        moved_on_leave.len(),
        back.len(),
        moved_on_join.len(),
        run_started.elapsed(),
    );
    unreconciled?;
    copies_differ?;

    // No two replicas work on one key at once. A reconcile the kill cut
    // short ran until the kill.
    let mut by_key: HashMap<&str, Vec<(u128, u128, &str)>> = HashMap::new();
    for r in &logs.reconciles {
        let end = match r.end {
            Some(end) => end,
            None => *replicas
                .killed
                .get(&r.replica)
                .context("an unfinished reconcile of a killed replica")?,
        };
        by_key
            .entry(r.key.as_str())
            .or_default()
            .push((r.start, end, r.replica.as_str()));
    }
    for (key, intervals) in &by_key {
        for (i, x) in intervals.iter().enumerate() {
            for y in &intervals[i + 1..] {
                ensure!(
                    x.2 == y.2 || x.1 <= y.0 || y.1 <= x.0,
                    "{key}: {} reconciled {}..{} while {} reconciled {}..{}",
                    x.2,
                    x.0,
                    x.1,
                    y.2,
                    y.0,
                    y.1
                );
            }
        }
    }

    // The kill: only b's keys move, to the survivors, once b's Lease
    // expired and within the Lease duration plus one renew period. b's last
    // renewal was sent at most a renew period (plus its round trip) before
    // the kill, so none of its keys moves before the Lease duration minus a
    // renew period; the 500 ms margin covers that round trip.
    ensure!(victim.len() > OBJECTS / 6, "b owned {} keys", victim.len());
    ensure!(
        moved_on_leave.len() == victim.len()
            && moved_on_leave.iter().all(|k| before_kill[*k] == "b"),
        "on the kill {} keys moved, b had {}",
        moved_on_leave.len(),
        victim.len()
    );
    let bound = (LEASE_DURATION + RETRY_PERIOD).as_millis();
    ensure!(
        last <= bound,
        "takeover took {last} ms, more than {bound} ms"
    );
    let earliest = (LEASE_DURATION - RETRY_PERIOD).as_millis() - 500;
    ensure!(
        first >= earliest,
        "a key of b was taken {first} ms after the kill, before its Lease could expire"
    );

    // Every key acquired was reconciled by its new owner after the event
    // that moved it: the survivors took b's keys after the kill, b's new
    // process took them back, d took its share.
    let acquisitions = victim
        .iter()
        .map(|key| (key, after_kill[key].as_str(), killed_at))
        .chain(back.iter().map(|key| (key, "b2", restarted_at)))
        .chain(moved_on_join.iter().map(|key| (*key, "d", join_started)));
    let unreconciled = logs.unreconciled_acquisitions(acquisitions);
    ensure!(
        unreconciled.is_empty(),
        "{} acquired keys not reconciled by their new owner, e.g. {:?}",
        unreconciled.len(),
        &unreconciled[..unreconciled.len().min(5)]
    );

    // The restart: the new process of b owns exactly what b owned.
    ensure!(
        back == victim,
        "b's new process owns {} keys, b owned {}",
        back.len(),
        victim.len()
    );

    // The join: only keys that go to d move, about a quarter of all.
    ensure!(
        moved_on_join.iter().all(|k| after_join[*k] == "d"),
        "a key moved between old members on the join"
    );
    ensure!(
        (OBJECTS * 20 / 100..=OBJECTS * 30 / 100).contains(&d_owns),
        "the joiner owns {d_owns} of {OBJECTS}"
    );
    let final_split = final_split.context("a split among a, b2, c and d at the end")?;
    let d_final = final_split.values().filter(|r| *r == "d").count();
    ensure!(
        d_final == d_owns,
        "d owns {d_final} at the end, {d_owns} after the join"
    );

    scene.ns.delete().await?;
    targets.delete().await?;
    Ok(())
}
