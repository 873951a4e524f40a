//! Two informers, Deployments and Pods, composed in one async loop: for
//! every change it reports how many Pods each Deployment's `app` label
//! selects, the way a small operator would reconcile.
//!
//! ```sh
//! cargo run --example operator            # the cluster of your KUBECONFIG; Ctrl-C stops
//! cargo run --example operator -- --fake  # an in-process fake API server, no cluster
//! ```

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{Api, Client, ResourceExt, api::ObjectMeta};
use kube_informer::{
    Informer, Notification, NotificationStreamExt, dispatch::SubscribeOptions, store::Store,
};
use kube_informer_testing::FakeApiServer;
use tokio_util::sync::CancellationToken;

const BY_APP: &str = "by-app";

fn app_label<K: ResourceExt>(object: &K) -> Vec<String> {
    object.labels().get("app").cloned().into_iter().collect()
}

fn namespaced_app(namespace: Option<String>, app: &str) -> String {
    format!("{}/{app}", namespace.unwrap_or_default())
}

/// Looks at one Deployment and the Pods its app label selects.
fn reconcile(deployment: &Deployment, pods: &Store<Pod>) {
    let Some(app) = app_label(deployment).pop() else {
        return;
    };
    let key = namespaced_app(deployment.namespace(), &app);
    let selected = pods.by_index(BY_APP, &key).map(|p| p.len()).unwrap_or(0);
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    println!(
        "reconcile {}: wants {wanted} pods, sees {selected}{}",
        deployment.name_any(),
        if selected as i32 == wanted {
            ""
        } else {
            " (not there yet)"
        }
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fake = std::env::args().any(|a| a == "--fake");
    let (client, server) = if fake {
        let server = FakeApiServer::start().await;
        (server.client(), Some(Arc::new(server)))
    } else {
        match Client::try_default().await {
            Ok(client) => (client, None),
            Err(error) => {
                eprintln!("no cluster configuration found ({error}); try `--fake`");
                std::process::exit(2);
            }
        }
    };

    let stop = CancellationToken::new();
    let deployments = Informer::builder(Api::<Deployment>::all(client.clone()))
        .cancellation_token(stop.clone())
        .build();
    // Pods filed under "namespace/app" so a Deployment finds its Pods
    // without scanning them all.
    let pods = Informer::builder(Api::<Pod>::all(client))
        .indexer(BY_APP, |pod: &Pod| {
            app_label(pod)
                .into_iter()
                .map(|app| namespaced_app(pod.namespace(), &app))
                .collect()
        })
        .cancellation_token(stop.clone())
        .build();
    let mut deployment_events = deployments
        .subscribe(SubscribeOptions::default())?
        .changed_only();
    let mut pod_events = pods.subscribe(SubscribeOptions::default())?.changed_only();
    let runs = [tokio::spawn(deployments.run()), tokio::spawn(pods.run())];

    if let Some(server) = &server {
        tokio::spawn(demo_changes(Arc::clone(server), stop.clone()));
    } else {
        let stop = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        });
    }

    let pod_store = pods.store();
    let deployment_store = deployments.store();
    use futures::StreamExt;
    loop {
        tokio::select! {
            Some(n) = deployment_events.next() => match &n {
                Notification::Deleted { object, .. } => println!("deployment {} is gone", object.name_any()),
                _ => reconcile(n.object(), &pod_store),
            },
            Some(n) = pod_events.next() => {
                // A Pod changed: reconcile the Deployments selecting it.
                let pod = n.object();
                for app in app_label(&**pod) {
                    for deployment in deployment_store.list() {
                        if deployment.namespace() == pod.namespace() && app_label(&*deployment).contains(&app) {
                            reconcile(&deployment, &pod_store);
                        }
                    }
                }
            }
            else => break,
        }
    }
    for run in runs {
        run.await??;
    }
    println!("stopped");
    Ok(())
}

/// What happens on the fake server: a Deployment scales up and back down.
async fn demo_changes(server: Arc<FakeApiServer>, stop: CancellationToken) {
    let step = || tokio::time::sleep(Duration::from_millis(200));
    let labels = || Some([("app".to_string(), "web".to_string())].into());
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("web".into()),
            labels: labels(),
            ..Default::default()
        },
        ..Default::default()
    };
    deployment.spec = Some(k8s_openapi::api::apps::v1::DeploymentSpec {
        replicas: Some(2),
        ..Default::default()
    });
    let pod = |name: &str| Pod {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: labels(),
            ..Default::default()
        },
        ..Default::default()
    };
    let result: Result<(), kube_informer_testing::StoreError> = async {
        step().await;
        server.create(&deployment)?;
        step().await;
        server.create(&pod("web-1"))?;
        step().await;
        server.create(&pod("web-2"))?;
        step().await;
        server.delete::<Pod>(Some("default"), "web-1")?;
        step().await;
        server.delete::<Deployment>(Some("default"), "web")?;
        step().await;
        Ok(())
    }
    .await;
    if let Err(error) = result {
        eprintln!("fake server refused a change: {error}");
    }
    stop.cancel();
}
