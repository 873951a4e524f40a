//! Runs a work queue trace through our
//! [`WorkQueue`] on tokio's paused clock and
//! prints, per operation, the line `workqueue-trace` prints for client-go.

use std::{sync::Arc, time::Duration};

use futures::FutureExt;
use kube_informer::queue::{RateLimiter, WorkItem, WorkQueue, default_rate_limiter};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::workqueue_trace::{WqOp, WqTrace};

/// The default limiter, remembering the delay of its last `when` so the
/// output can show it (as the Go harness does).
struct Recording {
    inner: Box<dyn RateLimiter<String>>,
    last: Mutex<Duration>,
}

struct Shared(Arc<Recording>);

impl RateLimiter<String> for Shared {
    fn when(&self, item: &String) -> Duration {
        let delay = self.0.inner.when(item);
        *self.0.last.lock() = delay;
        delay
    }
    fn forget(&self, item: &String) {
        self.0.inner.forget(item)
    }
    fn requeues(&self, item: &String) -> usize {
        self.0.inner.requeues(item)
    }
}

/// The output lines of `trace`, one per operation.
pub fn run(trace: &WqTrace) -> Vec<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    rt.block_on(run_async(trace))
}

async fn run_async(trace: &WqTrace) -> Vec<Value> {
    let recording = Arc::new(Recording {
        inner: Box::new(default_rate_limiter()),
        last: Mutex::new(Duration::ZERO),
    });
    let queue = WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            backoff_holds: trace.header.backoff_holds,
            ..Default::default()
        },
        Shared(recording.clone()),
    );
    let mut held: Vec<WorkItem<String>> = Vec::new();
    let mut out = Vec::with_capacity(trace.ops.len());
    for (i, op) in trace.ops.iter().enumerate() {
        let mut line = Map::new();
        line.insert("i".into(), json!(i));
        let name = serde_json::to_value(op).expect("an op serializes")["op"].clone();
        line.insert("op".into(), name);
        match op {
            WqOp::Add { item } => {
                line.insert("item".into(), json!(item));
                queue.add(item.clone());
            }
            WqOp::AddAfter { item, ms } => {
                line.insert("item".into(), json!(item));
                queue.add_after(item.clone(), Duration::from_millis(*ms));
            }
            WqOp::AddRateLimited { item } => {
                line.insert("item".into(), json!(item));
                // A rate-limited add the queue absorbs (W13) asks the
                // limiter nothing: it shows a zero delay.
                *recording.last.lock() = Duration::ZERO;
                queue.add_rate_limited(item.clone());
                let delay = *recording.last.lock();
                line.insert("delayMs".into(), json!(delay.as_millis() as u64));
            }
            WqOp::Forget { item } => {
                line.insert("item".into(), json!(item));
                queue.forget(item);
            }
            WqOp::Requeues { item } => {
                line.insert("item".into(), json!(item));
                line.insert("requeues".into(), json!(queue.requeues(item)));
            }
            WqOp::Get => {
                if queue.is_empty() && !queue.is_shutting_down() {
                    line.insert("result".into(), json!("empty"));
                } else {
                    match queue.next().now_or_never() {
                        Some(Some(item)) => {
                            line.insert("result".into(), json!("item"));
                            line.insert("item".into(), json!(item.item()));
                            held.push(item);
                        }
                        Some(None) => {
                            line.insert("result".into(), json!("shutdown"));
                        }
                        // A queued item that one poll does not hand out.
                        None => {
                            line.insert("result".into(), json!("blocked"));
                        }
                    }
                }
            }
            WqOp::Done { item, nth } => {
                let at = match item {
                    Some(name) => held.iter().position(|h| h.item() == name),
                    None if held.is_empty() => None,
                    None => Some((*nth as usize) % held.len()),
                };
                match at {
                    Some(at) => {
                        let guard = held.remove(at);
                        line.insert("item".into(), json!(guard.item()));
                        drop(guard);
                    }
                    None => {
                        line.insert("result".into(), json!("not held"));
                        if let Some(name) = item {
                            line.insert("item".into(), json!(name));
                        }
                    }
                }
            }
            WqOp::Shutdown => queue.shutdown(),
            WqOp::Advance { ms } => {
                line.insert("ms".into(), json!(ms));
                tokio::time::advance(Duration::from_millis(*ms)).await;
            }
        }
        line.insert("len".into(), json!(queue.len()));
        line.insert("shuttingDown".into(), json!(queue.is_shutting_down()));
        out.push(Value::Object(line));
    }
    out
}
