//! store (not built yet).
