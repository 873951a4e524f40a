//go:build !clientgo_v032

package main

import (
	"errors"

	"k8s.io/client-go/tools/cache"
)

// requeue is unavailable: this client-go has no AddIfNotPresent. Traces with
// requeue operations run against the v0.32 build (go.v032.mod).
func requeue(*cache.DeltaFIFO, cache.Deltas) error {
	return errors.New("requeue needs the clientgo_v032 build")
}
