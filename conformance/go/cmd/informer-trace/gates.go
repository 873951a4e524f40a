package main

import (
	"sync/atomic"

	clientfeatures "k8s.io/client-go/features"
)

// inOrderInformers is the InOrderInformers feature gate as the current
// script sets it. client-go v0.34 turns it on by default, which makes
// informers queue through RealFIFO instead of DeltaFIFO; kube-informer
// follows DeltaFIFO, so scripts default to off.
var inOrderInformers atomic.Bool

type scriptGates struct{ fallback clientfeatures.Gates }

// Enabled also keeps WatchListClient off (the default up to v0.34, on in
// later releases): scripts describe paginated lists, not streaming lists.
func (g scriptGates) Enabled(key clientfeatures.Feature) bool {
	switch key {
	case clientfeatures.InOrderInformers:
		return inOrderInformers.Load()
	case clientfeatures.WatchListClient:
		return false
	}
	return g.fallback.Enabled(key)
}

// installFeatureGates must run before client-go reads any gate.
func installFeatureGates() {
	clientfeatures.ReplaceFeatureGates(scriptGates{fallback: clientfeatures.FeatureGates()})
}
