//! The exact answers of writes the API server refuses or trims, as sent on
//! the wire: `Status` details (SD1, SD2, WR3), empty metadata not stored
//! (WR4), bodies that do not decode and unknown patch types (WR5), the
//! order of a `PUT`'s checks (WR6).

use kube_informer_testing::FakeApiServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// Sends one request as raw HTTP/1.1 and returns the status code and the
/// JSON body, so that the test sees exactly what a client would.
async fn send(
    server: &FakeApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let address = server.url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the server answers within 60 s")
    .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (code, serde_json::from_str(&body).unwrap())
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

async fn post(server: &FakeApiServer, path: &str, body: Value) -> (u16, Value) {
    send(server, "POST", path, "application/json", &body.to_string()).await
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1}})
}

async fn server_with_widgets() -> FakeApiServer {
    let server = FakeApiServer::start().await;
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    server
        .register_crd_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": open, "status": open}}}
                }]
            }
        }))
        .unwrap();
    server
}

#[tokio::test]
async fn sd2_wr3_an_error_about_an_object_names_it() {
    let server = server_with_widgets().await;
    let (code, body) = send(&server, "GET", &format!("{CONFIGMAPS}/a"), "", "").await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "configmaps \"a\" not found");
    assert_eq!(body["details"], json!({"name": "a", "kind": "configmaps"}));

    post(&server, CONFIGMAPS, configmap("a")).await;
    let (code, body) = post(&server, CONFIGMAPS, configmap("a")).await;
    assert_eq!((code, &body["reason"]), (409, &json!("AlreadyExists")));
    assert_eq!(body["details"], json!({"name": "a", "kind": "configmaps"}));

    let mut stale = configmap("a");
    stale["metadata"]["resourceVersion"] = json!("1");
    let (code, body) = send(
        &server,
        "PUT",
        &format!("{CONFIGMAPS}/a"),
        "application/json",
        &stale.to_string(),
    )
    .await;
    assert_eq!((code, &body["reason"]), (409, &json!("Conflict")));
    assert_eq!(body["details"], json!({"name": "a", "kind": "configmaps"}));

    // A custom resource is called by its plural and group.
    let (code, body) = send(&server, "DELETE", &format!("{WIDGETS}/w"), "", "").await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "widgets.example.com \"w\" not found");
    assert_eq!(
        body["details"],
        json!({"name": "w", "group": "example.com", "kind": "widgets"})
    );
    post(&server, WIDGETS, widget("w")).await;
    let (code, body) = post(&server, WIDGETS, widget("w")).await;
    assert_eq!(code, 409);
    assert_eq!(body["message"], "widgets.example.com \"w\" already exists");

    // A built-in kind outside the core group is qualified too.
    let (code, body) = send(
        &server,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/d",
        "",
        "",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "deployments.apps \"d\" not found");
    assert_eq!(
        body["details"],
        json!({"name": "d", "group": "apps", "kind": "deployments"})
    );

    // A JSON patch that does not apply: empty details.
    let (code, body) = send(
        &server,
        "PATCH",
        &format!("{CONFIGMAPS}/a"),
        "application/json-patch+json",
        r#"[{"op": "test", "path": "/data/k", "value": "other"}]"#,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["details"], json!({}));

    // A URL nothing is served at: empty details.
    let (code, body) = send(&server, "GET", &format!("{CONFIGMAPS}/a/status"), "", "").await;
    assert_eq!(code, 404);
    assert_eq!(body["details"], json!({}));
}

#[tokio::test]
async fn sd1_wr3_a_validation_failure_names_the_kind_and_each_field() {
    let server = server_with_widgets().await;
    let (code, body) = post(
        &server,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(
        body["details"],
        json!({"kind": "ConfigMap", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }]})
    );

    // An apply without a field manager: the options are invalid.
    post(&server, CONFIGMAPS, configmap("a")).await;
    let (code, body) = send(
        &server,
        "PATCH",
        &format!("{CONFIGMAPS}/a"),
        "application/apply-patch+yaml",
        &configmap("a").to_string(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["details"],
        json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager",
        }]})
    );

    // A custom resource replaced without a resourceVersion (WR1).
    post(&server, WIDGETS, widget("w")).await;
    let (code, body) = send(
        &server,
        "PUT",
        &format!("{WIDGETS}/w"),
        "application/json",
        &widget("w").to_string(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "widgets.example.com \"w\" is invalid: metadata.resourceVersion: Invalid value: 0: \
         must be specified for an update"
    );
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "metadata.resourceVersion"
    );

    // A finalizer added while the object is being deleted: the API server
    // reports the same cause twice, and the message once.
    let mut held = widget("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    post(&server, WIDGETS, held).await;
    send(&server, "DELETE", &format!("{WIDGETS}/held"), "", "").await;
    let (code, body) = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/held"),
        "application/merge-patch+json",
        r#"{"metadata": {"finalizers": ["example.com/hold", "example.com/other"]}}"#,
    )
    .await;
    assert_eq!(code, 422);
    let why = "Forbidden: no new finalizers can be added if the object is being deleted, \
               found new finalizers []string{\"example.com/other\"}";
    assert_eq!(
        body["message"],
        format!("Widget.example.com \"held\" is invalid: metadata.finalizers: {why}")
    );
    let cause =
        json!({"reason": "FieldValueForbidden", "message": why, "field": "metadata.finalizers"});
    assert_eq!(
        body["details"],
        json!({"name": "held", "group": "example.com", "kind": "Widget", "causes": [cause, cause]})
    );
}

#[tokio::test]
async fn wr4_empty_labels_and_annotations_are_not_stored() {
    let server = server_with_widgets().await;
    let mut object = configmap("a");
    object["metadata"]["labels"] = json!({});
    object["metadata"]["annotations"] = json!({});
    object["metadata"]["finalizers"] = json!([]);
    let (code, created) = post(&server, CONFIGMAPS, object).await;
    assert_eq!(code, 201);
    for field in ["labels", "annotations", "finalizers"] {
        assert!(created["metadata"].get(field).is_none(), "{created}");
    }
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}}),
        "an empty map is not a field anybody owns"
    );

    // Removing the last label leaves no labels.
    let (_, labelled) = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w"),
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(labelled["code"], 404);
    let mut object = widget("w");
    object["metadata"]["labels"] = json!({"x": "1"});
    post(&server, WIDGETS, object).await;
    let (code, patched) = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w"),
        "application/merge-patch+json",
        r#"{"metadata": {"labels": {"x": null}}}"#,
    )
    .await;
    assert_eq!(code, 200);
    assert!(patched["metadata"].get("labels").is_none(), "{patched}");
    let (_, read) = send(&server, "GET", &format!("{WIDGETS}/w"), "", "").await;
    assert_eq!(read, patched);

    // An update that removes the last finalizer of an object being deleted
    // answers the object as written: its finalizers are nobody's any more.
    let mut held = configmap("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    post(&server, CONFIGMAPS, held).await;
    let held = format!("{CONFIGMAPS}/held");
    send(&server, "DELETE", &held, "", "").await;
    let (code, released) = send(
        &server,
        "PATCH",
        &held,
        "application/merge-patch+json",
        r#"{"metadata": {"finalizers": null}}"#,
    )
    .await;
    assert_eq!(code, 200);
    assert!(
        released["metadata"].get("finalizers").is_none(),
        "{released}"
    );
    assert_eq!(
        released["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}}),
    );
    assert_eq!(send(&server, "GET", &held, "", "").await.0, 404);
}

#[tokio::test]
async fn wr5_wr8_bodies_that_do_not_decode_get_the_api_servers_messages() {
    let server = server_with_widgets().await;
    post(&server, CONFIGMAPS, configmap("a")).await;
    let a = format!("{CONFIGMAPS}/a");
    let (code, body) = send(&server, "PUT", &a, "application/json", "{not json").await;
    assert_eq!((code, &body["reason"]), (400, &json!("BadRequest")));
    assert_eq!(
        body["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
         version/kind; json parse error: invalid character 'n' looking for beginning of object \
         key string ({not json)"
    );
    let (code, body) = send(&server, "POST", CONFIGMAPS, "application/json", "[1,2]").await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
         version/kind; json parse error: json: cannot unmarshal array into Go value of type \
         struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \
         \"json:\\\"kind,omitempty\\\"\" } (5b312c325d)"
    );
    let (code, body) = send(
        &server,
        "PATCH",
        &a,
        "application/merge-patch+json",
        "{not json",
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "error decoding patch: invalid character 'n' looking for beginning of object key string"
    );

    // A body in a media type the server does not read, and a built-in
    // object of another kind.
    let (code, body) = send(&server, "POST", CONFIGMAPS, "text/plain", "hello").await;
    assert_eq!(code, 415);
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (code, body) = post(&server, CONFIGMAPS, secret).await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) \
         to (core.ConfigMap): unknown conversion"
    );
    // YAML is read as JSON is.
    let (code, body) = send(
        &server,
        "POST",
        CONFIGMAPS,
        "application/yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n",
    )
    .await;
    assert_eq!(
        (code, &body["metadata"]["name"]),
        (201, &json!("from-yaml"))
    );
    // An invalid name (WR8).
    let (code, body) = post(&server, CONFIGMAPS, configmap("Bad_Name")).await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");

    // Patch types the server does not know.
    let (code, body) = send(&server, "PATCH", &a, "application/xml", "<patch/>").await;
    assert_eq!(code, 415);
    assert_eq!(body["message"], "415: Unsupported Media Type");
    assert_eq!(body["details"], json!({}));
    // SM6: a custom resource refuses a strategic merge patch.
    post(&server, WIDGETS, widget("w")).await;
    let (code, body) = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w"),
        "application/strategic-merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    assert!(body.get("details").is_none(), "{body}");

    // A create that names a resourceVersion: the storage's refusal, as is.
    let mut versioned = configmap("b");
    versioned["metadata"]["resourceVersion"] = json!("5");
    let (code, body) = post(&server, CONFIGMAPS, versioned).await;
    assert_eq!(code, 500);
    assert_eq!(
        body["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert!(body.get("reason").is_none(), "{body}");
}

#[tokio::test]
async fn wr6_a_put_checks_its_body_before_looking_the_object_up() {
    let server = FakeApiServer::start().await;
    let missing = format!("{CONFIGMAPS}/missing");
    let (code, body) = send(
        &server,
        "PUT",
        &missing,
        "application/json",
        &configmap("other").to_string(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the name of the object (other) does not match the name on the URL (missing)"
    );
    let (code, body) = send(
        &server,
        "PUT",
        &missing,
        "application/json",
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}"#,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the name of the object (missing based on URL) was undeterminable: name must be provided"
    );
    // With a body that is fine, the object is looked up.
    let (code, _) = send(
        &server,
        "PUT",
        &missing,
        "application/json",
        &configmap("missing").to_string(),
    )
    .await;
    assert_eq!(code, 404);
    // A patch looks the object up first, whatever its body.
    let (code, body) = send(
        &server,
        "PATCH",
        &missing,
        "application/json-patch+json",
        r#"{"op": "add"}"#,
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "configmaps \"missing\" not found");
}

/// The `fieldsV1` of the entry of `manager` in `object`.
fn fields_of(object: &Value, manager: &str) -> Value {
    object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry of {manager} in {object}"))["fieldsV1"]
        .clone()
}

#[tokio::test]
async fn mf4_an_update_owns_the_maps_structs_and_lists_it_creates() {
    let server = server_with_widgets().await;
    // A custom resource's spec is created by its first write.
    let (_, created) = post(&server, &format!("{WIDGETS}?fieldManager=m1"), widget("w")).await;
    assert_eq!(
        fields_of(&created, "m1"),
        json!({"f:spec": {".": {}, "f:size": {}}})
    );
    // Its status too, by the first write of the status.
    let (code, patched) = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w/status?fieldManager=m2"),
        "application/merge-patch+json",
        r#"{"status": {"ready": true}}"#,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        fields_of(&patched, "m2"),
        json!({"f:status": {".": {}, "f:ready": {}}})
    );

    // Metadata maps and lists.
    let mut object = configmap("a");
    object["metadata"]["labels"] = json!({"x": "1"});
    object["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let (_, created) = post(&server, &format!("{CONFIGMAPS}?fieldManager=m1"), object).await;
    assert_eq!(
        fields_of(&created, "m1")["f:metadata"],
        json!({
            "f:labels": {".": {}, "f:x": {}},
            "f:finalizers": {".": {}, "v:\"example.com/hold\"": {}},
        })
    );
    // Another manager that takes the only label leaves the map to the
    // manager that created it.
    let (_, patched) = send(
        &server,
        "PATCH",
        &format!("{CONFIGMAPS}/a?fieldManager=m2"),
        "application/merge-patch+json",
        r#"{"metadata": {"labels": {"x": "2"}}}"#,
    )
    .await;
    assert_eq!(
        fields_of(&patched, "m2"),
        json!({"f:metadata": {"f:labels": {"f:x": {}}}})
    );
    assert_eq!(
        fields_of(&patched, "m1")["f:metadata"]["f:labels"],
        json!({})
    );

    // The fields every Pod and Deployment has are nobody's creation.
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "i", "env": [{"name": "A", "value": "1"}]}]}
    });
    let (_, created) = post(
        &server,
        "/api/v1/namespaces/default/pods?fieldManager=m1",
        pod,
    )
    .await;
    assert_eq!(
        fields_of(&created, "m1"),
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {
            ".": {}, "f:name": {}, "f:image": {},
            "f:env": {".": {}, "k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
        }}}})
    );
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "main", "image": "i"}]}
            }
        }
    });
    let (_, created) = post(
        &server,
        "/apis/apps/v1/namespaces/default/deployments?fieldManager=m1",
        deployment,
    )
    .await;
    assert_eq!(
        fields_of(&created, "m1"),
        json!({"f:spec": {"f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:name": {}, "f:image": {}}}},
        }}})
    );
}

#[tokio::test]
async fn dr3_a_dry_run_create_answers_a_uid_no_object_gets() {
    let server = FakeApiServer::start().await;
    let (code, dry) = post(&server, &format!("{CONFIGMAPS}?dryRun=All"), configmap("a")).await;
    assert_eq!(code, 201);
    let (code, created) = post(&server, CONFIGMAPS, configmap("b")).await;
    assert_eq!(code, 201);
    let uid = |o: &Value| o["metadata"]["uid"].as_str().unwrap().to_owned();
    assert_ne!(uid(&dry), uid(&created));
    assert!(!uid(&dry).is_empty());
}

#[tokio::test]
async fn sa8_an_apply_with_a_stale_resource_version_and_conflicts_reports_the_conflicts() {
    let server = FakeApiServer::start().await;
    let (_, created) = post(&server, CONFIGMAPS, configmap("a")).await;
    let stale = created["metadata"]["resourceVersion"].clone();
    let a = format!("{CONFIGMAPS}/a");
    send(
        &server,
        "PATCH",
        &a,
        "application/merge-patch+json",
        r#"{"data": {"k": "2"}}"#,
    )
    .await;
    let mut applied = configmap("a");
    applied["metadata"]["resourceVersion"] = stale;
    applied["data"]["k"] = json!("3");
    let apply = |force: bool| {
        let path = format!(
            "{a}?fieldManager=m1{}",
            if force { "&force=true" } else { "" }
        );
        let body = applied.to_string();
        let server = &server;
        async move {
            send(
                server,
                "PATCH",
                &path,
                "application/apply-patch+yaml",
                &body,
            )
            .await
        }
    };
    let (code, body) = apply(false).await;
    assert_eq!(code, 409);
    assert_eq!(
        body["message"],
        "Apply failed with 1 conflict: conflict with \"unknown\" using v1: .data.k"
    );
    // Forced, the conflicts are taken and the stale resourceVersion refused.
    let (code, body) = apply(true).await;
    assert_eq!(code, 409);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Operation cannot be fulfilled on configmaps \"a\""),
        "{body}"
    );
}

#[tokio::test]
async fn gn5_a_deployments_annotations_count_as_a_change_of_its_desired_state() {
    let server = FakeApiServer::start().await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "main", "image": "i"}]}
            }
        }
    });
    let (_, created) = post(&server, deployments, deployment).await;
    assert_eq!(created["metadata"]["generation"], 1);
    let patch = |body: &'static str| {
        let server = &server;
        async move {
            let path = format!("{deployments}/d");
            let (code, patched) =
                send(server, "PATCH", &path, "application/merge-patch+json", body).await;
            assert_eq!(code, 200, "{patched}");
            patched["metadata"]["generation"].clone()
        }
    };
    assert_eq!(patch(r#"{"metadata": {"labels": {"l": "1"}}}"#).await, 1);
    assert_eq!(
        patch(r#"{"metadata": {"annotations": {"a": "1"}}}"#).await,
        2
    );
    assert_eq!(
        patch(r#"{"metadata": {"annotations": {"a": "1"}}}"#).await,
        2
    );
    assert_eq!(patch(r#"{"metadata": {"annotations": null}}"#).await, 3);
    // Other kinds count only their spec.
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "i"}]}});
    post(&server, pods, pod).await;
    let (_, annotated) = send(
        &server,
        "PATCH",
        &format!("{pods}/p"),
        "application/merge-patch+json",
        r#"{"metadata": {"annotations": {"a": "1"}}}"#,
    )
    .await;
    assert_eq!(annotated["metadata"]["generation"], 1);
}

#[tokio::test]
async fn gn6_wr3_an_object_marked_for_deletion_counts_a_generation_and_keeps_its_name() {
    let server = server_with_widgets().await;
    let mut held = widget("w");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    post(&server, WIDGETS, held).await;
    let w = format!("{WIDGETS}/w");
    let (code, marked) = send(&server, "DELETE", &w, "", "").await;
    assert_eq!(code, 200);
    assert_eq!(marked["metadata"]["generation"], 2);
    let (_, read) = send(&server, "GET", &w, "", "").await;
    assert_eq!(read["metadata"]["generation"], 2, "stored as answered");
    let (code, body) = post(&server, WIDGETS, widget("w")).await;
    assert_eq!(code, 409);
    assert_eq!(
        body["message"],
        "object is being deleted: widgets.example.com \"w\" already exists"
    );
}
