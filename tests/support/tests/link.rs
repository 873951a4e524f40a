//! LK1–LK3: a client's link to the server cut and healed, on tokio's paused
//! clock through the in-process client.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use kube_informer_testing::{FakeApiServer, HeldRequest};

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("default".into());
    cm.metadata.name = Some(name.into());
    cm
}

// LK1: a cut link holds its client's requests; other clients go on.
#[tokio::test(start_paused = true)]
async fn lk1_a_cut_link_holds_requests_and_other_clients_go_on() {
    let server = FakeApiServer::start().await;
    let (client, link) = server.linked_client();
    let cut_off: Api<ConfigMap> = Api::default_namespaced(client);
    let other: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());

    link.cut();
    assert!(link.is_cut());
    let create = tokio::time::timeout(
        Duration::from_secs(60),
        cut_off.create(&PostParams::default(), &cm("held")),
    )
    .await;
    assert!(create.is_err(), "no answer while cut");
    assert!(server.objects::<ConfigMap>().is_empty(), "not applied");
    assert!(
        server.requests().is_empty(),
        "the request did not reach the server"
    );
    other
        .create(&PostParams::default(), &cm("other"))
        .await
        .unwrap();
    assert_eq!(server.objects::<ConfigMap>().len(), 1);
}

// LK2, LK3: after the heal, held requests reach the server in the order
// sent, abandoned ones included, and answer the clients that still wait.
#[tokio::test(start_paused = true)]
async fn lk2_held_requests_land_in_order_after_the_heal_even_if_abandoned() {
    let server = FakeApiServer::start().await;
    let (client, link) = server.linked_client();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    link.cut();
    let abandoned = tokio::time::timeout(
        Duration::from_secs(1),
        api.create(&PostParams::default(), &cm("first")),
    )
    .await;
    assert!(abandoned.is_err());
    let waiting = tokio::spawn({
        let api = api.clone();
        async move { api.create(&PostParams::default(), &cm("first")).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(link.held().len(), 2);
    assert!(link.held().iter().all(|h| h.status.is_none()));

    link.heal();
    let answer = waiting.await.unwrap();
    assert!(
        matches!(answer, Err(kube::Error::Api(ref status)) if status.code == 409),
        "the abandoned create landed first: {answer:?}"
    );
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(
        link.held(),
        [
            HeldRequest {
                method: "POST".into(),
                path: path.into(),
                status: Some(201)
            },
            HeldRequest {
                method: "POST".into(),
                path: path.into(),
                status: Some(409)
            },
        ]
    );
    assert!(!link.is_cut());
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    assert_eq!(link.held().len(), 2, "nothing is held after the heal");
}
