//! [`Error`]: one type every public error of the crate converts into, for a
//! `main` or a reconciler that meets several of them and wants `?` on all.
//!
//! Each module keeps its own error type, with the variants its callers
//! match on; this type wraps them whole, so nothing is lost on the way
//! (match on the variant, or walk [`std::error::Error::source`]).

#[cfg(feature = "controller")]
use crate::finalizer;
#[cfg(feature = "shard")]
use crate::shard;
use crate::{informer, runner, source, store};

/// Any error of this crate, wrapping the module error it came from.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{InformerFactory, ObjectKey, SubscribeOptions};
/// use kube_informer_testing::FakeApiServer;
///
/// // Three module errors, one `?` each.
/// async fn first_key(server: &FakeApiServer) -> Result<ObjectKey, kube_informer::Error> {
///     let factory = InformerFactory::new(server.client());
///     let informer = factory.build(Api::<ConfigMap>::all(factory.client()), |b| b)?; // informer::Error
///     let _changes = informer.subscribe(SubscribeOptions::default())?; // informer::Error
///     Ok("default/first".parse()?) // store::Error
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// assert_eq!(first_key(&server).await.unwrap().as_str(), "default/first");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An informer's error, or the factory's refusal to hand one out
    /// ([`informer::Error`]).
    #[error(transparent)]
    Informer(Box<informer::Error>),
    /// Waiting for an informer's sync failed ([`informer::SyncError`]).
    #[error(transparent)]
    Sync(Box<informer::SyncError>),
    /// A list/watch source's error ([`source::Error`]).
    #[error(transparent)]
    Source(Box<source::Error>),
    /// An object could not be keyed, queued or stored: a key that does not
    /// parse, the FIFO's or the store's refusal ([`store::Error`]).
    #[error(transparent)]
    Store(Box<store::Error>),
    /// Sharding or leader election failed: an unsafe configuration, a
    /// Lease request, the Lease informer ([`shard::Error`]).
    #[cfg(feature = "shard")]
    #[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
    #[error(transparent)]
    Shard(Box<shard::Error>),
    /// A reconcile did not succeed, or a controller did not start
    /// ([`runner::Error`], a runner's, and a controller's as
    /// `controller::Error`); the reconciler's own error is inside.
    #[error(transparent)]
    Controller(Box<dyn std::error::Error + Send + Sync>),
    /// The finalizer helper failed ([`finalizer::Error`]); the
    /// reconciler's own error is inside.
    #[cfg(feature = "controller")]
    #[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
    #[error(transparent)]
    Finalizer(Box<dyn std::error::Error + Send + Sync>),
    /// A request of the `kube` client failed.
    #[error(transparent)]
    Kube(Box<kube::Error>),
}

/// `From` for each wrapped module error, boxed so that `Error` stays small
/// (at most three words: a `Result<_, Error>` stays cheap to return).
macro_rules! from_boxed {
    ($($variant:ident: $error:ty),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Self::$variant(Box::new(error))
            }
        }
    )*};
}

from_boxed! {
    Informer: informer::Error,
    Sync: informer::SyncError,
    Source: source::Error,
    Store: store::Error,
    Kube: kube::Error,
}

#[cfg(feature = "shard")]
from_boxed! {
    Shard: shard::Error,
}

/// A runner's or a controller's error: any reconcile error and key that
/// display and debug (`anyhow::Error` too).
impl<E, K> From<runner::Error<E, K>> for Error
where
    E: std::fmt::Debug + std::fmt::Display + Send + Sync + 'static,
    K: std::fmt::Debug + std::fmt::Display + Send + Sync + 'static,
{
    fn from(error: runner::Error<E, K>) -> Self {
        Self::Controller(Box::new(error))
    }
}

/// Any reconcile error that displays and debugs: `anyhow::Error` too.
#[cfg(feature = "controller")]
impl<E> From<finalizer::Error<E>> for Error
where
    E: std::fmt::Debug + std::fmt::Display + Send + Sync + 'static,
{
    fn from(error: finalizer::Error<E>) -> Self {
        Self::Finalizer(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full")]
    struct DiskFull;

    #[cfg(feature = "controller")]
    #[test]
    fn a_controller_error_keeps_its_reconciler_error_inside() {
        let key = crate::ObjectKey::new(Some("default"), "a").unwrap();
        let error: Error = crate::controller::Error::Reconcile {
            key,
            error: DiskFull,
        }
        .into();
        assert_eq!(
            error.to_string(),
            "reconcile of default/a failed: disk full"
        );
        assert!(matches!(error, Error::Controller(_)));
    }

    /// A reconciler written with anyhow: its controller and finalizer
    /// errors convert with `?`, and the message names the cause once.
    #[cfg(feature = "controller")]
    #[test]
    fn anyhow_reconcile_errors_convert() {
        fn reconcile_failed() -> Result<(), Error> {
            let key = crate::ObjectKey::new(Some("default"), "a").unwrap();
            Err(crate::controller::Error::Reconcile {
                key,
                error: anyhow::anyhow!("disk full"),
            })?
        }
        fn cleanup_failed() -> Result<(), Error> {
            Err(finalizer::Error::CleanupFailed(anyhow::anyhow!(
                "bucket busy"
            )))?
        }
        let error = reconcile_failed().unwrap_err();
        assert_eq!(
            error.to_string(),
            "reconcile of default/a failed: disk full"
        );
        assert!(std::error::Error::source(&error).is_none());
        let error = cleanup_failed().unwrap_err();
        assert!(matches!(error, Error::Finalizer(_)));
        assert_eq!(error.to_string(), "cleanup failed: bucket busy");
    }

    #[test]
    fn a_runner_reconcile_error_converts_with_its_message() {
        let error: Error = runner::Error::Reconcile {
            key: "default/a",
            error: DiskFull,
        }
        .into();
        assert_eq!(
            error.to_string(),
            "reconcile of default/a failed: disk full"
        );
    }

    #[test]
    fn the_error_is_a_boxed_error_and_a_tag() {
        // A `Box<dyn Error>` is two words; every other variant is one.
        assert!(std::mem::size_of::<Error>() <= 3 * std::mem::size_of::<usize>());
    }

    /// ER3: each public error type of the crate converts with `?`, into the
    /// variant that names its module, and keeps its message.
    #[test]
    fn er3_every_public_error_converts_with_its_message() {
        fn into_crate_error<E: Into<Error> + std::fmt::Display>(error: E) -> (Error, String) {
            let message = error.to_string();
            (error.into(), message)
        }
        let resource = crate::resource::WatchedResource::from_url("/api/v1/configmaps", None, None);
        let source_error = source::Error::WatchEvent {
            resource: "configmaps".into(),
            code: 410,
            reason: "Expired".into(),
            message: "too old resource version".into(),
        };
        #[cfg_attr(not(any(feature = "shard", feature = "controller")), allow(unused_mut))]
        let mut converted = vec![
            into_crate_error(informer::Error::Stopped),
            into_crate_error(informer::SyncError::Stopped { resource }),
            into_crate_error(source_error),
            into_crate_error(store::Error::MissingName),
            into_crate_error(runner::Error::Reconcile {
                key: "default/a",
                error: DiskFull,
            }),
        ];
        #[cfg(feature = "shard")]
        converted.push(into_crate_error(crate::shard::Error::EmptyIdentity));
        #[cfg(feature = "controller")]
        converted.push(into_crate_error(
            finalizer::Error::<DiskFull>::CleanupFailed(DiskFull),
        ));
        for (error, message) in &converted {
            assert_eq!(&error.to_string(), message);
            assert!(!matches!(error, Error::Kube(_)), "{error:?}");
        }
        let variants: Vec<_> = converted
            .iter()
            .map(|(error, _)| std::mem::discriminant(error))
            .collect();
        let distinct: std::collections::HashSet<_> = variants.iter().collect();
        assert_eq!(distinct.len(), variants.len(), "one variant per error type");
    }
}
