//! The guide: kube-informer from a first informer to a tested, sharded
//! operator, in chapters read in order.
//!
//! 1. [Informers and subscriptions](informers): a cache of one resource,
//!    its indexes, and a stream of changes per subscriber.
//! 2. [Writing a controller](controller): kube-runtime's
//!    `configmapgen_controller` with a finalizer, a status and an error
//!    type that says what to retry.
//! 3. [Testing your controller on the simulator](testing): that controller
//!    on the fake API server, through seeded faults, down to garbage
//!    collection.
//! 4. [Memory](memory): what a cached object costs in each mode, and how
//!    to cache less.
//! 5. [Sharding and leader election](sharding): replicas that share the
//!    keys of a resource over Leases.
//! 6. [Metrics and tracing](metrics): which figure answers which question.
//! 7. [Migrating from kube-runtime](migrating): its items and this crate's.
//!
//! The chapters are Markdown files under `docs/guide/` in the repository;
//! every code block in them is compiled and run as a doc test, against the
//! in-process fake API server of `kube-informer-testing` unless it needs a
//! cluster (then it is only compiled).

pub mod informers {
    #![doc = include_str!("../docs/guide/01-informers.md")]
}

// A chapter's examples run as doc tests only with the features they use;
// its page is there whatever the features.
#[cfg(any(not(doctest), feature = "controller"))]
pub mod controller {
    // The program of the chapter is a file of its own so that the test of
    // chapter 3 compiles the same code.
    #![doc = concat!(
        include_str!("../docs/guide/02-controller.md"),
        "\n```rust\n",
        include_str!("../docs/guide/configmapgen.rs"),
        "# fn main() {}\n```\n",
    )]
}

#[cfg(any(not(doctest), feature = "controller"))]
pub mod testing {
    // The test shown is the integration test itself, run here with one
    // seed (`cargo test --test controller_layer -- guide_controller::` runs twenty).
    #![doc = concat!(
        include_str!("../docs/guide/03-testing.md"),
        "\n```rust\n",
        include_str!("../tests/guide_controller.rs"),
        "# fn main() {\n",
        "#     Simulation::new(1).faults(faults()).run(create_edit_delete);\n",
        "# }\n```\n",
    )]
}

#[cfg(any(not(doctest), feature = "compact"))]
pub mod memory {
    #![doc = include_str!("../docs/guide/04-memory.md")]
}

#[cfg(any(not(doctest), feature = "shard"))]
pub mod sharding {
    #![doc = include_str!("../docs/guide/05-sharding.md")]
}

pub mod metrics {
    #![doc = include_str!("../docs/guide/06-metrics.md")]
}

pub mod migrating {
    #![doc = include_str!("../docs/guide/07-migrating.md")]
}

/// The repository's README, whose Rust code blocks run as doc tests with
/// the guide's.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
