//! A sharded replica's metrics: its members, owned keys, ownership changes
//! and work in flight.

/// What a sharded replica reports: see
/// [`KeyGate::metrics`](crate::shard::KeyGate::metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardMetrics {
    /// Members of the newest member set this replica acts under; 0 while it
    /// owns nothing (not a member yet, fenced, or not the leader).
    pub members: usize,
    /// Keys in the given store that this replica owns now.
    pub owned_keys: usize,
    /// How many times the ownership changed: joins, leaves, takeovers,
    /// fencing (`shard_ownership_changes_total`).
    pub ownership_changes: u64,
    /// Work guards out now, on owned or released keys
    /// (`shard_work_in_flight`).
    pub work_in_flight: usize,
}
