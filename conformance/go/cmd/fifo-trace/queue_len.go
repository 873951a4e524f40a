package main

import (
	"reflect"

	"k8s.io/client-go/tools/cache"
)

// queueLen reads the length of the DeltaFIFO's private queue. client-go
// v0.34 dropped every public way to look into a DeltaFIFO without popping,
// and Pop on an empty queue waits forever; the harness is single-threaded,
// so reading the field without the lock is safe.
func queueLen(f *cache.DeltaFIFO) int {
	return reflect.ValueOf(f).Elem().FieldByName("queue").Len()
}
