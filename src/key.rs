//! Object keys: `namespace/name`, or `name` for cluster-scoped objects (F2).
//!
//! An [`ObjectKey`] is one shared string, so cloning it is a reference-count
//! bump and hashing it hashes one contiguous slice: keys are cloned and hashed
//! on every delta, store write and notification.
//!
//! With the `kube-runtime` feature, keys convert to and from kube-runtime's
//! `ObjectRef` (`ObjectRef::from(&key)`, `ObjectKey::try_from(&object_ref)`,
//! `ObjectKey::to_object_ref` for dynamic kinds).

use std::{fmt, str::FromStr, sync::Arc};

use kube::Resource;
use smallvec::SmallVec;

#[cfg(feature = "kube-runtime")]
mod object_ref;

pub(crate) use error::Error;

/// The data plane's one error: why an object could not be keyed, queued or
/// stored. It lives beside [`ObjectKey`] because keying is the first thing
/// that can fail and every stage keys objects; the crate names it
/// [`store::Error`](crate::store::Error), and the FIFO and the store both
/// return it.
pub(crate) mod error {
    use std::{error::Error as StdError, fmt, sync::Arc};

    use super::ObjectKey;

    /// Why an object could not be keyed, queued or stored: what
    /// [`ObjectKey`]'s constructors (and its `FromStr`), a key function, the
    /// [`DeltaFifo`](crate::fifo::DeltaFifo) and the [`Store`](crate::Store)
    /// answer.
    ///
    /// The variants come in three groups: a key that cannot be made (the
    /// first five), an operation of the FIFO that was refused, and a store
    /// write or lookup that failed. A failed FIFO operation rejects only the
    /// object it was given: nothing already queued is lost, and items of a
    /// relist enqueued before the failing one stay.
    ///
    /// Two errors are equal when their variants and data are; two
    /// [`Transform`](Self::Transform) errors are equal when their keys are and
    /// they share one cause (a cause is compared by identity, not by text).
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer::{ObjectKey, store::Error};
    ///
    /// let error = "a/b/c".parse::<ObjectKey>().unwrap_err();
    /// assert_eq!(error, Error::Malformed("a/b/c".into()));
    /// assert_eq!(error.to_string(), "key \"a/b/c\" is not of the form namespace/name or name");
    /// ```
    #[derive(Debug, Clone)]
    #[non_exhaustive]
    pub enum Error {
        /// The object has no `metadata.name`.
        MissingName,
        /// The object's name is empty.
        EmptyName,
        /// The namespace is present but empty.
        EmptyNamespace,
        /// A name or namespace contains `/`, which would make the key ambiguous.
        Slash {
            /// `"name"` or `"namespace"`.
            part: &'static str,
            /// The offending value.
            value: String,
        },
        /// A key string had more than one `/`.
        Malformed(String),
        /// The FIFO's [transform](crate::fifo::FifoOptions::transform)
        /// rejected the object.
        Transform {
            /// The key of the rejected object.
            key: ObjectKey,
            /// The transform's error (also this error's
            /// [`source`](std::error::Error::source)).
            source: Arc<dyn StdError + Send + Sync + 'static>,
        },
        /// Deltas handed to [`requeue`](crate::fifo::DeltaFifo::requeue) hold
        /// an object whose key is not the key of the deltas.
        RequeueKeyMismatch {
            /// The key of the deltas.
            expected: ObjectKey,
            /// The key of the stray object.
            found: ObjectKey,
        },
        /// A streamed relist's object or end came without an open
        /// streamed relist (one the informer's source drives).
        NoListInProgress,
        /// User code the FIFO called panicked; the object it was called for
        /// was skipped (L9).
        Panicked {
            /// Which user code panicked.
            callback: UserCode,
            /// The panic message.
            message: String,
        },
        /// The FIFO is closed and has nothing left to pop.
        Closed,
        /// No index of the store has this name.
        UnknownIndex(String),
        /// An index function panicked; the write it was part of was refused
        /// and the store left as it was.
        IndexerPanicked {
            /// The name of the index whose function panicked.
            index: String,
            /// The panic's message.
            message: String,
        },
        /// A compact store held a version of this key whose bytes did not
        /// decode (CM6): the write that replaced it was made, but the
        /// replaced version is lost.
        Undecodable {
            /// The key written.
            key: String,
        },
    }

    impl fmt::Display for Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Self::MissingName => f.write_str("object has no name"),
                Self::EmptyName => f.write_str("object has an empty name"),
                Self::EmptyNamespace => f.write_str("object has an empty namespace"),
                Self::Slash { part, value } => write!(f, "{part} {value:?} contains '/'"),
                Self::Malformed(key) => {
                    write!(f, "key {key:?} is not of the form namespace/name or name")
                }
                // ER1: the transform's error is the source, not repeated here.
                Self::Transform { key, .. } => write!(f, "transform rejected object {key}"),
                Self::RequeueKeyMismatch { expected, found } => write!(
                    f,
                    "requeued deltas for key {expected} hold an object keyed {found}"
                ),
                Self::NoListInProgress => f.write_str("no streamed relist is in progress"),
                Self::Panicked { callback, message } => {
                    write!(f, "{callback} panicked: {message}")
                }
                Self::Closed => f.write_str("delta fifo is closed"),
                Self::UnknownIndex(name) => write!(f, "no index named {name:?}"),
                Self::IndexerPanicked { index, message } => {
                    write!(f, "index function {index:?} panicked: {message}")
                }
                Self::Undecodable { key } => write!(
                    f,
                    "the compact cache could not decode the version of {key:?} a write replaced"
                ),
            }
        }
    }

    impl StdError for Error {
        /// The transform's error itself, not its `Arc`, so `downcast_ref`
        /// finds its type.
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            match self {
                Self::Transform { source, .. } => Some(&**source),
                _ => None,
            }
        }
    }

    impl PartialEq for Error {
        fn eq(&self, other: &Self) -> bool {
            match (self, other) {
                (Self::MissingName, Self::MissingName)
                | (Self::EmptyName, Self::EmptyName)
                | (Self::EmptyNamespace, Self::EmptyNamespace)
                | (Self::NoListInProgress, Self::NoListInProgress)
                | (Self::Closed, Self::Closed) => true,
                (Self::Slash { part, value }, Self::Slash { part: p, value: v }) => {
                    (part, value) == (p, v)
                }
                (Self::Malformed(a), Self::Malformed(b))
                | (Self::UnknownIndex(a), Self::UnknownIndex(b))
                | (Self::Undecodable { key: a }, Self::Undecodable { key: b }) => a == b,
                (Self::Transform { key, source }, Self::Transform { key: k, source: s }) => {
                    key == k && Arc::ptr_eq(source, s)
                }
                (
                    Self::RequeueKeyMismatch { expected, found },
                    Self::RequeueKeyMismatch {
                        expected: e,
                        found: f,
                    },
                ) => (expected, found) == (e, f),
                (
                    Self::Panicked { callback, message },
                    Self::Panicked {
                        callback: c,
                        message: m,
                    },
                ) => (callback, message) == (c, m),
                (
                    Self::IndexerPanicked { index, message },
                    Self::IndexerPanicked {
                        index: i,
                        message: m,
                    },
                ) => (index, message) == (i, m),
                _ => false,
            }
        }
    }

    impl Eq for Error {}

    /// User code a [`DeltaFifo`](crate::fifo::DeltaFifo) calls, named in
    /// [`Error::Panicked`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum UserCode {
        /// The [key function](crate::fifo::FifoOptions::key_fn).
        KeyFunction,
        /// The [transform](crate::fifo::FifoOptions::transform).
        Transform,
        /// The [known-objects view](crate::fifo::FifoOptions::known_objects).
        KnownObjects,
    }

    impl fmt::Display for UserCode {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Self::KeyFunction => f.write_str("the key function"),
                Self::Transform => f.write_str("the transform"),
                Self::KnownObjects => f.write_str("the known-objects view"),
            }
        }
    }
}

/// The identity of an object inside an informer: `namespace/name`, or `name`
/// for cluster-scoped objects.
///
/// Two keys are equal when their strings are equal; ordering is by string.
///
/// # Examples
///
/// ```
/// use kube_informer::ObjectKey;
///
/// let key: ObjectKey = "default/web".parse()?;
/// assert_eq!(key.namespace(), Some("default"));
/// assert_eq!(key.name(), "web");
/// assert_eq!(key.to_string(), "default/web");
///
/// let node = ObjectKey::new(None, "node-1")?;
/// assert_eq!(node.namespace(), None);
/// assert_eq!(node.as_str(), "node-1");
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// Builds a key from an optional namespace and a name.
    ///
    /// An empty namespace counts as no namespace, the way the API server treats
    /// cluster-scoped objects. Fails on an empty name or on a `/` in either part.
    pub fn new(namespace: Option<&str>, name: &str) -> Result<Self, Error> {
        if name.is_empty() {
            return Err(Error::EmptyName);
        }
        if name.contains('/') {
            return Err(Error::Slash {
                part: "name",
                value: name.to_owned(),
            });
        }
        match namespace {
            Some(ns) if !ns.is_empty() => {
                if ns.contains('/') {
                    return Err(Error::Slash {
                        part: "namespace",
                        value: ns.to_owned(),
                    });
                }
                Ok(Self(join_namespace_and_name(ns, name)))
            }
            _ => Ok(Self(name.into())),
        }
    }

    /// The key of a Kubernetes object: its namespace (if any) and its name.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kube_informer::{ObjectKey, store::Error};
    ///
    /// let cm = ConfigMap {
    ///     metadata: ObjectMeta {
    ///         namespace: Some("default".into()),
    ///         name: Some("settings".into()),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// assert_eq!(ObjectKey::from_object(&cm)?.as_str(), "default/settings");
    ///
    /// let nameless = ConfigMap::default();
    /// assert_eq!(ObjectKey::from_object(&nameless), Err(Error::MissingName));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn from_object<K: Resource>(object: &K) -> Result<Self, Error> {
        let meta = object.meta();
        let name = meta.name.as_deref().ok_or(Error::MissingName)?;
        Self::new(meta.namespace.as_deref(), name)
    }

    /// The namespace, or `None` for a cluster-scoped key.
    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }

    /// The name.
    pub fn name(&self) -> &str {
        match self.0.split_once('/') {
            Some((_, name)) => name,
            None => &self.0,
        }
    }

    /// The whole key as a string: `namespace/name` or `name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `namespace/name` in one shared allocation. Keys are built for every event,
/// so the joined bytes are assembled on the stack (names are at most 253
/// bytes, namespaces 63) instead of in a `String` that `Arc<str>` would copy.
fn join_namespace_and_name(namespace: &str, name: &str) -> Arc<str> {
    with_joined(namespace, name, |key: &str| Arc::from(key))
}

/// Calls `f` with `namespace/name`, assembled on the stack.
fn with_joined<R>(namespace: &str, name: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut joined: SmallVec<[u8; 320]> = SmallVec::with_capacity(namespace.len() + 1 + name.len());
    joined.extend_from_slice(namespace.as_bytes());
    joined.push(b'/');
    joined.extend_from_slice(name.as_bytes());
    match std::str::from_utf8(&joined) {
        Ok(key) => f(key),
        // Unreachable (both parts are str), but a fallback costs nothing.
        Err(_) => f(&format!("{namespace}/{name}")),
    }
}

/// Calls `f` with the key string of `name` in `namespace`, without building
/// an [`ObjectKey`] (for lookups: no allocation). `None`, without calling
/// `f`, when no key has these parts (see [`ObjectKey::new`]).
pub(crate) fn with_key_str<R>(
    namespace: Option<&str>,
    name: &str,
    f: impl FnOnce(&str) -> R,
) -> Option<R> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    match namespace {
        Some(ns) if ns.contains('/') => None,
        Some(ns) if !ns.is_empty() => Some(with_joined(ns, name, f)),
        _ => Some(f(name)),
    }
}

impl FromStr for ObjectKey {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) => Self::new(None, name),
            (Some(""), Some(_), None) => Err(Error::EmptyNamespace),
            (Some(ns), Some(name), None) => Self::new(Some(ns), name),
            _ => Err(Error::Malformed(s.to_owned())),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A function from an object to its key, as informers and FIFOs keep it
/// (set with `key_fn` on [`InformerBuilder`](crate::InformerBuilder) or
/// [`FifoOptions`](crate::fifo::FifoOptions)).
pub(crate) type KeyFn<K> = Arc<dyn Fn(&K) -> Result<ObjectKey, Error> + Send + Sync>;

/// The key function used when none is set: [`ObjectKey::from_object`].
pub(crate) fn default_key_fn<K: Resource + 'static>() -> KeyFn<K> {
    Arc::new(ObjectKey::from_object::<K>)
}

#[cfg(test)]
mod tests {
    use super::*;

    // F2
    #[test]
    fn f2_namespaced_and_cluster_scoped_keys() {
        let k = ObjectKey::new(Some("ns"), "a").unwrap();
        assert_eq!(k.as_str(), "ns/a");
        assert_eq!(k.namespace(), Some("ns"));
        assert_eq!(k.name(), "a");
        let c = ObjectKey::new(None, "a").unwrap();
        assert_eq!(c.as_str(), "a");
        assert_eq!(c.namespace(), None);
        assert_eq!(ObjectKey::new(Some(""), "a").unwrap(), c);
    }

    // F2
    #[test]
    fn f2_bad_keys_are_errors() {
        assert_eq!(ObjectKey::new(None, ""), Err(Error::EmptyName));
        assert!(matches!(
            ObjectKey::new(Some("a/b"), "c"),
            Err(Error::Slash {
                part: "namespace",
                ..
            })
        ));
        assert!(matches!(
            ObjectKey::new(None, "a/b"),
            Err(Error::Slash { part: "name", .. })
        ));
        assert_eq!(
            "a/b/c".parse::<ObjectKey>(),
            Err(Error::Malformed("a/b/c".into()))
        );
        assert_eq!("/x".parse::<ObjectKey>(), Err(Error::EmptyNamespace));
        assert_eq!("x/".parse::<ObjectKey>(), Err(Error::EmptyName));
    }

    #[test]
    fn parse_round_trips() {
        for s in ["a", "ns/a"] {
            assert_eq!(s.parse::<ObjectKey>().unwrap().to_string(), s);
        }
    }
}
