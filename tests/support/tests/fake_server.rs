//! The fake API server through a real `kube::Client`: apply, custom resources,
//! deletion and garbage collection, faults, JSON patches, links, `/status`,
//! and the answers of writes.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test -p kube-informer-testing --test fake_server -- <file>::`).

mod common;

mod apply;
mod crd;
mod deletion;
mod faults;
mod gc;
mod json_patch;
mod link;
mod status;
mod write_answers;
mod writes;
