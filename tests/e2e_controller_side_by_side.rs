//! The same reconciler under kube-runtime's `Controller` and under this
//! crate's [`Controller`], side by side on the real kube-apiserver of
//! `e2e/cluster.sh`, through one change script.
//!
//! Each controller has a namespace of its own, so neither sees the other's
//! objects; every step of the script is applied to both namespaces at
//! once. In each namespace every ConfigMap is a parent, and the reconciler
//! keeps one Secret per parent (`<parent>-child`) holding the parent's
//! data, with a controller owner reference to it.
//!
//! # The reconciler
//!
//! One body ([`reconcile`]) for both controllers, which reads the parent as
//! the controller's cache holds it and the child from the API server, and
//! sends at most one write per call; the watch event of that write brings
//! the next call. So a count of calls reflects what triggered them:
//!
//! 1. a parent being deleted: delete its child if there is one, else
//!    remove the finalizer;
//! 2. a parent without the finalizer: add it (JSON patch with a `test`
//!    op, so a stale cache conflicts instead of overwriting);
//! 3. otherwise create the child when it is missing, replace it when its
//!    data or owner reference differ, or do nothing.
//!
//! No kube-controller-manager runs in the harness, so nothing
//! garbage-collects the child of a deleted parent: the reconciler does it
//! itself, behind a finalizer on the parent, which is also what a
//! controller needs to clean up after a restart of its own. A child is
//! made only once its parent holds the finalizer, so no parent goes away
//! before its child. Successful
//! reconciles wait for the next change (no periodic requeue); failed ones
//! are retried after [`RETRY`] on both sides.
//!
//! # The script
//!
//! Create 20 parents; update 8; edit 5 children by hand; delete 5 children;
//! delete 4 parents; restart the apiserver (SIGKILL, down 2 s), then at
//! once update 3 parents, edit a child and create 5 parents; edit a child
//! again and delete another (a probe: both are repaired only through the
//! children's watch, so both sides watch everything again after it);
//! re-create 2 deleted parents, delete one, update one.
//!
//! No child is deleted while the watches are down. kube-runtime's watcher
//! reports nothing for an object that is missing from a relist (a relist
//! yields the listed objects only), so its controller repairs such a child
//! only when its parents' watch has to list again too; whether it does
//! depends on whether that watch's last resourceVersion is still inside
//! the restarted server's window, which a test cannot control (in a run
//! where it was, kube-runtime's side kept the child missing for the whole
//! [`SETTLE_LIMIT`] after a single 410 of its children's watch). This
//! crate's informer hands such a child to its owner mapping as
//! `DeletedFinalStateUnknown` (F6, E5).
//!
//! After each phase the test waits until both namespaces hold the
//! expected objects and neither controller has reconciled for [`QUIET`].
//! Both controllers run with the defaults a program gets (watch backoff,
//! kube-runtime's zero debounce) and the same concurrency.
//!
//! # Rules checked
//!
//! - **SB1 Same end state.** Both namespaces end equal to the state the
//!   script implies (parents with the finalizer, one child per parent with
//!   the parent's data, owned by that parent's current uid), after every
//!   phase: this crate's controller triggers on its own objects' and its
//!   owned objects' changes (C2), hands the cached object (C4) and waits
//!   for the next change after `Action::await_change()` (C5), across a restart.
//! - **SB2 No more reconciles.** This crate's controller calls the
//!   reconciler no more often than kube-runtime's, in every phase and in
//!   all. Away from the restart both make exactly the calls the changes
//!   need ([`Step::calls`]). After the restart a watch whose resourceVersion
//!   is older than the restarted server's window is refused as expired
//!   (410) and lists again: kube-runtime's then trigger a reconcile of
//!   every listed object's parent; this crate's find the objects as
//!   cached, which makes resync notifications, and a controller takes none
//!   (C2).
//!
//! The table of calls and writes per phase is printed (see it with
//! `--nocapture`) and written to `e2e_controller_side_by_side.txt` in
//! cargo's temporary directory for tests (`target/tmp`).
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets
//! it.

use crate::e2e_support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use e2e_support::{Access, Scene, TestNamespace, within};
use futures::{StreamExt, TryStreamExt, future, stream};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use kube_informer::controller::{Controller, Error as ControllerError};
use kube_informer::runner::Action;
use kube_runtime::controller::{Action as RuntimeAction, Config as RuntimeConfig};
use kube_runtime::watcher;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The finalizer that holds a parent until its child is deleted.
const FINALIZER: &str = "side-by-side.kube-informer.dev/cleanup";
/// Reconciles at once, on both sides.
const CONCURRENCY: usize = 4;
/// How long after a failed reconcile its key is tried again, on both sides.
const RETRY: Duration = Duration::from_millis(200);
/// A phase is over when the state is the expected one and no reconcile has
/// run for this long.
const QUIET: Duration = Duration::from_millis(1500);
/// How often [`settle`] looks.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// A look of [`settle`] this much later than [`LOOK_EVERY`] says the
/// process was paused: the controllers could not run either, so the quiet
/// window starts again.
const PAUSED: Duration = Duration::from_secs(1);
/// The longest a phase may take to settle. After the restart both clients
/// wait out their watch backoff (steps of up to 30 s, with jitter) before
/// they list again: that phase settled after 40–60 s here.
const SETTLE_LIMIT: Duration = Duration::from_secs(180);
/// The longest one request of the script may take.
const STEP: Duration = Duration::from_secs(30);

/// A kind of write the reconciler sends.
#[derive(Debug, Clone, Copy)]
enum Write {
    AddFinalizer,
    RemoveFinalizer,
    CreateChild,
    ReplaceChild,
    DeleteChild,
}

/// What one controller did, as the reconciler and its outcome stream saw it.
#[derive(Debug, Default, Clone)]
struct Tally {
    /// Reconciler calls per parent name.
    calls: BTreeMap<String, u32>,
    /// Calls that returned an error.
    failed: u32,
    /// Reads of a child from the API server.
    reads: u32,
    add_finalizer: u32,
    remove_finalizer: u32,
    create_child: u32,
    replace_child: u32,
    delete_child: u32,
    /// Outcomes saying a queued key's object was gone (no call).
    not_found: u32,
    /// Other error items of the outcome stream (kube-runtime's include
    /// its watchers' errors).
    stream_errors: u32,
}

impl Tally {
    fn calls(&self) -> u32 {
        self.calls.values().sum()
    }

    fn writes(&self) -> u32 {
        self.add_finalizer
            + self.remove_finalizer
            + self.create_child
            + self.replace_child
            + self.delete_child
    }

    /// What happened between `before` and `self`.
    fn since(&self, before: &Tally) -> Tally {
        let calls = self
            .calls
            .iter()
            .map(|(key, n)| (key.clone(), n - before.calls.get(key).copied().unwrap_or(0)))
            .filter(|(_, n)| *n > 0)
            .collect();
        Tally {
            calls,
            failed: self.failed - before.failed,
            reads: self.reads - before.reads,
            add_finalizer: self.add_finalizer - before.add_finalizer,
            remove_finalizer: self.remove_finalizer - before.remove_finalizer,
            create_child: self.create_child - before.create_child,
            replace_child: self.replace_child - before.replace_child,
            delete_child: self.delete_child - before.delete_child,
            not_found: self.not_found - before.not_found,
            stream_errors: self.stream_errors - before.stream_errors,
        }
    }
}

/// One controller's namespace, client and counts: the reconciler's context.
struct Side {
    label: &'static str,
    client: Client,
    ns: String,
    tally: Mutex<Tally>,
    in_flight: AtomicUsize,
    /// When the last reconcile began or ended.
    last_activity: Mutex<Instant>,
}

impl Side {
    fn new(label: &'static str, client: Client, ns: &str) -> Arc<Self> {
        Arc::new(Side {
            label,
            client,
            ns: ns.to_owned(),
            tally: Mutex::new(Tally::default()),
            in_flight: AtomicUsize::new(0),
            last_activity: Mutex::new(Instant::now()),
        })
    }

    fn parents(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn children(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn wrote(&self, write: Write) {
        let mut tally = self.tally.lock();
        let counter = match write {
            Write::AddFinalizer => &mut tally.add_finalizer,
            Write::RemoveFinalizer => &mut tally.remove_finalizer,
            Write::CreateChild => &mut tally.create_child,
            Write::ReplaceChild => &mut tally.replace_child,
            Write::DeleteChild => &mut tally.delete_child,
        };
        *counter += 1;
    }

    /// No reconcile runs, and none began or ended for `quiet`.
    fn is_quiet(&self, quiet: Duration) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0 && self.last_activity.lock().elapsed() >= quiet
    }

    fn snapshot(&self) -> Tally {
        self.tally.lock().clone()
    }
}

/// A reconciler call, counted from its start to its end.
struct Call<'a>(&'a Side);

impl<'a> Call<'a> {
    fn start(side: &'a Side, parent: &str) -> Self {
        *side
            .tally
            .lock()
            .calls
            .entry(parent.to_owned())
            .or_default() += 1;
        side.in_flight.fetch_add(1, Ordering::SeqCst);
        *side.last_activity.lock() = Instant::now();
        Call(side)
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        *self.0.last_activity.lock() = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn child_name(parent: &str) -> String {
    format!("{parent}-child")
}

/// The child `parent` should have.
fn desired_child(parent: &ConfigMap) -> Secret {
    let data = parent
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
        .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(child_name(&parent.name_any())),
            owner_references: parent.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Whether `child` holds what `desired` holds: the same data, controlled
/// by the same parent (by uid).
fn up_to_date(child: &Secret, desired: &Secret) -> bool {
    let controller = |s: &Secret| {
        s.metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid.clone())
    };
    child.data.clone().unwrap_or_default() == desired.data.clone().unwrap_or_default()
        && controller(child) == controller(desired)
}

/// A JSON patch from its JSON form.
fn json_patch(ops: serde_json::Value) -> Result<Patch<()>, kube::Error> {
    Ok(Patch::Json(
        serde_json::from_value(ops).map_err(kube::Error::SerdeError)?,
    ))
}

fn is_not_found<T>(result: &kube::Result<T>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 404)
}

/// The reconciler both controllers run (see the module docs): at most one
/// write per call.
async fn reconcile(parent: Arc<ConfigMap>, side: Arc<Side>) -> Result<(), kube::Error> {
    let name = parent.name_any();
    let _call = Call::start(&side, &name);
    let result = reconcile_once(&parent, &side).await;
    if result.is_err() {
        side.tally.lock().failed += 1;
    }
    result
}

async fn reconcile_once(parent: &ConfigMap, side: &Side) -> Result<(), kube::Error> {
    let name = parent.name_any();
    let child = child_name(&name);
    let (parents, children) = (side.parents(), side.children());
    let held = parent.finalizers().iter().position(|f| f == FINALIZER);

    if parent.metadata.deletion_timestamp.is_some() {
        let Some(index) = held else {
            return Ok(());
        };
        side.tally.lock().reads += 1;
        if children.get_opt(&child).await?.is_some() {
            // The child's deletion event brings the next call.
            side.wrote(Write::DeleteChild);
            let deleted = children.delete(&child, &DeleteParams::default()).await;
            return if is_not_found(&deleted) {
                Ok(())
            } else {
                deleted.map(drop)
            };
        }
        side.wrote(Write::RemoveFinalizer);
        let path = format!("/metadata/finalizers/{index}");
        let patch = json_patch(json!([
            {"op": "test", "path": path, "value": FINALIZER},
            {"op": "remove", "path": path},
        ]))?;
        let patched = parents.patch(&name, &PatchParams::default(), &patch).await;
        return if is_not_found(&patched) {
            Ok(())
        } else {
            patched.map(drop)
        };
    }

    if held.is_none() {
        // The parent's own update event brings the next call, which then
        // sees the finalizer in the cache.
        let ops = match &parent.metadata.finalizers {
            None => json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
            ]),
            Some(list) => json!([
                {"op": "test", "path": "/metadata/finalizers", "value": list},
                {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
            ]),
        };
        side.wrote(Write::AddFinalizer);
        parents
            .patch(&name, &PatchParams::default(), &json_patch(ops)?)
            .await?;
        return Ok(());
    }

    let desired = desired_child(parent);
    side.tally.lock().reads += 1;
    match children.get_opt(&child).await? {
        None => {
            side.wrote(Write::CreateChild);
            children.create(&PostParams::default(), &desired).await?;
        }
        Some(current) if up_to_date(&current, &desired) => {}
        Some(current) => {
            let mut next = desired;
            next.metadata.resource_version = current.metadata.resource_version;
            side.wrote(Write::ReplaceChild);
            children
                .replace(&child, &PostParams::default(), &next)
                .await?;
        }
    }
    Ok(())
}

/// What a namespace holds, without uids, resourceVersions or namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    /// Parent name → (data, finalizers).
    parents: BTreeMap<String, (BTreeMap<String, String>, Vec<String>)>,
    /// Child name → (data, the name of its controller owner if that owner
    /// is the live parent of that name, by uid).
    children: BTreeMap<String, (BTreeMap<String, String>, Option<String>)>,
}

impl State {
    /// What the script implies: `parents` (name → data), each with the
    /// finalizer and its child.
    fn expected(parents: &BTreeMap<String, BTreeMap<String, String>>) -> State {
        State {
            parents: parents
                .iter()
                .map(|(name, data)| (name.clone(), (data.clone(), vec![FINALIZER.to_owned()])))
                .collect(),
            children: parents
                .iter()
                .map(|(name, data)| (child_name(name), (data.clone(), Some(name.clone()))))
                .collect(),
        }
    }

    async fn read(side: &Side) -> Result<State> {
        let parents = side.parents().list(&ListParams::default()).await?.items;
        let children = side.children().list(&ListParams::default()).await?.items;
        let uid_of: BTreeMap<String, String> = parents
            .iter()
            .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
            .collect();
        Ok(State {
            parents: parents
                .iter()
                .map(|p| {
                    let data = p.data.clone().unwrap_or_default();
                    (p.name_any(), (data, p.finalizers().to_vec()))
                })
                .collect(),
            children: children
                .iter()
                .map(|c| {
                    let data = c
                        .data
                        .iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
                        .collect();
                    let owner = c
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .find(|o| o.controller == Some(true))
                        .filter(|o| uid_of.get(&o.name) == Some(&o.uid))
                        .map(|o| o.name.clone());
                    (c.name_any(), (data, owner))
                })
                .collect(),
        })
    }

    /// The names whose entries differ from `other`'s, for error messages.
    fn differences(&self, other: &State) -> Vec<String> {
        fn diff<V: PartialEq>(a: &BTreeMap<String, V>, b: &BTreeMap<String, V>) -> Vec<String> {
            a.keys()
                .chain(b.keys())
                .filter(|k| a.get(*k) != b.get(*k))
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        }
        let mut out = diff(&self.parents, &other.parents);
        out.extend(diff(&self.children, &other.children));
        out
    }
}

fn parent_name(i: usize) -> String {
    format!("p{i:02}")
}

fn parent(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..Default::default()
    }
}

/// One step of the change script, applied to one namespace.
#[derive(Debug, Clone)]
enum Step {
    CreateParent(String, String),
    UpdateParent(String, String),
    DeleteParent(String),
    /// A hand edit of a child: another value and a key of its own.
    EditChild(String),
    DeleteChild(String),
}

impl Step {
    /// The reconciler calls this change needs when nothing else happens
    /// (see the module docs): a new parent gets its finalizer, then its
    /// child, then a call for the child's creation that writes nothing; a
    /// changed parent or child gets a write and a call that writes
    /// nothing; a deleted parent gets its child deleted, then its
    /// finalizer removed.
    fn calls(&self) -> u32 {
        match self {
            Step::CreateParent(..) => 3,
            Step::UpdateParent(..)
            | Step::DeleteParent(_)
            | Step::EditChild(_)
            | Step::DeleteChild(_) => 2,
        }
    }

    /// Applies the step to `model` (parent name → data).
    fn model(&self, model: &mut BTreeMap<String, BTreeMap<String, String>>) {
        let data = |value: &str| [("value".to_owned(), value.to_owned())].into();
        match self {
            Step::CreateParent(name, value) | Step::UpdateParent(name, value) => {
                model.insert(name.clone(), data(value));
            }
            Step::DeleteParent(name) => {
                model.remove(name);
            }
            Step::EditChild(_) | Step::DeleteChild(_) => {}
        }
    }

    async fn apply(&self, client: &Client, ns: &str) -> Result<()> {
        let parents = Api::<ConfigMap>::namespaced(client.clone(), ns);
        let children = Api::<Secret>::namespaced(client.clone(), ns);
        let merge = |patch| Patch::Merge(patch);
        match self {
            Step::CreateParent(name, value) => {
                parents
                    .create(&PostParams::default(), &parent(name, value))
                    .await?;
            }
            Step::UpdateParent(name, value) => {
                parents
                    .patch(
                        name,
                        &PatchParams::default(),
                        &merge(json!({"data": {"value": value}})),
                    )
                    .await?;
            }
            Step::DeleteParent(name) => {
                parents.delete(name, &DeleteParams::default()).await?;
            }
            Step::EditChild(parent) => {
                children
                    .patch(
                        &child_name(parent),
                        &PatchParams::default(),
                        &merge(json!({"stringData": {"value": "tampered", "extra": "by hand"}})),
                    )
                    .await?;
            }
            Step::DeleteChild(parent) => {
                children
                    .delete(&child_name(parent), &DeleteParams::default())
                    .await?;
            }
        }
        Ok(())
    }
}

/// Applies `steps` to every namespace at once (each namespace in order,
/// a few requests in flight), and to `model`.
async fn apply_all(
    client: &Client,
    namespaces: &[&str],
    steps: &[Step],
    model: &mut BTreeMap<String, BTreeMap<String, String>>,
) -> Result<()> {
    for step in steps {
        step.model(model);
    }
    let per_ns = namespaces.iter().map(|ns| async move {
        stream::iter(steps)
            .map(|step| async move {
                within(STEP, &format!("{step:?} in {ns}"), step.apply(client, ns)).await
            })
            .buffer_unordered(4)
            .try_collect::<Vec<()>>()
            .await
    });
    future::try_join_all(per_ns).await.map(drop)
}

/// Waits until every side holds `expected` and has been quiet for [`QUIET`].
///
/// Quiet counts only time in which this loop kept its pace: on a loaded
/// machine a pause of the whole process holds the controllers' work too,
/// and a reconcile due during it runs after it, so a window that a pause
/// fills is not a quiet one ([`PAUSED`]).
async fn settle(sides: &[&Arc<Side>], expected: &State, phase: &str) -> Result<Duration> {
    let started = Instant::now();
    let mut running_since = started;
    loop {
        let mut waiting = Vec::new();
        for side in sides {
            let state = within(STEP, "reading the state", State::read(side)).await?;
            if state != *expected {
                let tally = side.snapshot();
                waiting.push(format!(
                    "{}: differs at {:?} ({} reconciles running, {} failed calls, {} stream \
                     errors so far)",
                    side.label,
                    state.differences(expected),
                    side.in_flight.load(Ordering::SeqCst),
                    tally.failed,
                    tally.stream_errors
                ));
            } else if !side.is_quiet(QUIET) {
                waiting.push(format!("{}: still reconciling", side.label));
            }
        }
        if waiting.is_empty() && running_since.elapsed() >= QUIET {
            return Ok(started.elapsed());
        }
        if started.elapsed() > SETTLE_LIMIT {
            bail!(
                "{phase}: not settled after {SETTLE_LIMIT:?}: {}",
                waiting.join("; ")
            );
        }
        let asleep = Instant::now();
        tokio::time::sleep(LOOK_EVERY).await;
        if asleep.elapsed() > LOOK_EVERY + PAUSED {
            running_since = Instant::now();
        }
    }
}

/// One phase of the script: its changes, applied to both namespaces at
/// once, after an apiserver restart when `restart_first`.
struct Phase {
    name: &'static str,
    restart_first: bool,
    steps: Vec<Step>,
}

impl Phase {
    fn new(name: &'static str, steps: impl IntoIterator<Item = Step>) -> Self {
        Phase {
            name,
            restart_first: false,
            steps: steps.into_iter().collect(),
        }
    }
}

/// The change script (see the module docs).
fn script() -> Vec<Phase> {
    let names = |range: std::ops::Range<usize>| range.map(parent_name);
    let set = |range, version: &'static str| {
        names(range).map(move |n| Step::UpdateParent(n.clone(), format!("{version}-{n}")))
    };
    vec![
        Phase::new(
            "create 20 parents",
            names(0..20).map(|n| Step::CreateParent(n.clone(), format!("v1-{n}"))),
        ),
        Phase::new("update 8 parents", set(0..8, "v2")),
        Phase::new("edit 5 children by hand", names(8..13).map(Step::EditChild)),
        Phase::new("delete 5 children", names(13..18).map(Step::DeleteChild)),
        Phase::new("delete 4 parents", names(16..20).map(Step::DeleteParent)),
        Phase {
            name: "restart; update 3, edit a child, create 5",
            restart_first: true,
            steps: set(0..3, "v3")
                .chain([Step::EditChild(parent_name(4))])
                .chain(names(20..25).map(|n| Step::CreateParent(n.clone(), format!("v1-{n}"))))
                .collect(),
        },
        // The phase above can settle through the parents' watch alone (a
        // relist of the parents reconciles every parent, which repairs
        // the children); a child edited or deleted now is repaired only
        // through the children's watch, so both sides watch everything
        // again after it.
        Phase::new(
            "probe: edit a child, delete a child",
            [
                Step::EditChild(parent_name(4)),
                Step::DeleteChild(parent_name(3)),
            ],
        ),
        Phase::new(
            "re-create 2 parents, delete 1, update 1",
            [
                Step::CreateParent(parent_name(16), "again".into()),
                Step::CreateParent(parent_name(17), "again".into()),
                Step::DeleteParent(parent_name(5)),
                Step::UpdateParent(parent_name(6), "v4".into()),
            ],
        ),
    ]
}

/// One row of the closing table.
struct Row {
    phase: &'static str,
    took: Duration,
    /// The calls the phase's changes need ([`Step::calls`]).
    needed: u32,
    ours: Tally,
    theirs: Tally,
}

fn table(rows: &[Row], ours_total: &Tally, theirs_total: &Tally) -> String {
    let mut out = String::new();
    let line = |out: &mut String, cells: [&dyn std::fmt::Display; 7]| {
        let _ = writeln!(
            out,
            "{:<50} {:>7} | {:>6} | {:>7} {:>7} | {:>7} {:>7}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]
        );
    };
    line(
        &mut out,
        [
            &"phase", &"settled", &"needed", &"calls", &"calls", &"writes", &"writes",
        ],
    );
    line(
        &mut out,
        [&"", &"", &"calls", &"ours", &"kube-rt", &"ours", &"kube-rt"],
    );
    for row in rows {
        line(
            &mut out,
            [
                &row.phase,
                &format!("{:.1}s", row.took.as_secs_f64()),
                &row.needed,
                &row.ours.calls(),
                &row.theirs.calls(),
                &row.ours.writes(),
                &row.theirs.writes(),
            ],
        );
    }
    line(
        &mut out,
        [
            &"total",
            &"",
            &rows.iter().map(|r| r.needed).sum::<u32>(),
            &ours_total.calls(),
            &theirs_total.calls(),
            &ours_total.writes(),
            &theirs_total.writes(),
        ],
    );
    for (label, t) in [("ours", ours_total), ("kube-runtime", theirs_total)] {
        let busiest = t
            .calls
            .iter()
            .max_by_key(|(_, n)| **n)
            .map_or_else(String::new, |(key, n)| format!("{key} ({n})"));
        let _ = writeln!(
            out,
            "{label}: {} calls ({} failed) over {} parents, most {busiest}; writes: \
             {} add-finalizer, {} remove-finalizer, {} create, {} replace, {} delete; \
             {} child reads; {} keys queued with no object; {} other stream errors",
            t.calls(),
            t.failed,
            t.calls.len(),
            t.add_finalizer,
            t.remove_finalizer,
            t.create_child,
            t.replace_child,
            t.delete_child,
            t.reads,
            t.not_found,
            t.stream_errors
        );
    }
    out
}

/// SB2: no more calls than kube-runtime's, in every phase and in all.
fn check_calls(rows: &[Row], ours_total: &Tally, theirs_total: &Tally, report: &str) -> Result<()> {
    for row in rows {
        ensure!(
            row.ours.calls() <= row.theirs.calls(),
            "\"{}\": this crate's controller called the reconciler {} times, kube-runtime's {} \
             times:\n{report}",
            row.phase,
            row.ours.calls(),
            row.theirs.calls()
        );
    }
    ensure!(
        ours_total.calls() <= theirs_total.calls(),
        "this crate's controller called the reconciler {} times, kube-runtime's {} times:\n{report}",
        ours_total.calls(),
        theirs_total.calls()
    );
    Ok(())
}

/// SB1, SB2 (C2, C4, C5 across an apiserver restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn e2e_side_by_side_same_state_no_more_reconciles_sb1_sb2() -> Result<()> {
    let Some(Scene {
        cluster,
        client,
        ns: ours_ns,
        _hold,
    }) = Scene::start("e2e_controller_side_by_side", Access::Exclusive).await?
    else {
        return Ok(());
    };
    let theirs_ns = TestNamespace::create(&client, "side-by-side-kube-runtime").await?;
    let namespaces = [ours_ns.name.as_str(), theirs_ns.name.as_str()];
    let ours = Side::new("ours", cluster.admin_client().await?, &ours_ns.name);
    let theirs = Side::new(
        "kube-runtime",
        cluster.admin_client().await?,
        &theirs_ns.name,
    );
    let stop = CancellationToken::new();

    let ours_run = tokio::spawn({
        let side = ours.clone();
        let outcomes = Controller::new(side.parents())
            .owns(side.children())
            .with_config(kube_informer::controller::Config {
                concurrency: CONCURRENCY,
                ..Default::default()
            })
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(
                |parent, side| async move {
                    reconcile(parent, side)
                        .await
                        .map(|()| Action::await_change())
                },
                |_parent, _error: &kube::Error, _side| Action::requeue(RETRY),
                side.clone(),
            );
        async move {
            outcomes
                .for_each(|outcome| {
                    match outcome {
                        Ok(_) | Err(ControllerError::Reconcile { .. }) => {}
                        Err(ControllerError::ObjectNotFound { .. }) => {
                            side.tally.lock().not_found += 1
                        }
                        Err(error) => {
                            eprintln!("ours: {error}");
                            side.tally.lock().stream_errors += 1
                        }
                    }
                    future::ready(())
                })
                .await
        }
    });
    let theirs_run = tokio::spawn({
        let side = theirs.clone();
        let outcomes = kube_runtime::Controller::new(side.parents(), watcher::Config::default())
            .owns(side.children(), watcher::Config::default())
            .with_config(RuntimeConfig::default().concurrency(CONCURRENCY as u16))
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(
                |parent, side| async move {
                    reconcile(parent, side)
                        .await
                        .map(|()| RuntimeAction::await_change())
                },
                |_parent, _error: &kube::Error, _side| RuntimeAction::requeue(RETRY),
                side.clone(),
            );
        async move {
            outcomes
                .for_each(|outcome| {
                    match outcome {
                        Ok(_) | Err(kube_runtime::controller::Error::ReconcilerFailed(..)) => {}
                        Err(kube_runtime::controller::Error::ObjectNotFound(_)) => {
                            side.tally.lock().not_found += 1
                        }
                        Err(error) => {
                            eprintln!("kube-runtime: {error}");
                            side.tally.lock().stream_errors += 1
                        }
                    }
                    future::ready(())
                })
                .await
        }
    });

    let sides = [&ours, &theirs];
    let mut model = BTreeMap::new();
    let mut rows = Vec::new();
    let mut last = (ours.snapshot(), theirs.snapshot());
    for phase in script() {
        let started = Instant::now();
        if phase.restart_first {
            within(
                Duration::from_secs(120),
                "restarting the apiserver",
                cluster.restart_apiserver(true, Duration::from_secs(2)),
            )
            .await?;
        }
        apply_all(&client, &namespaces, &phase.steps, &mut model)
            .await
            .with_context(|| format!("applying \"{}\"", phase.name))?;
        settle(&sides, &State::expected(&model), phase.name).await?;
        let now = (ours.snapshot(), theirs.snapshot());
        rows.push(Row {
            phase: phase.name,
            took: started.elapsed(),
            needed: phase.steps.iter().map(Step::calls).sum(),
            ours: now.0.since(&last.0),
            theirs: now.1.since(&last.1),
        });
        last = now;
    }

    // SB1: both namespaces hold what the script implies.
    let expected = State::expected(&model);
    let ours_state = within(STEP, "reading our state", State::read(&ours)).await?;
    let theirs_state = within(STEP, "reading kube-runtime's state", State::read(&theirs)).await?;
    ensure!(
        ours_state == expected && theirs_state == expected,
        "final states differ from the expected one: ours at {:?}, kube-runtime's at {:?}",
        ours_state.differences(&expected),
        theirs_state.differences(&expected)
    );

    stop.cancel();
    within(Duration::from_secs(30), "our controller's end", async {
        Ok(ours_run.await?)
    })
    .await?;
    within(
        Duration::from_secs(30),
        "kube-runtime's controller's end",
        async { Ok(theirs_run.await?) },
    )
    .await?;

    let (ours_total, theirs_total) = (ours.snapshot(), theirs.snapshot());
    let report = table(&rows, &ours_total, &theirs_total);
    println!("e2e_controller_side_by_side:\n{report}");
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e_controller_side_by_side.txt");
    std::fs::write(&path, &report).with_context(|| format!("writing {}", path.display()))?;

    check_calls(&rows, &ours_total, &theirs_total, &report)?;

    // Leave little behind (no controller runs now to remove finalizers).
    for side in sides {
        within(STEP, "cleaning up", clean_up(side)).await?;
    }
    within(STEP, "deleting the namespaces", async {
        ours_ns.delete().await?;
        theirs_ns.delete().await
    })
    .await
}

/// Takes the finalizers off `side`'s parents and deletes its children; the
/// parents go with the namespace.
async fn clean_up(side: &Side) -> Result<()> {
    let parents = side.parents();
    for parent in parents.list(&ListParams::default()).await?.items {
        parents
            .patch(
                &parent.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await?;
    }
    side.children()
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    Ok(())
}
