//! informer (not built yet).
