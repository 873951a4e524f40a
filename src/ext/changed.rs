//! Change filters: which updates matter to a subscriber.
//!
//! A [`ChangeFilter`] looks at an update's old and new object and says whether
//! the change matters; [`filter_changes`](crate::ext::NotificationStreamExt::filter_changes)
//! drops the watched updates it turns away. This module holds the trait, its
//! combinators and the filters most controllers need: a change of
//! [`generation`], [`labels`], [`annotations`], [`finalizers`] or
//! [`resource_version`]. Any closure `Fn(&K, &K) -> bool` is a filter too.
//!
//! kube-runtime's `Predicate` (and its `predicates::generation` and
//! friends) is another idea under another name: it hashes one state of an
//! object and passes when the hash differs from the one it remembered. A
//! [`ChangeFilter`] remembers nothing; it compares the two states an
//! update carries.
//!
//! # Rules
//!
//! - **P1 What passes.** Through
//!   [`filter_changes`](crate::ext::NotificationStreamExt::filter_changes), every
//!   `Added` and every `Deleted` passes, whatever the filter says: a
//!   filter judges a change between two states, and those carry only
//!   one. A
//!   watched `Updated` (`resync: false`) passes exactly when
//!   [`passes(old, new)`](ChangeFilter::passes) is true.
//! - **P2 Resyncs pass.** An `Updated` with `resync: true` passes without
//!   asking the filter. A subscriber that set a resync period wants each
//!   round to reach its handler; a filter judges watched changes only.
//!   Filters that judge every update event alike (controller-runtime's
//!   `GenerationChangedPredicate`, for one) drop resyncs instead, since a
//!   resync changes nothing; to drop them here, add
//!   [`changed_only`](crate::ext::NotificationStreamExt::changed_only).
//! - **P3 Combinators.** [`a.or(b)`](ChangeFilter::or) passes when either
//!   passes, [`a.and(b)`](ChangeFilter::and) when both do; `b` is asked only
//!   when `a` does not decide alone. Closures `Fn(&K, &K) -> bool` and
//!   `Box`/`Arc<dyn ChangeFilter<K> + Send + Sync>` are filters and combine
//!   the same way.
//! - **P4 Generation, and its fallback.** [`generation`] passes when
//!   `metadata.generation` differs. When either side has no generation
//!   (kinds without a spec/status split, such as ConfigMap or Secret, have
//!   none) it falls back to the resourceVersion: it passes when that differs,
//!   so on such kinds it lets every watched update through rather than
//!   none.
//! - **P5 Fields.** [`labels`], [`annotations`] and [`finalizers`] pass when
//!   that field differs; a missing field equals an empty one. Finalizers are
//!   compared as the list they are, so a reorder is a change.
//! - **P6 resourceVersion.** [`resource_version`] passes when the
//!   resourceVersion strings differ; a missing one reads as the empty
//!   string, as in [`changed_only`](crate::ext::NotificationStreamExt::changed_only).
//! - **P7 Auto traits.** The filters these functions build, and their `or`
//!   and `and`, are `Send + Sync`; the streams
//!   [`NotificationStreamExt`](crate::ext::NotificationStreamExt) returns
//!   are `FusedStream`s, and `Send`, `Sync` and `Unpin` over a subscription,
//!   so they move into spawned tasks and `select!` as they are.
//!
//! # Examples
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kube_informer::ext::{ChangeFilter, changed};
//!
//! // Reconcile on spec changes and on label changes.
//! let matters = changed::generation().or(changed::labels());
//!
//! let mut old = Deployment::default();
//! old.metadata.generation = Some(1);
//! old.metadata.resource_version = Some("10".into());
//! let mut status_only = old.clone();
//! status_only.metadata.resource_version = Some("11".into());
//! let mut relabelled = status_only.clone();
//! relabelled.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
//!
//! assert!(!matters.passes(&old, &status_only));
//! assert!(matters.passes(&status_only, &relabelled));
//! ```

use std::{collections::BTreeMap, fmt, marker::PhantomData, sync::Arc};

use kube::Resource;

use crate::notification::same_resource_version;

/// Whether the change from `old` to `new` matters.
///
/// Implemented by the filters of this module, by their combinations
/// ([`or`](Self::or), [`and`](Self::and)) and by every closure
/// `Fn(&K, &K) -> bool`. The trait is object safe apart from the two
/// combinators, so filters chosen at run time can be kept as
/// `Box<dyn ChangeFilter<K> + Send + Sync>` or `Arc<dyn ChangeFilter<K> + Send + Sync>`,
/// which are filters themselves.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// // A closure: does the data differ?
/// let data_changed = |old: &ConfigMap, new: &ConfigMap| old.data != new.data;
/// let matters: Arc<dyn ChangeFilter<ConfigMap> + Send + Sync> =
///     Arc::new(changed::labels().or(data_changed));
///
/// let old = ConfigMap::default();
/// let mut new = ConfigMap::default();
/// new.data = Some([("k".to_string(), "v".to_string())].into());
/// assert!(matters.passes(&old, &new));
/// assert!(!matters.passes(&old, &old.clone()));
/// ```
pub trait ChangeFilter<K> {
    /// Whether the change from `old` to `new` matters.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::ext::{ChangeFilter, changed};
    ///
    /// let mut old = ConfigMap::default();
    /// old.metadata.finalizers = Some(vec![]);
    /// let mut new = ConfigMap::default();
    /// new.metadata.finalizers = None;
    /// // A missing list equals an empty one (P5).
    /// assert!(!changed::finalizers().passes(&old, &new));
    /// ```
    fn passes(&self, old: &K, new: &K) -> bool;

    /// Passes when `self` or `other` passes; `other` is asked only when
    /// `self` does not pass (P3). Both are `Send + Sync`, and so is the
    /// combination, which a controller can hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::ext::{ChangeFilter, changed};
    ///
    /// let mut old = ConfigMap::default();
    /// old.metadata.resource_version = Some("1".into());
    /// let mut new = old.clone();
    /// new.metadata.resource_version = Some("2".into());
    /// new.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    ///
    /// let either = changed::labels().or(changed::annotations());
    /// assert!(either.passes(&old, &new));
    /// ```
    #[must_use = "a change filter does nothing unless asked"]
    fn or<P: ChangeFilter<K> + Send + Sync>(self, other: P) -> impl ChangeFilter<K> + Send + Sync
    where
        Self: Sized + Send + Sync,
    {
        Or {
            first: self,
            second: other,
        }
    }

    /// Passes when `self` and `other` both pass; `other` is asked only when
    /// `self` passes (P3). Both are `Send + Sync`, and so is the
    /// combination.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::ext::{ChangeFilter, changed};
    ///
    /// let mut old = ConfigMap::default();
    /// old.metadata.resource_version = Some("1".into());
    /// let mut new = old.clone();
    /// new.metadata.resource_version = Some("2".into());
    /// new.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
    ///
    /// // Labels changed, and the new object is not being deleted.
    /// let live = |_: &ConfigMap, new: &ConfigMap| new.metadata.deletion_timestamp.is_none();
    /// assert!(changed::labels().and(live).passes(&old, &new));
    /// ```
    #[must_use = "a change filter does nothing unless asked"]
    fn and<P: ChangeFilter<K> + Send + Sync>(self, other: P) -> impl ChangeFilter<K> + Send + Sync
    where
        Self: Sized + Send + Sync,
    {
        And {
            first: self,
            second: other,
        }
    }
}

impl<K, F> ChangeFilter<K> for F
where
    F: Fn(&K, &K) -> bool,
{
    fn passes(&self, old: &K, new: &K) -> bool {
        self(old, new)
    }
}

impl<K> ChangeFilter<K> for Box<dyn ChangeFilter<K> + Send + Sync> {
    fn passes(&self, old: &K, new: &K) -> bool {
        (**self).passes(old, new)
    }
}

impl<K> ChangeFilter<K> for Arc<dyn ChangeFilter<K> + Send + Sync> {
    fn passes(&self, old: &K, new: &K) -> bool {
        (**self).passes(old, new)
    }
}

/// ChangeFilter for the [`or`](ChangeFilter::or) method.
#[derive(Debug, Clone, Copy)]
struct Or<A, B> {
    first: A,
    second: B,
}

impl<K, A: ChangeFilter<K>, B: ChangeFilter<K>> ChangeFilter<K> for Or<A, B> {
    fn passes(&self, old: &K, new: &K) -> bool {
        self.first.passes(old, new) || self.second.passes(old, new)
    }
}

/// ChangeFilter for the [`and`](ChangeFilter::and) method.
#[derive(Debug, Clone, Copy)]
struct And<A, B> {
    first: A,
    second: B,
}

impl<K, A: ChangeFilter<K>, B: ChangeFilter<K>> ChangeFilter<K> for And<A, B> {
    fn passes(&self, old: &K, new: &K) -> bool {
        self.first.passes(old, new) && self.second.passes(old, new)
    }
}

/// Passes when `metadata.generation` changed; on kinds without a
/// generation, when the resourceVersion changed (P4).
///
/// The API server bumps the generation when an object's spec changes (on
/// a custom resource: any change outside metadata, and outside status when
/// the status subresource is on), so this filter lets spec changes
/// through and turns away status-only and metadata-only writes. Where either side has no
/// generation there is nothing to compare, and it passes when the
/// resourceVersion differs, which for a watched update is always: it keeps
/// a change rather than lose one.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// let mut old = Deployment::default();
/// old.metadata.generation = Some(3);
/// old.metadata.resource_version = Some("100".into());
/// let mut new = old.clone();
/// new.metadata.resource_version = Some("101".into()); // a status write
/// assert!(!changed::generation().passes(&old, &new));
/// new.metadata.generation = Some(4); // a spec change
/// assert!(changed::generation().passes(&old, &new));
///
/// // A ConfigMap has no generation: the resourceVersion decides.
/// let mut old = ConfigMap::default();
/// old.metadata.resource_version = Some("7".into());
/// let mut new = old.clone();
/// new.metadata.resource_version = Some("8".into());
/// assert!(changed::generation().passes(&old, &new));
/// ```
#[must_use = "a change filter does nothing unless asked"]
pub fn generation<K: Resource>() -> impl ChangeFilter<K> + Copy + fmt::Debug + Send + Sync {
    GenerationChanged::new()
}

/// Passes when `metadata.labels` changed; missing equals empty (P5).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// let mut old = ConfigMap::default();
/// old.metadata.labels = Some(Default::default());
/// let mut new = ConfigMap::default();
/// assert!(!changed::labels().passes(&old, &new)); // empty and missing
/// new.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// assert!(changed::labels().passes(&old, &new));
/// ```
#[must_use = "a change filter does nothing unless asked"]
pub fn labels<K: Resource>() -> impl ChangeFilter<K> + Copy + fmt::Debug + Send + Sync {
    LabelsChanged::new()
}

/// Passes when `metadata.annotations` changed; missing equals empty (P5).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// let old = ConfigMap::default();
/// let mut new = ConfigMap::default();
/// new.metadata.annotations = Some([("owner".to_string(), "team-a".to_string())].into());
/// assert!(changed::annotations().passes(&old, &new));
/// assert!(!changed::annotations().passes(&new, &new.clone()));
/// ```
#[must_use = "a change filter does nothing unless asked"]
pub fn annotations<K: Resource>() -> impl ChangeFilter<K> + Copy + fmt::Debug + Send + Sync {
    AnnotationsChanged::new()
}

/// Passes when `metadata.finalizers` changed, compared as a list (a
/// reorder is a change); missing equals empty (P5).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// let old = ConfigMap::default();
/// let mut new = ConfigMap::default();
/// new.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
/// assert!(changed::finalizers().passes(&old, &new));
/// ```
#[must_use = "a change filter does nothing unless asked"]
pub fn finalizers<K: Resource>() -> impl ChangeFilter<K> + Copy + fmt::Debug + Send + Sync {
    FinalizersChanged::new()
}

/// Passes when the resourceVersion changed; a missing one reads as the
/// empty string (P6).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::ext::{ChangeFilter, changed};
///
/// let mut old = ConfigMap::default();
/// old.metadata.resource_version = Some("7".into());
/// let mut new = old.clone();
/// assert!(!changed::resource_version().passes(&old, &new));
/// new.metadata.resource_version = Some("8".into());
/// assert!(changed::resource_version().passes(&old, &new));
/// ```
#[must_use = "a change filter does nothing unless asked"]
pub fn resource_version<K: Resource>() -> impl ChangeFilter<K> + Copy + fmt::Debug + Send + Sync {
    ResourceVersionChanged::new()
}

/// Declares the filter type behind a constructor of this module: it names
/// the object type `K` it judges, so `changed::generation()` and its
/// combinations take their `K` from where they are used. Callers see only
/// `impl ChangeFilter<K>`.
macro_rules! object_predicate {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        struct $name<K> {
            object: PhantomData<fn(&K, &K) -> bool>,
        }

        impl<K> $name<K> {
            fn new() -> Self {
                Self { object: PhantomData }
            }
        }

        impl<K> Clone for $name<K> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<K> Copy for $name<K> {}

        impl<K> fmt::Debug for $name<K> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    };
}

object_predicate!(
    /// ChangeFilter made by [`generation`].
    GenerationChanged
);

impl<K: Resource> ChangeFilter<K> for GenerationChanged<K> {
    fn passes(&self, old: &K, new: &K) -> bool {
        match (old.meta().generation, new.meta().generation) {
            (Some(old), Some(new)) => old != new,
            _ => !same_resource_version(old, new),
        }
    }
}

object_predicate!(
    /// ChangeFilter made by [`labels`].
    LabelsChanged
);

impl<K: Resource> ChangeFilter<K> for LabelsChanged<K> {
    fn passes(&self, old: &K, new: &K) -> bool {
        !same_map(&old.meta().labels, &new.meta().labels)
    }
}

object_predicate!(
    /// ChangeFilter made by [`annotations`].
    AnnotationsChanged
);

impl<K: Resource> ChangeFilter<K> for AnnotationsChanged<K> {
    fn passes(&self, old: &K, new: &K) -> bool {
        !same_map(&old.meta().annotations, &new.meta().annotations)
    }
}

object_predicate!(
    /// ChangeFilter made by [`finalizers`].
    FinalizersChanged
);

impl<K: Resource> ChangeFilter<K> for FinalizersChanged<K> {
    fn passes(&self, old: &K, new: &K) -> bool {
        old.meta().finalizers.as_deref().unwrap_or_default()
            != new.meta().finalizers.as_deref().unwrap_or_default()
    }
}

object_predicate!(
    /// ChangeFilter made by [`resource_version`].
    ResourceVersionChanged
);

impl<K: Resource> ChangeFilter<K> for ResourceVersionChanged<K> {
    fn passes(&self, old: &K, new: &K) -> bool {
        !same_resource_version(old, new)
    }
}

/// Whether two optional maps hold the same entries, a missing map being
/// empty: the API server drops an empty map, so both mean "none".
fn same_map(
    old: &Option<BTreeMap<String, String>>,
    new: &Option<BTreeMap<String, String>>,
) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => old == new,
        (Some(only), None) | (None, Some(only)) => only.is_empty(),
        (None, None) => true,
    }
}
