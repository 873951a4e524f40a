//! Server-side apply through a real `kube::Client`, checked against what
//! kube-apiserver 1.34 answered to the same requests (SSA rules in
//! `src/write/apply.rs`, GEN rules in `src/server_fields.rs`).

use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use kube_informer_testing::FakeApiServer;
use serde_json::{Value, json};

fn cm_apply(data: Value) -> Patch<Value> {
    Patch::Apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm"}, "data": data,
    }))
}

fn managed(object: &ConfigMap) -> Vec<(String, String, Value)> {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.fields_v1
                    .as_ref()
                    .map(|f| f.0.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn sa2_sa3_sa4_sa6_two_managers_conflict_force_and_removal() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");

    // SA2: apply creates, the manager owns what it applied.
    let created = api
        .patch(
            "cm",
            &PatchParams::apply("m1"),
            &cm_apply(json!({"a": "1", "b": "2"})),
        )
        .await
        .unwrap();
    assert_eq!(
        managed(&created),
        [(
            "m1".into(),
            "Apply".into(),
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        )]
    );
    assert!(created.metadata.creation_timestamp.is_some());
    // GN1: a created object gets a UUID-shaped uid.
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 36, "UUID-shaped: {uid}");

    // SA3: another manager changing m1's field is refused, with the API
    // server's message and causes; nothing is written.
    let rv = server.resource_version();
    let err = api
        .patch(
            "cm",
            &PatchParams::apply("m2"),
            &cm_apply(json!({"a": "9", "b": "3"})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"m1\":\n- .data.a\n- .data.b"
    );
    assert_eq!(server.resource_version(), rv);

    // SA4: forced, the field moves to m2.
    let forced = api
        .patch(
            "cm",
            &PatchParams::apply("m2").force(),
            &cm_apply(json!({"a": "9"})),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");
    assert_eq!(
        managed(&forced),
        [
            ("m1".into(), "Apply".into(), json!({"f:data": {"f:b": {}}})),
            ("m2".into(), "Apply".into(), json!({"f:data": {"f:a": {}}})),
        ]
    );

    // SA6: m1 applies nothing more: its field b goes, m2's a stays.
    let after = api
        .patch(
            "cm",
            &PatchParams::apply("m1"),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        after.data.unwrap(),
        [("a".to_owned(), "9".to_owned())].into()
    );

    // SA7: the same apply again writes nothing.
    let rv = server.resource_version();
    api.patch(
        "cm",
        &PatchParams::apply("m2"),
        &cm_apply(json!({"a": "9"})),
    )
    .await
    .unwrap();
    assert_eq!(server.resource_version(), rv);
}

#[tokio::test]
async fn sa3_update_managers_are_named_with_their_api_version() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("cm".into());
    cm.data = Some([("a".to_owned(), "1".to_owned())].into());
    let pp = PostParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    let created = api.create(&pp, &cm).await.unwrap();
    // An update owns the map it created ("." in fieldsV1), as the API server records.
    assert_eq!(
        managed(&created),
        [(
            "editor".into(),
            "Update".into(),
            json!({"f:data": {".": {}, "f:a": {}}})
        )]
    );
    let err = api
        .patch(
            "cm",
            &PatchParams::apply("ssa"),
            &cm_apply(json!({"a": "2"})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.a"
    );
}

#[tokio::test]
async fn sa5_containers_merge_by_name_and_gn3_gn4_generation_counts_spec_changes() {
    let server = FakeApiServer::start().await;
    let api: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment = |image: &str, env: Value| {
        Patch::Apply(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": image, "env": env}]}}}
        }))
    };
    let created = api
        .patch(
            "web",
            &PatchParams::apply("mgr"),
            &deployment("nginx", json!([{"name": "A", "value": "1"}])),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let fields = &created.metadata.managed_fields.as_ref().unwrap()[0]
        .fields_v1
        .as_ref()
        .unwrap()
        .0;
    // The shape kube-apiserver 1.34 recorded for the same apply.
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {},
            "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}})
    );
    assert_eq!(
        fields["f:spec"]["f:selector"],
        json!({}),
        "a label selector is atomic"
    );

    // A sidecar added by another manager survives mgr's next apply.
    let sidecar = Patch::Apply(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}
    }));
    let with_sidecar = api
        .patch("web", &PatchParams::apply("injector"), &sidecar)
        .await
        .unwrap();
    assert_eq!(with_sidecar.metadata.generation, Some(2));
    let updated = api
        .patch(
            "web",
            &PatchParams::apply("mgr"),
            &deployment("httpd", json!([{"name": "A", "value": "1"}])),
        )
        .await
        .unwrap();
    let names: Vec<_> = updated
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("app".into(), "httpd".into()),
            ("side".into(), "busybox".into())
        ]
    );
    assert_eq!(updated.metadata.generation, Some(3));

    // A label change is not a spec change.
    let labelled = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"l": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(3));
}

#[tokio::test]
async fn sa1_wrong_kind_and_name_are_400() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let secret =
        Patch::Apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm"}}));
    let err = api
        .patch("cm", &PatchParams::apply("m"), &secret)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "invalid object type: /v1, Kind=Secret")
    );
    let other = Patch::Apply(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
    );
    let err = api
        .patch("cm", &PatchParams::apply("m"), &other)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 400);
}

#[tokio::test]
async fn dr1_dry_run_answers_as_if_done_and_stores_nothing() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let rv = server.resource_version();
    let dry = PatchParams::apply("m").dry_run();
    let answer = api
        .patch("cm", &dry, &cm_apply(json!({"a": "1"})))
        .await
        .unwrap();
    assert_eq!(answer.data.unwrap()["a"], "1");
    assert_eq!(answer.metadata.resource_version, None);
    assert_eq!(server.resource_version(), rv);
    assert!(api.get_opt("cm").await.unwrap().is_none());
}

#[tokio::test]
async fn mf1_an_update_without_field_manager_or_user_agent_is_recorded_as_unknown() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "cm"}, "data": {"k": "v"},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let managers: Vec<_> = managed(&created).into_iter().map(|(m, _, _)| m).collect();
    assert_eq!(managers, ["unknown"]);
    // A named manager is recorded as named.
    let pp = PatchParams {
        field_manager: Some("editor".into()),
        ..PatchParams::default()
    };
    let patched = api
        .patch("cm", &pp, &Patch::Merge(json!({"data": {"k2": "v"}})))
        .await
        .unwrap();
    let mut managers: Vec<_> = managed(&patched).into_iter().map(|(m, _, _)| m).collect();
    managers.sort();
    assert_eq!(managers, ["editor", "unknown"]);
}
