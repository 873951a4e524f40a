//! Every Pod of a real cluster, printed as it changes.
//!
//! Uses the cluster of your KUBECONFIG (or the in-cluster config); stop with
//! Ctrl-C.
//!
//! ```sh
//! cargo run --example pods
//! ```

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
        .subscribe(SubscribeOptions::default())
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
