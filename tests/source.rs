//! The list/watch source and the decoders it reads with (JSON and protobuf).
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test source -- <file>::`).

mod source_helpers;

mod protobuf_decode;
#[cfg(feature = "protobuf-generated")]
mod protobuf_generated;
mod protobuf_wire;
mod source_config;
mod source_faults;
mod source_kinds;
mod source_list;
mod source_model;
mod source_protobuf;
mod source_streaming;
mod source_watch;
