//! Options every informer of a factory starts from
//! ([`InformerFactory::with_defaults`](crate::InformerFactory::with_defaults)).

use crate::source;

/// Options that an [`InformerFactory`](crate::InformerFactory) gives every
/// informer it builds before the `configure` closure of
/// [`build`](crate::InformerFactory::build) runs. Plain data:
/// `Defaults::default()` sets none, and every informer starts from the
/// builder's own.
///
/// The closure still has the last word: its
/// [`label_selector`](super::InformerBuilder::label_selector) and
/// [`field_selector`](super::InformerBuilder::field_selector) add to the
/// defaults' list/watch settings, its
/// [`source_config`](super::InformerBuilder::source_config) replaces them.
/// Two requests for one informer compare the options they end with, so
/// defaults never make two requests disagree.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kube::Api;
/// use kube_informer::{InformerFactory, informer::Defaults, source};
/// use kube_informer_testing::FakeApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = FakeApiServer::start().await;
/// let defaults = Defaults {
///     source_config: Some(source::Config::default().watch_timeout(Duration::from_secs(60), Duration::from_secs(120))),
///     strip_managed_fields: true,
///     ..Defaults::default()
/// };
/// let factory = InformerFactory::with_defaults(server.client(), defaults);
/// // Both informers strip managedFields and renew their watches every 1–2 minutes.
/// let configmaps = factory.build(Api::<ConfigMap>::all(factory.client()), |b| b.label_selector("app=web"))?;
/// let secrets = factory.build(Api::<Secret>::all(factory.client()), |b| b)?;
/// # drop((configmaps, secrets));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// The list/watch settings every informer starts from (`None`: each
    /// informer's own default). Selectors set here apply to every informer
    /// too (as client-go's `WithTweakListOptions` does); an informer's own
    /// [`label_selector`](super::InformerBuilder::label_selector) replaces
    /// the label selector, not the other settings.
    pub source_config: Option<source::Config>,
    /// Every informer leaves managedFields out of what it caches
    /// ([`InformerBuilder::strip_managed_fields`](super::InformerBuilder::strip_managed_fields)).
    pub strip_managed_fields: bool,
    /// Every informer decodes a batch on at most this many threads at once
    /// ([`InformerBuilder::decode_threads`](super::InformerBuilder::decode_threads);
    /// `None`: each informer's own default).
    pub decode_threads: Option<usize>,
    /// What every informer's lists and watches ask for
    /// ([`InformerBuilder::encoding`](super::InformerBuilder::encoding)):
    /// [`Encoding::Protobuf`](source::Encoding::Protobuf) here is what
    /// kube-controller-manager's `--kube-api-content-type` does for its
    /// informers. Kinds without protobuf stay on JSON.
    pub encoding: source::Encoding,
}
