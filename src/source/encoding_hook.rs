//! The source asking for an encoding, as an informer built with
//! `InformerBuilder::encoding` runs it: the crate's own source tests drive
//! it, through `unstable` (a source opened by `watch_source` asks for
//! JSON).

use futures::Stream;
use kube::Api;

use super::{Config, DecodeOptions, Encoding, Error, Event, SourceSetup, Watchable, wired_source};

/// [`watch_source`](super::watch_source) asking for `encoding`.
pub fn watch_source_encoded<K>(
    api: Api<K>,
    config: Config<K>,
    encoding: Encoding,
) -> impl Stream<Item = Result<Event<K>, Error>> + Send + 'static
where
    K: Watchable,
{
    let setup = SourceSetup {
        decode: DecodeOptions {
            encoding,
            ..DecodeOptions::default()
        },
        ..SourceSetup::default()
    };
    wired_source(api, config, setup)
}
