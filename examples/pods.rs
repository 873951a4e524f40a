//! Every Pod of a real cluster, printed as it changes.
//!
//! Uses the cluster of your KUBECONFIG (or the in-cluster config); stop with
//! Ctrl-C.
//!
//! ```sh
//! cargo run --example pods
//! # the informer's story: started, synced, relists, one warning per error
//! RUST_LOG=kube_informer=info cargo run --example pods
//! # and each list, watch, backoff and resync
//! RUST_LOG=kube_informer=debug cargo run --example pods
//! ```
//!
//! On Ctrl-C it prints what the informer counted (`Informer::metrics`).

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};
use kube_informer::{Informer, Notification, dispatch::SubscribeOptions};

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Unknown")
}

#[tokio::main]
async fn main() {
    // Log lines carry the spans they happen in: `informer{plural=pods ..}`
    // for the run, `source{phase="watch" ..}` for each list and watch.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "kube_informer=info".into()),
        )
        .init();
    let client = match Client::try_default().await {
        Ok(client) => client,
        Err(error) => {
            eprintln!(
                "no Kubernetes cluster configuration found ({error}).\n\
                 Point KUBECONFIG at a cluster, or try `cargo run --example quickstart`, \
                 which needs none."
            );
            std::process::exit(2);
        }
    };
    let informer = Informer::builder(Api::<Pod>::all(client))
        // Not needed here, and often the biggest part of a Pod.
        .strip_managed_fields()
        .on_error(|error| eprintln!("error (the informer retries): {error}"))
        .build();
    let subscription = informer
        .subscribe(SubscribeOptions::default().name("printer"))
        .expect("a new informer accepts subscribers");
    let run = tokio::spawn(informer.run());

    let print = subscription.for_each(|n| async move {
        match n {
            Notification::Added {
                object,
                in_initial_list,
            } => println!(
                "{} {}/{} {}",
                if in_initial_list {
                    "listed "
                } else {
                    "added  "
                },
                object.namespace().unwrap_or_default(),
                object.name_any(),
                phase(&object)
            ),
            Notification::Updated {
                new, resync: false, ..
            } => println!(
                "updated {}/{} {}",
                new.namespace().unwrap_or_default(),
                new.name_any(),
                phase(&new)
            ),
            Notification::Updated { .. } => {}
            Notification::Deleted { object, .. } => println!(
                "deleted {}/{}",
                object.namespace().unwrap_or_default(),
                object.name_any()
            ),
        }
    });
    tokio::select! {
        () = print => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let metrics = informer.metrics();
    println!(
        "watched {} events, {} relists, {} errors; synced in {:?}",
        metrics
            .source
            .watch_events
            .into_iter()
            .map(|(_, n)| n)
            .sum::<u64>(),
        metrics
            .source
            .relists
            .into_iter()
            .map(|(_, n)| n)
            .sum::<u64>(),
        metrics.errors,
        metrics.store.time_to_first_sync,
    );
    informer.stop();
    match run.await {
        Ok(Ok(())) => {
            let store = informer.store();
            println!(
                "stopped; {} pods cached, {} in kube-system",
                store.len(),
                store.namespace("kube-system").list().len()
            );
        }
        Ok(Err(error)) => eprintln!("informer failed: {error}"),
        Err(error) => eprintln!("informer task failed: {error}"),
    }
}
