//! [`Error`]: why the factory refused a request.

/// Errors of the [`InformerFactory`](super::InformerFactory).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An informer with this sharing key exists and was built with other
    /// options; the request was refused rather than ignored.
    #[error(
        "an informer for {resource} exists with other options (existing: {existing}; requested: {requested})"
    )]
    OptionsDiffer {
        /// The list/watch URL of the resource, with its selectors.
        resource: String,
        /// The options the existing informer was built with.
        existing: String,
        /// The options this request asked for.
        requested: String,
    },
}
