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

/// Why an object or a string could not be turned into an [`ObjectKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The object has no `metadata.name`.
    #[error("object has no name")]
    MissingName,
    /// The object's name is empty.
    #[error("object has an empty name")]
    EmptyName,
    /// The namespace is present but empty.
    #[error("object has an empty namespace")]
    EmptyNamespace,
    /// A name or namespace contains `/`, which would make the key ambiguous.
    #[error("{part} {value:?} contains '/'")]
    Slash {
        /// `"name"` or `"namespace"`.
        part: &'static str,
        /// The offending value.
        value: String,
    },
    /// A key string had more than one `/`.
    #[error("key {0:?} is not of the form namespace/name or name")]
    Malformed(String),
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
/// # Ok::<(), kube_informer::KeyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// Builds a key from an optional namespace and a name.
    ///
    /// An empty namespace counts as no namespace, the way the API server treats
    /// cluster-scoped objects. Fails on an empty name or on a `/` in either part.
    pub fn new(namespace: Option<&str>, name: &str) -> Result<Self, KeyError> {
        if name.is_empty() {
            return Err(KeyError::EmptyName);
        }
        if name.contains('/') {
            return Err(KeyError::Slash {
                part: "name",
                value: name.to_owned(),
            });
        }
        match namespace {
            Some(ns) if !ns.is_empty() => {
                if ns.contains('/') {
                    return Err(KeyError::Slash {
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
    /// use kube_informer::{KeyError, ObjectKey};
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
    /// assert_eq!(ObjectKey::from_object(&nameless), Err(KeyError::MissingName));
    /// # Ok::<(), KeyError>(())
    /// ```
    pub fn from_object<K: Resource>(object: &K) -> Result<Self, KeyError> {
        let meta = object.meta();
        let name = meta.name.as_deref().ok_or(KeyError::MissingName)?;
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
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) => Self::new(None, name),
            (Some(""), Some(_), None) => Err(KeyError::EmptyNamespace),
            (Some(ns), Some(name), None) => Self::new(Some(ns), name),
            _ => Err(KeyError::Malformed(s.to_owned())),
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

/// A function from an object to its key, for informers and FIFOs that key
/// objects some other way than `namespace/name`.
///
/// The default everywhere is [`ObjectKey::from_object`].
pub type KeyFn<K> = Arc<dyn Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync>;

/// The default [`KeyFn`]: [`ObjectKey::from_object`].
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Node;
/// use kube_informer::key::default_key_fn;
///
/// let key_fn = default_key_fn::<Node>();
/// let mut node = Node::default();
/// node.metadata.name = Some("node-1".into());
/// assert_eq!(key_fn(&node)?.as_str(), "node-1");
/// # Ok::<(), kube_informer::KeyError>(())
/// ```
pub fn default_key_fn<K: Resource + 'static>() -> KeyFn<K> {
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
        assert_eq!(ObjectKey::new(None, ""), Err(KeyError::EmptyName));
        assert!(matches!(
            ObjectKey::new(Some("a/b"), "c"),
            Err(KeyError::Slash {
                part: "namespace",
                ..
            })
        ));
        assert!(matches!(
            ObjectKey::new(None, "a/b"),
            Err(KeyError::Slash { part: "name", .. })
        ));
        assert_eq!(
            "a/b/c".parse::<ObjectKey>(),
            Err(KeyError::Malformed("a/b/c".into()))
        );
        assert_eq!("/x".parse::<ObjectKey>(), Err(KeyError::EmptyNamespace));
        assert_eq!("x/".parse::<ObjectKey>(), Err(KeyError::EmptyName));
    }

    #[test]
    fn parse_round_trips() {
        for s in ["a", "ns/a"] {
            assert_eq!(s.parse::<ObjectKey>().unwrap().to_string(), s);
        }
    }
}
