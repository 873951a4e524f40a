//! The `--fake` run: namespaces and sources on the in-process fake API
//! server, changes made over HTTP while the operator runs (as `kubectl`
//! would make them), and after each change the copies the server holds,
//! printed once they are what the change asks for.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kube_informer_testing::{FakeApiServer, StoreError};
use serde_json::json;

use super::mirror::Labels;

/// How long one step may take to converge.
const STEP_LIMIT: Duration = Duration::from_secs(20);

fn labelled(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn config_map(name: &str, labels: &[(&str, &str)], color: &str) -> ConfigMap {
    ConfigMap {
        metadata: labelled(name, Some("apps"), labels),
        data: Some([("color".to_owned(), color.to_owned())].into()),
        ..Default::default()
    }
}

/// Before the operator starts: a copy whose source no longer exists (it
/// was deleted while the operator was down). The start-up sweep removes it.
pub fn before_start(server: &FakeApiServer, labels: &Labels) -> Result<(), StoreError> {
    let orphan = ConfigMap {
        metadata: labelled(
            "apps.retired",
            Some("team-a"),
            &[(&labels.copy_of, "apps.retired")],
        ),
        ..Default::default()
    };
    server.create(&orphan)?;
    Ok(())
}

/// The copies on the server, as `namespace/name{key=value,…}`, sorted.
fn copies_on(server: &FakeApiServer, labels: &Labels) -> Vec<String> {
    let mut copies: Vec<String> = server
        .objects::<ConfigMap>()
        .iter()
        .filter(|cm| cm.labels().contains_key(&labels.copy_of))
        .map(|cm| {
            let data: Vec<String> = cm
                .data
                .iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "{}/{}{{{}}}",
                cm.namespace().unwrap_or_default(),
                cm.name_any(),
                data.join(",")
            )
        })
        .collect();
    copies.sort();
    copies
}

/// What the copies should be, computed from the server's objects apart
/// from the operator's code: each labelled source, in each labelled
/// namespace but its own.
fn expected(server: &FakeApiServer, labels: &Labels) -> Vec<String> {
    let targets: Vec<String> = server
        .objects::<Namespace>()
        .iter()
        .filter(|ns| ns.labels().get(&labels.target).is_some_and(|v| v == "true"))
        .map(|ns| ns.name_any())
        .collect();
    let mut copies = Vec::new();
    for source in server.objects::<ConfigMap>() {
        if source
            .labels()
            .get(&labels.source)
            .is_none_or(|v| v != "true")
        {
            continue;
        }
        let home = source.namespace().unwrap_or_default();
        let data: BTreeMap<_, _> = source.data.clone().unwrap_or_default();
        let data: Vec<String> = data.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for ns in targets.iter().filter(|ns| **ns != home) {
            copies.push(format!(
                "{ns}/{home}.{}{{{}}}",
                source.name_any(),
                data.join(",")
            ));
        }
    }
    copies.sort();
    copies
}

/// Waits until the copies are what the server's sources and namespaces
/// ask for, then prints them under `step`.
async fn converged(server: &FakeApiServer, labels: &Labels, step: &str) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + STEP_LIMIT;
    loop {
        let (have, want) = (copies_on(server, labels), expected(server, labels));
        if have == want {
            println!(
                "{step}: {}",
                if have.is_empty() {
                    "(no copies)".to_owned()
                } else {
                    have.join(" ")
                }
            );
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "{step}: not converged after {STEP_LIMIT:?}: have {have:?}, want {want:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn label_patch(key: &str, value: Option<&str>) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"metadata": {"labels": {key: value}}}))
}

/// The scenario; an error names the step that did not converge.
pub async fn run(
    server: &FakeApiServer,
    client: &Client,
    labels: &Labels,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let apps: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let post = PostParams::default();
    let patch = PatchParams::default();
    let target = [(labels.target.as_str(), "true")];
    let source = [(labels.source.as_str(), "true")];

    for (name, labels) in [
        ("apps", &[][..]),
        ("team-a", &target[..]),
        ("team-b", &target[..]),
        ("team-c", &[][..]),
    ] {
        namespaces
            .create(
                &post,
                &Namespace {
                    metadata: labelled(name, None, labels),
                    ..Default::default()
                },
            )
            .await?;
    }
    apps.create(&post, &config_map("settings", &source, "blue"))
        .await?;
    apps.create(&post, &config_map("features", &source, "on"))
        .await?;
    apps.create(&post, &config_map("private", &[], "secret"))
        .await?;
    converged(server, labels, "1 start (orphan swept)").await?;

    apps.patch(
        "settings",
        &patch,
        &Patch::Merge(json!({"data": {"color": "purple"}})),
    )
    .await?;
    converged(server, labels, "2 source data edited").await?;

    namespaces
        .patch("team-c", &patch, &label_patch(&labels.target, Some("true")))
        .await?;
    converged(server, labels, "3 team-c labelled a target").await?;

    Api::<ConfigMap>::namespaced(client.clone(), "team-b")
        .delete("apps.features", &DeleteParams::default())
        .await?;
    converged(server, labels, "4 a copy deleted by hand is restored").await?;

    apps.patch("features", &patch, &label_patch(&labels.source, None))
        .await?;
    converged(server, labels, "5 features lost its mirror label").await?;

    namespaces
        .patch("team-a", &patch, &label_patch(&labels.target, None))
        .await?;
    converged(server, labels, "6 team-a lost its target label").await?;

    apps.delete("settings", &DeleteParams::default()).await?;
    converged(server, labels, "7 settings deleted").await?;
    Ok(())
}
