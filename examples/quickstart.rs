//! An informer at work, no cluster needed.
//!
//! Starts the fake API server in this process, runs an informer on its
//! ConfigMaps, creates, updates and deletes a few, and prints what two
//! subscribers see: `watcher` (every change) and `auditor` (also a resync
//! every second, so you see one).
//!
//! ```sh
//! cargo run --example quickstart
//! ```

use std::{sync::Arc, time::Duration};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{Informer, Notification, ObjectKey, dispatch::SubscribeOptions};
use kube_informer_testing::FakeApiServer;

fn config_map(name: &str, color: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("color".to_string(), color.to_string())].into()),
        ..Default::default()
    }
}

fn key(object: &Arc<ConfigMap>) -> String {
    ObjectKey::from_object(&**object).map_or_else(|e| format!("<{e}>"), |k| k.to_string())
}

fn color(object: &Arc<ConfigMap>) -> &str {
    object
        .data
        .as_ref()
        .and_then(|d| d.get("color"))
        .map_or("?", String::as_str)
}

/// One notification in plain words.
fn describe(n: &Notification<ConfigMap>) -> String {
    match n {
        Notification::Added {
            object,
            in_initial_list: true,
        } => format!(
            "Added   {} (color {}), from the initial list",
            key(object),
            color(object)
        ),
        Notification::Added { object, .. } => {
            format!("Added   {} (color {})", key(object), color(object))
        }
        Notification::Updated {
            new, resync: true, ..
        } => format!("Updated {} by a resync: nothing changed", key(new)),
        Notification::Updated { old, new, .. } => format!(
            "Updated {}: color {} -> {}",
            key(new),
            color(old),
            color(new)
        ),
        Notification::Deleted {
            object,
            final_state_unknown,
        } => format!(
            "Deleted {}{}",
            key(object),
            if *final_state_unknown {
                " (missed by the watch, found by a relist)"
            } else {
                ""
            }
        ),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = FakeApiServer::start().await;
    server.create(&config_map("settings", "blue"))?;
    server.create(&config_map("features", "green"))?;
    println!("fake API server on {}", server.url());

    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = Informer::builder(api).strip_managed_fields().build();
    let watcher = informer.subscribe(SubscribeOptions::default())?;
    let auditor = informer.subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))?;
    let run = tokio::spawn(informer.run());

    // Both subscriptions as one stream, each item tagged with its reader.
    let printer = tokio::spawn(
        stream::select(
            watcher.map(|n| ("watcher", n)),
            auditor.map(|n| ("auditor", n)),
        )
        .for_each(|(who, n)| async move { println!("[{who}] {}", describe(&n)) }),
    );

    informer.wait_until_synced().await?;
    let store = informer.store();
    println!(
        "synced: {} ConfigMaps cached; default/settings is {}",
        store.len(),
        store
            .get_by(Some("default"), "settings")
            .map_or("missing", |cm| if cm.data.is_some() {
                "there"
            } else {
                "empty"
            })
    );

    let pause = || tokio::time::sleep(Duration::from_millis(200));
    pause().await;
    println!("-- create default/theme");
    server.create(&config_map("theme", "red"))?;
    pause().await;
    println!("-- update default/settings");
    let mut settings = server
        .objects::<ConfigMap>()
        .into_iter()
        .find(|cm| cm.metadata.name.as_deref() == Some("settings"))
        .ok_or("settings vanished")?;
    settings.data = Some([("color".to_string(), "purple".to_string())].into());
    server.update(&settings)?;
    pause().await;
    println!("-- delete default/features");
    server.delete::<ConfigMap>(Some("default"), "features")?;

    println!("-- waiting for a resync round");
    tokio::time::sleep(Duration::from_millis(1300)).await;

    informer.stop();
    run.await??;
    printer.await?;
    let mut cached: Vec<_> = informer
        .store()
        .list_keys()
        .iter()
        .map(ToString::to_string)
        .collect();
    cached.sort();
    println!(
        "stopped; the cache held {cached:?}; {} errors",
        informer.metrics().errors
    );
    Ok(())
}
