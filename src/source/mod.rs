//! source (not built yet).
