//! Wire runner (a″): kube-informer with the compact cache
//! (`InformerBuilder::compact_cache`, default hot set), otherwise as runner
//! (a): `Informer::builder(Api)` on the loopback server, one `subscribe`
//! per subscriber drained by its own task, every subscriber told about
//! every event. The store keeps each Pod encoded; notifications carry the
//! decoded Pods, an update's replaced version decoded from the store.

use super::{
    count::Counter,
    drive::{Started, WireRunner},
    ours::spawn,
};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use kube_informer::{Informer, store::CompactCache};

/// See the module docs.
#[derive(Debug)]
pub struct OursCompactWire;

impl WireRunner for OursCompactWire {
    const NAME: &'static str = "ours-compact";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        let api: Api<Pod> = Api::all(client);
        let mut builder = Informer::builder(api).compact_cache(CompactCache::default());
        if strip {
            builder = builder.strip_managed_fields();
        }
        spawn(builder.build(), subscribers, Counter::observe);
        Started {
            deletes_applied: None,
        }
    }
}
