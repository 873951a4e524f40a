//! Options every informer of a factory starts from
//! ([`InformerFactory::with_defaults`](crate::InformerFactory::with_defaults)).

use crate::source::{self, Settings};

/// Options that an [`InformerFactory`](crate::InformerFactory) gives every
/// informer it builds before the `configure` closure of
/// [`build`](crate::InformerFactory::build) runs: list/watch settings that
/// fit any resource (backoff, watch timeouts, page size, list strategy),
/// [`strip_managed_fields`](super::InformerBuilder::strip_managed_fields),
/// [`decode_threads`](super::InformerBuilder::decode_threads) and
/// [`encoding`](super::InformerBuilder::encoding).
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
/// let defaults = Defaults::default()
///     .source_config(source::Config::default().watch_timeout(Duration::from_secs(60), Duration::from_secs(120)))
///     .strip_managed_fields();
/// let factory = InformerFactory::with_defaults(server.client(), defaults);
/// // Both informers strip managedFields and renew their watches every 1–2 minutes.
/// let configmaps = factory.build(Api::<ConfigMap>::all(factory.client()), |b| b.label_selector("app=web"))?;
/// let secrets = factory.build(Api::<Secret>::all(factory.client()), |b| b)?;
/// # drop((configmaps, secrets));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// The list/watch settings (`None`: each informer's own default).
    pub(super) source: Option<Settings>,
    pub(super) strip_managed_fields: bool,
    pub(super) decode_threads: Option<usize>,
    pub(super) encoding: source::Encoding,
}

/// `Defaults::default()` sets no defaults: every informer starts from the
/// builder's own.
impl Defaults {
    /// The list/watch settings every informer starts from. Selectors set
    /// here apply to every informer too (as client-go's
    /// `WithTweakListOptions` does); an informer's own
    /// [`label_selector`](super::InformerBuilder::label_selector) replaces
    /// the label selector, not the other settings.
    #[must_use]
    pub fn source_config(mut self, config: source::Config) -> Self {
        self.source = Some(config.into_settings());
        self
    }

    /// Every informer leaves managedFields out of what it caches
    /// ([`InformerBuilder::strip_managed_fields`](super::InformerBuilder::strip_managed_fields)).
    #[must_use]
    pub fn strip_managed_fields(mut self) -> Self {
        self.strip_managed_fields = true;
        self
    }

    /// Every informer decodes a batch on at most `threads` threads at once
    /// ([`InformerBuilder::decode_threads`](super::InformerBuilder::decode_threads)).
    #[must_use]
    pub fn decode_threads(mut self, threads: usize) -> Self {
        self.decode_threads = Some(threads);
        self
    }

    /// Every informer asks for `encoding`
    /// ([`InformerBuilder::encoding`](super::InformerBuilder::encoding)):
    /// [`Encoding::Protobuf`](source::Encoding::Protobuf) here is what
    /// kube-controller-manager's `--kube-api-content-type` does for its
    /// informers. Kinds without protobuf stay on JSON.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::{informer::Defaults, source::Encoding};
    ///
    /// let defaults = Defaults::default().encoding(Encoding::Protobuf);
    /// assert_ne!(defaults, Defaults::default());
    /// ```
    #[must_use]
    pub fn encoding(mut self, encoding: source::Encoding) -> Self {
        self.encoding = encoding;
        self
    }
}
