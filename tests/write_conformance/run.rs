//! Runs one script against one server: opens the watches, sends the steps,
//! records every answer and every watch event, and ends each watch with a
//! sentinel object so the events of the script are all in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::{AsyncBufReadExt, StreamExt};
use http_body_util::BodyExt;
use kube::Client;
use kube::client::Body;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::resources::Kind;
use super::script::{Record, Script, Step, substitute, substitute_str};

/// The name of the object that marks the end of a script's watch events.
pub const SENTINEL: &str = "zz-sentinel";
/// How long one request, or the wait for the sentinel, may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// What one step got back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// The HTTP status; 0 when no answer came (the connection broke, or
    /// the step referred to a value no earlier step saved).
    pub status: u16,
    /// The answer's body (JSON, or `{"text": …}`), as the step's `record`
    /// says.
    pub body: Value,
}

/// Everything one run of a script produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recording {
    /// The namespace the script ran in.
    #[serde(skip)]
    pub namespace: String,
    /// One record per step.
    pub steps: Vec<StepRecord>,
    /// The watch events (`{"type", "object"}`) per watched resource, up to
    /// but without the sentinel.
    pub events: BTreeMap<Kind, Vec<Value>>,
}

/// A watch read into a shared list by a task of its own.
struct OpenWatch {
    events: Arc<Mutex<Vec<Value>>>,
    arrived: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn send(
    client: &Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<StepRecord> {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(Body::from(body))?;
    let answer = tokio::time::timeout(DEADLINE, async {
        let response = client.send(request).await?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        anyhow::Ok((status, bytes))
    })
    .await;
    let (status, bytes) = match answer {
        Err(_) => bail!("{method} {uri}: no answer within {DEADLINE:?}"),
        Ok(Err(error)) => {
            return Ok(StepRecord {
                status: 0,
                body: json!({"transportError": error.to_string()}),
            });
        }
        Ok(Ok(answer)) => answer,
    };
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"text": String::from_utf8_lossy(&bytes)}));
    Ok(StepRecord { status, body })
}

async fn open_watch(client: &Client, kind: Kind, ns: &str) -> Result<OpenWatch> {
    let path = kind.collection_path(ns);
    let list = send(client, "GET", &path, "application/json", Vec::new()).await?;
    if list.status != 200 {
        bail!("listing {path} answered {}: {}", list.status, list.body);
    }
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .context("a list has a resourceVersion")?
        .to_owned();
    let uri = format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=300");
    let request = http::Request::get(uri).body(Vec::new())?;
    let reader = tokio::time::timeout(DEADLINE, client.request_stream(request))
        .await
        .with_context(|| format!("opening the watch of {path}"))??;
    let events = Arc::new(Mutex::new(Vec::new()));
    let arrived = Arc::new(Notify::new());
    let task = tokio::spawn({
        let (events, arrived) = (events.clone(), arrived.clone());
        async move {
            let mut lines = Box::pin(reader).lines();
            while let Some(Ok(line)) = lines.next().await {
                let event = serde_json::from_str(&line).unwrap_or_else(|_| json!({"text": line}));
                events.lock().push(event);
                arrived.notify_waiters();
            }
            events.lock().push(json!({"type": "END"}));
            arrived.notify_waiters();
        }
    });
    Ok(OpenWatch {
        events,
        arrived,
        task,
    })
}

/// The request line a step sends, for messages.
pub fn describe(step: &Step) -> String {
    let mut line = format!("{} {}", step.method, step.resource.plural());
    if let Some(name) = &step.name {
        line.push('/');
        line.push_str(name);
    }
    if let Some(sub) = &step.subresource {
        line.push('/');
        line.push_str(sub);
    }
    let query = step.query_pairs();
    if !query.is_empty() {
        let pairs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        line.push('?');
        line.push_str(&pairs.join("&"));
    }
    if step.method == "PATCH" || step.content_type.is_some() {
        line.push_str(&format!(" [{}]", step.content_type()));
    }
    line
}

/// Sends one step with the saved values filled in.
async fn run_step(
    client: &Client,
    ns: &str,
    step: &Step,
    vars: &BTreeMap<String, String>,
) -> Result<StepRecord> {
    let mut uri = step.resource.collection_path(ns);
    if let Some(name) = &step.name {
        uri.push('/');
        uri.push_str(&substitute_str(name, vars)?);
    }
    if let Some(sub) = &step.subresource {
        uri.push('/');
        uri.push_str(sub);
    }
    let query = step.query_pairs();
    if !query.is_empty() {
        let mut encoder = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &query {
            encoder.append_pair(key, &substitute_str(value, vars)?);
        }
        uri.push('?');
        uri.push_str(&encoder.finish());
    }
    let body = match (&step.body, &step.body_text) {
        (Some(body), _) => serde_json::to_vec(&substitute(body, vars)?)?,
        (None, Some(text)) => substitute_str(text, vars)?.into_bytes(),
        (None, None) => Vec::new(),
    };
    send(client, &step.method, &uri, step.content_type(), body).await
}

/// Runs `script` in namespace `ns` (which exists) on the server behind
/// `client`, and records what it answered and what the watches saw.
pub async fn run_script(client: &Client, ns: &str, script: &Script) -> Result<Recording> {
    let mut watches = BTreeMap::new();
    for &kind in &script.watch {
        watches.insert(kind, open_watch(client, kind, ns).await?);
    }
    let mut vars = BTreeMap::from([("ns".to_owned(), ns.to_owned())]);
    let mut steps = Vec::new();
    for step in &script.steps {
        let mut record = match run_step(client, ns, step, &vars).await {
            Ok(record) => record,
            // A value the step needs was not saved (an earlier step failed
            // on this server): recorded, so the comparison shows it.
            Err(error) if error.to_string().contains("was not saved") => StepRecord {
                status: 0,
                body: json!({"skipped": error.to_string()}),
            },
            Err(error) => return Err(error),
        };
        for (var, pointer) in &step.save {
            if let Some(value) = record.body.pointer(pointer) {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                vars.insert(var.clone(), text);
            }
        }
        if step.record == Record::Status {
            record.body = json!({
                "kind": record.body["kind"],
                "reason": record.body["reason"],
                "code": record.body["code"],
            });
        }
        steps.push(record);
    }
    let mut events = BTreeMap::new();
    for (kind, watch) in watches {
        let path = kind.collection_path(ns);
        let body = serde_json::to_vec(&kind.object(SENTINEL))?;
        let created = send(client, "POST", &path, "application/json", body).await?;
        if created.status != 201 {
            bail!(
                "the sentinel {kind:?} was refused ({}): {}",
                created.status,
                created.body
            );
        }
        let seen = tokio::time::timeout(DEADLINE, async {
            loop {
                let notified = watch.arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let got = watch.events.lock();
                    if let Some(at) = got
                        .iter()
                        .position(|e| e["object"]["metadata"]["name"] == SENTINEL)
                    {
                        return got[..at].to_vec();
                    }
                    // A watch that ended early keeps its END mark, so the
                    // comparison shows it.
                    if got.last().is_some_and(|e| e["type"] == "END") {
                        return got.clone();
                    }
                }
                notified.await;
            }
        })
        .await
        .with_context(|| format!("the {kind:?} watch did not show the sentinel"))?;
        events.insert(kind, seen);
    }
    Ok(Recording {
        namespace: ns.to_owned(),
        steps,
        events,
    })
}
