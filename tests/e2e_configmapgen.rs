//! `examples/configmapgen.rs` as a process against a real kube-apiserver:
//! the test installs the example's CRD (`ConfigMapGenerator::crd()`, the
//! example's own type), starts the built example with the harness's admin
//! kubeconfig, and checks what a user of it relies on:
//!
//! - a generator gets a ConfigMap of its name holding its content, written
//!   by server-side apply, with a controller owner reference to it (C2's
//!   `owns`: the reference is what maps ConfigMap changes back);
//! - an edit of the generator is followed; a ConfigMap deleted by hand comes
//!   back (a change of an owned object reconciles its owner, C2);
//! - Enter on stdin reconciles every generator (`reconcile_all_on`, C2);
//! - SIGTERM stops it: it exits 0 within a few seconds (C7).
//!
//! The build of the example is the caller's: `scripts/suites/e2e.sh` and
//! `scripts/suites/examples.sh` run `cargo build --example configmapgen`
//! first. Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set.

use crate::e2e_support;

#[allow(dead_code)] // the example's `main` and reconciler are not called here
#[path = "../examples/configmapgen.rs"]
mod configmapgen;

use std::{
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context, Result, bail, ensure};
use configmapgen::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use e2e_support::{Access, Scene, within};
use k8s_openapi::{
    api::core::v1::ConfigMap,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResourceExt, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

/// How long one step may take to show.
const STEP: Duration = Duration::from_secs(30);

/// `target/<profile>/examples/configmapgen`, next to this test's binary.
fn example_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("the test binary lies in <target>/<profile>/deps")?;
    let binary = profile.join("examples").join("configmapgen");
    ensure!(
        binary.exists(),
        "{} is missing: build it first with `cargo build --all-features --example configmapgen`",
        binary.display()
    );
    Ok(binary)
}

/// Applies the example's CRD and waits until the API server serves it.
async fn install_crd(client: &kube::Client) -> Result<()> {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let crd = ConfigMapGenerator::crd();
    let name = crd.name_any();
    crds.patch(
        &name,
        &PatchParams::apply("kube-informer-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .context("applying the ConfigMapGenerator CRD")?;
    within(STEP, "the CRD to be established", async {
        loop {
            let crd = crds.get(&name).await?;
            let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
            if conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// Polls `check` every 100 ms until it holds or [`STEP`] passes; the last
/// reason it gave names what was missing.
async fn until<F, Fut>(what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>>>,
{
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        let missing = match check().await? {
            None => return Ok(()),
            Some(missing) => missing,
        };
        if tokio::time::Instant::now() > deadline {
            bail!("{what}: not after {STEP:?}: {missing}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `None` when the ConfigMap `name` holds `content` and is controlled by
/// `generator`, written by the example's server-side apply; else what
/// differs.
async fn generated(
    api: &Api<ConfigMap>,
    name: &str,
    content: &str,
    generator: &ConfigMapGenerator,
) -> Result<Option<String>> {
    let Some(cm) = api.get_opt(name).await? else {
        return Ok(Some(format!("no ConfigMap {name}")));
    };
    let data = cm.data.clone().unwrap_or_default();
    if data.get("content").map(String::as_str) != Some(content) {
        return Ok(Some(format!("data {data:?}, want content={content}")));
    }
    let owner = cm
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true));
    let expected = (
        "nullable.se/v1",
        "ConfigMapGenerator",
        generator.name_any(),
        generator.uid(),
    );
    match owner {
        Some(o)
            if (
                o.api_version.as_str(),
                o.kind.as_str(),
                o.name.clone(),
                Some(o.uid.clone()),
            ) == expected => {}
        other => {
            return Ok(Some(format!(
                "controller owner {other:?}, want {expected:?}"
            )));
        }
    }
    let applied = cm.managed_fields().iter().any(|m| {
        m.manager.as_deref() == Some("configmapgen.kube-informer.dev")
            && m.operation.as_deref() == Some("Apply")
    });
    Ok((!applied).then(|| format!("not applied by the example: {:?}", cm.managed_fields())))
}

#[tokio::test]
async fn e2e_configmapgen_c2_c7_owns_its_configmap_follows_enter_and_stops_on_sigterm() -> Result<()>
{
    let Some(Scene {
        client, ns, _hold, ..
    }) = Scene::start("e2e_configmapgen", Access::Shared).await?
    else {
        return Ok(());
    };
    let kubeconfig = std::env::var_os(e2e_support::KUBECONFIG_VAR).context("set by the harness")?;
    install_crd(&client).await?;

    let mut child = Command::new(example_binary()?)
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting the example")?;
    let output = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let (stdout, output) = (child.stdout.take().context("piped")?, output.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("configmapgen: {line}");
                output.lock().unwrap().push(line);
            }
        })
    };
    let key = format!("{}/gen", ns.name);
    let reconciles = || {
        let output = output.lock().unwrap();
        output
            .iter()
            .filter(|l| l.contains("reconciled") && l.contains(&key))
            .count()
    };

    let generators = Api::<ConfigMapGenerator>::namespaced(client.clone(), &ns.name);
    let cms = ns.configmaps();
    let spec = |content: &str| ConfigMapGeneratorSpec {
        content: content.to_owned(),
    };
    let generator = generators
        .create(
            &PostParams::default(),
            &ConfigMapGenerator::new("gen", spec("hello")),
        )
        .await
        .context("creating the generator")?;
    until("the generator's ConfigMap", || {
        generated(&cms, "gen", "hello", &generator)
    })
    .await?;

    let edit = serde_json::json!({ "spec": { "content": "world" } });
    generators
        .patch("gen", &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    until("the ConfigMap following the edit", || {
        generated(&cms, "gen", "world", &generator)
    })
    .await?;

    let first = cms.get("gen").await?.uid();
    cms.delete("gen", &DeleteParams::default()).await?;
    until("the ConfigMap deleted by hand made again", || async {
        match cms.get_opt("gen").await? {
            Some(cm) if cm.uid() != first => generated(&cms, "gen", "world", &generator).await,
            _ => Ok(Some("not made again yet".to_owned())),
        }
    })
    .await?;

    // Quiet first (the writes above trigger reconciles of their own), then
    // Enter: one more reconcile of the generator. Quiet is a 2 s window with
    // no reconcile, observed within STEP; a reconciler that never settles
    // fails here rather than hanging the suite.
    let quiet_by = tokio::time::Instant::now() + STEP;
    let mut before = reconciles();
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = reconciles();
        if now == before {
            break;
        }
        ensure!(
            tokio::time::Instant::now() < quiet_by,
            "the example kept reconciling for {STEP:?} ({now} reconciles) without a 2 s pause"
        );
        before = now;
    }
    let stdin = child.stdin.as_mut().context("piped stdin")?;
    stdin.write_all(b"\n").await?;
    stdin.flush().await?;
    until("a reconcile after Enter", || async {
        Ok((reconciles() <= before).then(|| format!("{before} reconciles, none after Enter")))
    })
    .await?;

    // SIGTERM: a graceful stop, exit status 0.
    let pid = child.id().context("the example runs")?;
    let signalled = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await?;
    ensure!(signalled.success(), "kill -TERM {pid}: {signalled}");
    let status = tokio::time::timeout(STEP, child.wait())
        .await
        .with_context(|| format!("the example did not exit within {STEP:?} of SIGTERM"))??;
    ensure!(
        status.success(),
        "the example exited with {status} after SIGTERM"
    );
    reader.await?;
    ensure!(
        output
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("configmapgen: stopped")),
        "the example did not say it stopped"
    );

    generators.delete("gen", &DeleteParams::default()).await?;
    ns.delete().await
}
