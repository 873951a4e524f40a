//! Drives a DeltaFifo by hand with ConfigMaps and says what happens, in
//! plain words: the queue at the heart of an informer. Needs no cluster:
//! `cargo run --example fifo_by_hand`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube_informer::fifo::{Coalesce, DeltaFifo, FifoOptions, KnownObjects};
use kube_informer::{DeltaType, Deltas, ObjectKey};
use parking_lot::Mutex;

fn config_map(name: &str, resource_version: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: Some(resource_version.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What the consumer has applied so far: the FIFO asks it which keys it
/// knows, to spot objects that vanish in a relist.
#[derive(Default)]
struct Cache(Mutex<BTreeMap<ObjectKey, Arc<ConfigMap>>>);

impl Cache {
    fn apply(&self, deltas: &Deltas<ConfigMap>) {
        let mut cache = self.0.lock();
        for delta in deltas {
            match delta.delta_type {
                DeltaType::Deleted => cache.remove(deltas.key()),
                _ => cache.insert(deltas.key().clone(), Arc::clone(delta.object.object())),
            };
        }
    }
}

impl KnownObjects<ConfigMap> for Cache {
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        self.0.lock().get(key).cloned()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.lock().keys().cloned().collect()
    }
}

fn describe(deltas: &Deltas<ConfigMap>) -> String {
    let parts: Vec<String> = deltas
        .iter()
        .map(|d| {
            let rv = d
                .object
                .object()
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or("?");
            let tombstone = if d.object.is_tombstone() {
                " (tombstone)"
            } else {
                ""
            };
            format!("{:?}@{rv}{tombstone}", d.delta_type)
        })
        .collect();
    format!("popped {}: {}", deltas.key(), parts.join(", "))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), kube_informer::store::Error> {
    let cache = Arc::new(Cache::default());
    let fifo = DeltaFifo::new(FifoOptions::default().known_objects(cache.clone()));

    println!("== the first list: a relist of two ConfigMaps");
    fifo.replace([config_map("a", "1"), config_map("b", "1")], "10")?;
    println!("relist at resourceVersion 10: default/a and default/b queued as Replaced");
    println!(
        "has synced? {} (the first list has not been consumed yet)",
        fifo.has_synced()
    );
    while let Some(deltas) = fifo.try_pop() {
        println!("{}", describe(&deltas));
        cache.apply(&deltas);
    }
    println!("has synced? {}", fifo.has_synced());

    println!("\n== watch events: changes of one key gather in one queue slot");
    fifo.add(config_map("c", "11"))?;
    println!("added default/c");
    fifo.update(config_map("a", "12"))?;
    println!("updated default/a");
    fifo.update(config_map("c", "13"))?;
    println!("updated default/c (it keeps its place, ahead of default/a)");
    println!("queued keys: {:?}", fifo.list_keys());
    while let Some(deltas) = fifo.try_pop() {
        println!("{}", describe(&deltas));
        cache.apply(&deltas);
    }

    println!("\n== a relist that no longer contains default/b");
    fifo.replace([config_map("a", "12"), config_map("c", "13")], "20")?;
    while let Some(deltas) = fifo.try_pop() {
        if deltas.newest().object.is_tombstone() {
            println!("relist: {} vanished → tombstone", deltas.key());
        }
        println!("{}", describe(&deltas));
        cache.apply(&deltas);
    }

    println!("\n== bad input is refused, nothing queued is lost");
    fifo.add(config_map("d", "21"))?;
    match fifo.add(ConfigMap::default()) {
        Err(err) => {
            let cause = std::error::Error::source(&err).map(ToString::to_string);
            println!(
                "an object without a name: error \"{err}: {}\"",
                cause.unwrap_or_default()
            );
        }
        Ok(()) => println!("unexpected: a nameless object was accepted"),
    }
    println!("still queued: {:?}", fifo.list_keys());

    println!("\n== a consumer as a stream, woken when something arrives");
    let consumer = tokio::spawn({
        let fifo = fifo.clone();
        let cache = cache.clone();
        async move {
            let mut stream = fifo.stream();
            while let Some(deltas) = stream.next().await {
                println!("{}", describe(&deltas));
                cache.apply(&deltas);
            }
            println!("stream ended: the FIFO is closed and empty");
        }
    });
    fifo.delete(config_map("a", "22"))?;
    println!("deleted default/a");
    fifo.close();
    println!("closed the FIFO (what is queued still comes out)");
    consumer.await.expect("consumer task");

    println!("\n== Coalesce::Latest: a slow consumer sees only the newest state");
    let latest = DeltaFifo::new(FifoOptions::default().coalesce(Coalesce::Latest));
    latest.add(config_map("e", "30"))?;
    for rv in 31..=40 {
        latest.update(config_map("e", &rv.to_string()))?;
    }
    println!("added default/e, then updated it 10 times");
    if let Some(deltas) = latest.try_pop() {
        println!(
            "{} (still Added: the consumer learns the key is new)",
            describe(&deltas)
        );
    }
    Ok(())
}
