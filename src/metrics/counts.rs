//! [`Counts`]: a counter per variant of a label enum, read by indexing.

use std::marker::PhantomData;

/// The most variants a label has ([`ErrorClass`](super::ErrorClass)).
pub(super) const MOST: usize = 9;

/// One count per variant of a label: [`WatchEventType`](super::WatchEventType),
/// [`RelistCause`](super::RelistCause) or [`ErrorClass`](super::ErrorClass) (the fields of
/// [`SourceMetrics`](super::SourceMetrics)). Index it with a variant, or
/// iterate over `(variant, count)` pairs.
///
/// # Examples
///
/// ```
/// use kube_informer::metrics::{RelistCause, SourceMetrics};
///
/// let source = SourceMetrics::default();
/// assert_eq!(source.relists[RelistCause::Expired], 0);
/// let total: u64 = source.relists.into_iter().map(|(_cause, n)| n).sum();
/// assert_eq!(total, 0);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counts<L> {
    // Read by the impls `label!` writes for each label type.
    pub(super) counts: [u64; MOST],
    pub(super) label: PhantomData<L>,
}

impl<L> Default for Counts<L> {
    fn default() -> Self {
        Self {
            counts: [0; MOST],
            label: PhantomData,
        }
    }
}

/// Implements indexing, iteration, `Debug` and a constructor of
/// `Counts<$label>` for a label type with `$n` variants and an `ALL` array.
macro_rules! label {
    ($label:ty, $n:literal) => {
        impl Counts<$label> {
            /// The counts in the order of the label's `ALL`.
            pub(crate) fn new(counts: [u64; $n]) -> Self {
                let mut all = [0; $crate::metrics::counts::MOST];
                all[..$n].copy_from_slice(&counts);
                Self {
                    counts: all,
                    label: std::marker::PhantomData,
                }
            }
        }

        impl std::ops::Index<$label> for Counts<$label> {
            type Output = u64;

            fn index(&self, label: $label) -> &u64 {
                &self.counts[label as usize]
            }
        }

        /// `(variant, count)` for every variant, in the label's `ALL` order.
        impl IntoIterator for Counts<$label> {
            type Item = ($label, u64);
            type IntoIter =
                std::iter::Zip<std::array::IntoIter<$label, $n>, std::array::IntoIter<u64, $n>>;

            fn into_iter(self) -> Self::IntoIter {
                let mut counts = [0; $n];
                counts.copy_from_slice(&self.counts[..$n]);
                <$label>::ALL.into_iter().zip(counts)
            }
        }

        impl std::fmt::Debug for Counts<$label> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(*self).finish()
            }
        }
    };
}

pub(super) use label;
