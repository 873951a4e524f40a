// Package workqueuebench measures client-go's work queue on the same three
// shapes as the crate's `benches/queue.rs` (batch, interleaved, dedup over
// 10,000 keys), so the two can be run side by side and compared by ratio:
// `benches/queue_vs_client_go.sh` runs both.
package workqueuebench
