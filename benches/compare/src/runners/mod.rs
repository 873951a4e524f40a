//! One module per runner; each implements [`crate::drive::Runner`].
//!
//! Runner (c), client-go's shared informer, is a Go program in `../go/`.

pub mod floor;
pub mod kube_runtime;
#[cfg(feature = "ours")]
pub mod ours;
