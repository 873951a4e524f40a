//! Conversions between [`ObjectKey`] and kube-runtime's [`ObjectRef`], for
//! programs that mix informers with kube-runtime's controller machinery.

use kube_runtime::reflector::{Lookup, ObjectRef};

use super::{Error, ObjectKey};

impl ObjectKey {
    /// The kube-runtime [`ObjectRef`] naming the same object, for a kind
    /// whose dynamic type is given (e.g. the `ApiResource` of a
    /// [`DynamicObject`](kube::core::DynamicObject)). For static kinds,
    /// `ObjectRef::from(&key)` does the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    /// use kube_informer::ObjectKey;
    ///
    /// let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    /// let key: ObjectKey = "default/w".parse()?;
    /// let object_ref = key.to_object_ref::<DynamicObject>(resource);
    /// assert_eq!(object_ref.name, "w");
    /// assert_eq!(object_ref.namespace.as_deref(), Some("default"));
    /// # Ok::<(), kube_informer::store::Error>(())
    /// ```
    pub fn to_object_ref<K: Lookup>(&self, dyntype: K::DynamicType) -> ObjectRef<K> {
        let object_ref = ObjectRef::new_with(self.name(), dyntype);
        match self.namespace() {
            Some(namespace) => object_ref.within(namespace),
            None => object_ref,
        }
    }
}

/// The [`ObjectRef`] of a static kind naming the same object as the key.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_informer::ObjectKey;
/// use kube_runtime::reflector::ObjectRef;
///
/// let key: ObjectKey = "default/web-0".parse()?;
/// let object_ref = ObjectRef::<Pod>::from(&key);
/// assert_eq!(object_ref, ObjectRef::new("web-0").within("default"));
/// assert_eq!(ObjectKey::try_from(&object_ref)?, key);
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
impl<K> From<&ObjectKey> for ObjectRef<K>
where
    K: Lookup,
    K::DynamicType: Default,
{
    fn from(key: &ObjectKey) -> Self {
        key.to_object_ref(K::DynamicType::default())
    }
}

/// The key of the object an [`ObjectRef`] names. Fails as
/// [`ObjectKey::new`] does, on names no key can have (empty, or with a `/`).
impl<K: Lookup + ?Sized> TryFrom<&ObjectRef<K>> for ObjectKey {
    type Error = Error;

    fn try_from(object_ref: &ObjectRef<K>) -> Result<Self, Self::Error> {
        ObjectKey::new(object_ref.namespace.as_deref(), &object_ref.name)
    }
}

/// The key of the object an [`ObjectRef`] names; see the impl for
/// `&ObjectRef`.
impl<K: Lookup + ?Sized> TryFrom<ObjectRef<K>> for ObjectKey {
    type Error = Error;

    fn try_from(object_ref: ObjectRef<K>) -> Result<Self, Self::Error> {
        ObjectKey::try_from(&object_ref)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Node};

    use super::*;

    #[test]
    fn keys_and_object_refs_round_trip() {
        let key: ObjectKey = "ns/a".parse().unwrap();
        let object_ref = ObjectRef::<ConfigMap>::from(&key);
        assert_eq!(object_ref, ObjectRef::new("a").within("ns"));
        assert_eq!(ObjectKey::try_from(object_ref).unwrap(), key);

        let node: ObjectKey = "node-1".parse().unwrap();
        let object_ref = ObjectRef::<Node>::from(&node);
        assert_eq!(object_ref.namespace, None);
        assert_eq!(ObjectKey::try_from(&object_ref).unwrap(), node);
    }

    #[test]
    fn object_refs_no_key_can_name_are_errors() {
        assert_eq!(
            ObjectKey::try_from(ObjectRef::<ConfigMap>::new("")),
            Err(Error::EmptyName)
        );
        assert!(matches!(
            ObjectKey::try_from(ObjectRef::<ConfigMap>::new("a/b").within("ns")),
            Err(Error::Slash { part: "name", .. })
        ));
    }
}
