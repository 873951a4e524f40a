//! Combinators on notification streams (not built yet).
