//! [`SyncError`]: why a wait for an informer's first sync gave up (I6–I10).
//!
//! Below the stages (it names only the watched resource): an informer, its
//! store and its subscriptions all answer their `wait_until_synced` with it.

use std::{error::Error as StdError, fmt, sync::Arc, time::Duration};

use crate::resource::WatchedResource;

/// Why a wait for an informer's first sync ended without it:
/// [`Informer::wait_until_synced`](crate::Informer::wait_until_synced),
/// [`Store::wait_until_synced`](crate::Store::wait_until_synced),
/// [`SyncStatus::wait_until_synced`](crate::dispatch::SyncStatus::wait_until_synced)
/// and [`InformerFactory::wait_until_synced`](crate::InformerFactory::wait_until_synced)
/// answer with it.
///
/// Each variant names the [`WatchedResource`] as the informer knows it
/// (group, version, plural, namespace, selectors); the message says what
/// to check. None of them stops the informer: on a refusal it keeps
/// retrying (R9), and a later wait may succeed.
///
/// An informer built from a stream
/// ([`Informer::builder_from_stream`](crate::Informer::builder_from_stream))
/// has no HTTP answers unless its stream yields them, so its wait ends
/// with [`Stopped`](Self::Stopped) only; one whose stream yields
/// [`source::Error`](crate::source::Error)s (or errors with a `kube::Error`
/// on their [`source`](std::error::Error::source) chain) is refused as one
/// built from an `Api` is.
///
/// A wait has no deadline of its own: wrap it in [`tokio::time::timeout`]
/// and, when that passes, read
/// [`Informer::last_error`](crate::Informer::last_error) for what the
/// source reported last. [`TimedOut`](Self::TimedOut) is the answer of the
/// waits that take a timeout themselves: a controller's
/// [`sync_timeout`](crate::controller::Config::sync_timeout) and the factory's.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{Informer, informer::SyncError};
/// use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), usize::MAX);
/// let informer = Informer::builder(Api::<ConfigMap>::namespaced(server.client(), "web")).build();
/// tokio::spawn(informer.run());
/// match informer.wait_until_synced().await {
///     Err(SyncError::Refused { resource, status, message, .. }) => {
///         assert_eq!((resource.resource.as_str(), status), ("configmaps", 403));
///         assert_eq!(message, "forbidden by the fake server");
///     }
///     other => panic!("expected a refusal, got {other:?}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SyncError {
    /// The informer had not synced when the timeout of a wait that takes
    /// one passed (I8): a controller's or the factory's. Its
    /// [`source`](std::error::Error::source) is the last error the
    /// informer's source reported before that, if there was one; with
    /// none, the list was slow or the informer was not running.
    TimedOut {
        /// The resource that did not sync.
        resource: WatchedResource,
        /// The timeout the wait was given.
        waited: Duration,
        /// The last error the source reported before the timeout (an
        /// [`informer::Error`](crate::informer::Error)).
        last_error: Option<Arc<dyn StdError + Send + Sync + 'static>>,
    },
    /// The API server refused to list or watch the resource before the
    /// first sync (I7): 403 Forbidden (the program's identity lacks RBAC
    /// rules for it) or 401 Unauthorized (its credentials were not
    /// accepted).
    Refused {
        /// The resource refused.
        resource: WatchedResource,
        /// The HTTP status: 401 or 403.
        status: u16,
        /// The API server's message.
        message: String,
    },
    /// The API server does not serve the resource (404) (I7): a
    /// CustomResourceDefinition not installed, a version it does not
    /// serve, or a wrong group or plural.
    NotFound {
        /// The resource not served.
        resource: WatchedResource,
        /// The API server's message.
        message: String,
    },
    /// The informer stopped before it synced (I9): stopped, cancelled,
    /// dropped by every holder, its source ended, or user code panicked
    /// (see [`Informer::errors`](crate::Informer::errors) and the
    /// subscriptions' end reasons); for a subscription, also refused by its
    /// informer or stopped before this subscriber was handed its initial
    /// list.
    Stopped {
        /// The resource whose informer stopped.
        resource: WatchedResource,
    },
}

impl SyncError {
    /// The refusal an API answer before the first sync means, if it means
    /// one: 401 and 403 are [`Refused`](Self::Refused), 404 is
    /// [`NotFound`](Self::NotFound).
    pub(crate) fn from_answer(
        resource: &WatchedResource,
        status: u16,
        message: &str,
    ) -> Option<Self> {
        match status {
            401 | 403 => Some(Self::Refused {
                resource: resource.clone(),
                status,
                message: message.to_owned(),
            }),
            404 => Some(Self::NotFound {
                resource: resource.clone(),
                message: message.to_owned(),
            }),
            _ => None,
        }
    }

    /// The resource the wait was for.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let informer = Informer::<ConfigMap>::builder_from_stream(
    ///     futures::stream::pending::<Result<Event<ConfigMap>, std::io::Error>>(),
    /// )
    /// .build();
    /// informer.stop();
    /// let error = informer.wait_until_synced().await.unwrap_err();
    /// assert_eq!(error.resource().resource, "ConfigMap");
    /// # }
    /// ```
    pub fn resource(&self) -> &WatchedResource {
        match self {
            Self::TimedOut { resource, .. }
            | Self::Refused { resource, .. }
            | Self::NotFound { resource, .. }
            | Self::Stopped { resource } => resource,
        }
    }
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ER1: the last error of a timeout is its `source()`, not repeated
        // here; a refusal's message is the server's, kept as a field.
        match self {
            Self::TimedOut {
                resource,
                waited,
                last_error: Some(_),
            } => write!(
                f,
                "{resource} did not sync within {waited:?} while its source was failing"
            ),
            Self::TimedOut {
                resource,
                waited,
                last_error: None,
            } => write!(
                f,
                "{resource} did not sync within {waited:?} and reported no error; \
                 is its informer running (its `run` spawned, or the factory started)?"
            ),
            Self::Refused {
                resource,
                status: 401,
                message,
            } => {
                write!(
                    f,
                    "{resource} cannot be listed: the API server did not accept the program's credentials (401)"
                )?;
                said(f, message)?;
                f.write_str("; check its kubeconfig, token or client certificate")
            }
            Self::Refused {
                resource,
                status,
                message,
            } => {
                write!(f, "{resource} is forbidden ({status})")?;
                said(f, message)?;
                if !resource.version.is_empty() {
                    write!(
                        f,
                        "; the identity the program runs as needs RBAC rules that allow list and watch on {}",
                        Rbac(resource)
                    )?;
                }
                Ok(())
            }
            Self::NotFound { resource, message } => {
                write!(f, "{resource} is not served by the API server (404)")?;
                said(f, message)?;
                if !resource.group.is_empty() {
                    write!(
                        f,
                        "; install the CustomResourceDefinition (or API service) that serves {}.{} at version {}, or check the group, version and plural of {}",
                        resource.resource,
                        resource.group,
                        resource.version,
                        resource.path()
                    )?;
                } else if !resource.version.is_empty() {
                    write!(f, "; check the version and plural of {}", resource.path())?;
                }
                Ok(())
            }
            Self::Stopped { resource } => write!(
                f,
                "the informer of {resource} stopped before it synced \
                 (stopped, cancelled, its source ended, or user code panicked)"
            ),
        }
    }
}

impl StdError for SyncError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::TimedOut {
                last_error: Some(error),
                ..
            } => Some(&**error),
            _ => None,
        }
    }
}

/// `: <the server's message>`, when it said one.
fn said(f: &mut fmt::Formatter<'_>, message: &str) -> fmt::Result {
    if message.is_empty() {
        Ok(())
    } else {
        write!(f, ": {message}")
    }
}

/// What an RBAC rule must name for a resource: its plural, its API group
/// and where (one namespace: a Role there will do; all namespaces or a
/// cluster-scoped resource: a ClusterRole).
struct Rbac<'a>(&'a WatchedResource);

impl fmt::Display for Rbac<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resource = self.0;
        write!(
            f,
            "{:?} in API group {:?}",
            resource.resource, resource.group
        )?;
        match &resource.namespace {
            Some(namespace) => write!(
                f,
                " in namespace {namespace} (a Role or ClusterRole, bound there)"
            ),
            None => f.write_str(" in every namespace (a ClusterRole and a ClusterRoleBinding)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmaps_in(namespace: Option<&str>) -> WatchedResource {
        let url = match namespace {
            Some(namespace) => format!("/api/v1/namespaces/{namespace}/configmaps"),
            None => "/api/v1/configmaps".to_owned(),
        };
        WatchedResource::from_url(&url, None, None)
    }

    // I7: each refusal says what it is about, what the server said and
    // what to check.
    #[test]
    fn i7_messages_name_the_resource_the_status_and_what_to_check() {
        let forbidden = SyncError::from_answer(&configmaps_in(Some("web")), 403, "no").unwrap();
        assert_eq!(
            forbidden.to_string(),
            "configmaps in namespace web is forbidden (403): no; the identity the program runs as \
             needs RBAC rules that allow list and watch on \"configmaps\" in API group \"\" in \
             namespace web (a Role or ClusterRole, bound there)"
        );
        let unauthorized = SyncError::from_answer(&configmaps_in(None), 401, "").unwrap();
        assert_eq!(
            unauthorized.to_string(),
            "configmaps cannot be listed: the API server did not accept the program's credentials \
             (401); check its kubeconfig, token or client certificate"
        );
        let crd = WatchedResource::from_url("/apis/example.com/v1/widgets", None, None);
        let missing = SyncError::from_answer(&crd, 404, "not found").unwrap();
        assert_eq!(
            missing.to_string(),
            "widgets.example.com is not served by the API server (404): not found; install the \
             CustomResourceDefinition (or API service) that serves widgets.example.com at version \
             v1, or check the group, version and plural of /apis/example.com/v1/widgets"
        );
        assert!(SyncError::from_answer(&crd, 500, "boom").is_none());
        assert!(SyncError::from_answer(&crd, 410, "gone").is_none());
    }

    // I8, ER1: a timeout's last error is its source, not part of its message.
    #[test]
    fn i8_a_timeout_keeps_its_last_error_as_the_source() {
        let resource = configmaps_in(None);
        let quiet = SyncError::TimedOut {
            resource: resource.clone(),
            waited: Duration::from_secs(30),
            last_error: None,
        };
        assert!(quiet.source().is_none());
        assert!(quiet.to_string().contains("reported no error"), "{quiet}");
        let failing = SyncError::TimedOut {
            resource,
            waited: Duration::from_secs(30),
            last_error: Some(Arc::new(std::io::Error::other("the event stream failed"))),
        };
        assert_eq!(
            failing.to_string(),
            "configmaps did not sync within 30s while its source was failing"
        );
        let cause = failing.source().expect("the last error");
        assert_eq!(cause.to_string(), "the event stream failed");
        assert!(!failing.to_string().contains("stream failed"));
    }
}
