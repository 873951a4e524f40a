//! Wire mode: each informer in its own process with its real HTTP client,
//! against a loopback server that answers like a kube-apiserver from Pods
//! serialized beforehand (see [`server`]). `run.sh --wire` starts the server
//! (`kube-informer-compare serve`) and runs each runner against it
//! (`kube-informer-compare wire RUNNER …`, or the Go program with `-wire`).

pub mod count;
pub mod drive;
pub mod floor;
pub mod kube_runtime;
#[cfg(feature = "ours")]
pub mod ours;
#[cfg(feature = "ours")]
pub mod ours_compact;
#[cfg(feature = "ours")]
pub mod ours_projection;
pub mod pods;
pub mod server;
