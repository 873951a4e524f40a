//! [`Encoding`]: which wire format lists and watches ask for.

/// Which encoding an informer asks the API server for when it lists and
/// watches: set with [`InformerBuilder::encoding`](crate::InformerBuilder::encoding),
/// or for every informer of a factory with
/// [`Defaults::encoding`](crate::informer::Defaults::encoding).
///
/// Either way the informer holds the same k8s-openapi values: the protobuf
/// bodies are decoded into the type's own `Deserialize` impl, and give the
/// value its JSON gives.
///
/// # The default: JSON
///
/// [`Json`](Self::Json) is the default, as in client-go (whose
/// `rest.Config` asks for JSON unless its `ContentType` is set;
/// kube-controller-manager and other heavy users set it to protobuf). The
/// protobuf decoder reads the wire by a table of messages generated from
/// one Kubernetes version's `.proto` files (1.34's). A field that the
/// program's k8s-openapi version knows and the server sends, but that the
/// table lacks (a field added after 1.34), would be left out of the
/// decoded object without any error under protobuf; JSON carries it. So
/// protobuf is something to opt into, knowing the table covers the kinds
/// and fields the program reads. What it saves is the API server's
/// encoding work and bytes on the wire (a Pod takes 43–60 % of its JSON's
/// bytes in the crate's benchmarks); this process's CPU per event is about
/// the same as with the tuned JSON decoder (`benches/compare/NOTES.md`,
/// "Protobuf through the source" and "kube-informer over protobuf in the
/// wire harness").
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::Api;
/// use kube_informer::{Informer, source::Encoding};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = kube_informer_testing::FakeApiServer::start().await;
/// // Pods as protobuf (the fake server answers a built-in kind in protobuf,
/// // as kube-apiserver does; an answer in JSON would be decoded as such).
/// let informer = Informer::builder(Api::<Pod>::all(server.client()))
///     .encoding(Encoding::Protobuf)
///     .build();
/// let run = tokio::spawn(informer.run());
/// informer.wait_until_synced().await.unwrap();
/// informer.stop();
/// run.await.unwrap().unwrap();
/// assert_eq!(Encoding::default(), Encoding::Json);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// `Accept: application/json` for every resource.
    #[default]
    Json,
    /// `Accept: application/vnd.kubernetes.protobuf, application/json`
    /// (what client-go sends when its content type is protobuf) for the
    /// built-in kinds the protobuf table has, listed and watched through
    /// their k8s-openapi types, and for the `PartialObjectMetadata` of
    /// metadata-only informers (any resource: the API server encodes that
    /// view in protobuf for custom resources too); JSON for everything
    /// else: custom resources (the API server serves them as JSON only),
    /// `DynamicObject` and kinds newer than the table. Whatever the
    /// server answers is decoded by its
    /// `Content-Type`, so a server that answers JSON is read as JSON.
    Protobuf,
}
