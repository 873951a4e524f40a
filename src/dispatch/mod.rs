//! dispatch (not built yet).
