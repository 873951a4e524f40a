//! Shared informers per resource (not built yet).
