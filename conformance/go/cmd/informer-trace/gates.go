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

func (g scriptGates) Enabled(key clientfeatures.Feature) bool {
	if key == clientfeatures.InOrderInformers {
		return inOrderInformers.Load()
	}
	return g.fallback.Enabled(key)
}

// installFeatureGates must run before client-go reads any gate.
func installFeatureGates() {
	clientfeatures.ReplaceFeatureGates(scriptGates{fallback: clientfeatures.FeatureGates()})
}
