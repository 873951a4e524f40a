//go:build clientgo_v032

package main

import "k8s.io/client-go/tools/cache"

// requeue puts popped deltas back unless the key is pending again
// (client-go's AddIfNotPresent, removed after v0.32).
func requeue(f *cache.DeltaFIFO, deltas cache.Deltas) error {
	return f.AddIfNotPresent(deltas)
}
