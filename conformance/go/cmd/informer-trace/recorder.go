package main

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// recorder is one event handler: it records notifications in arrival order.
type recorder struct {
	name         string
	registration cache.ResourceEventHandlerRegistration

	mu       sync.Mutex
	notes    []map[string]any
	sentinel string
}

func newRecorder(name string) *recorder { return &recorder{name: name} }

func (rec *recorder) funcs() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			cm := obj.(*corev1.ConfigMap)
			if rec.sawSentinel(cm) {
				return
			}
			rec.record(map[string]any{"type": "Added", "key": key(cm), "rv": cm.ResourceVersion, "initial": isInInitialList})
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, cm := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
			if rec.sawSentinel(cm) {
				return
			}
			rec.record(map[string]any{
				"type": "Updated", "key": key(cm), "oldRv": old.ResourceVersion, "rv": cm.ResourceVersion,
				"resync": old.ResourceVersion == cm.ResourceVersion,
			})
		},
		DeleteFunc: func(obj interface{}) {
			note := map[string]any{"type": "Deleted", "tombstone": false}
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				note["tombstone"] = true
				note["key"] = t.Key
				obj = t.Obj
			}
			cm, _ := obj.(*corev1.ConfigMap)
			if cm != nil {
				if _, set := note["key"]; !set {
					note["key"] = key(cm)
				}
				note["rv"] = cm.ResourceVersion
			}
			if cm != nil && cm.Namespace == sentinelNamespace {
				return
			}
			rec.record(note)
		},
	}
}

func key(cm *corev1.ConfigMap) string {
	if cm.Namespace == "" {
		return cm.Name
	}
	return cm.Namespace + "/" + cm.Name
}

func (rec *recorder) sawSentinel(cm *corev1.ConfigMap) bool {
	if cm.Namespace != sentinelNamespace {
		return false
	}
	rec.mu.Lock()
	rec.sentinel = cm.Name
	rec.mu.Unlock()
	return true
}

func (rec *recorder) record(note map[string]any) {
	rec.mu.Lock()
	rec.notes = append(rec.notes, note)
	rec.mu.Unlock()
}

// take returns and clears what arrived since the last take.
func (rec *recorder) take() []map[string]any {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	notes := rec.notes
	rec.notes = nil
	if notes == nil {
		notes = []map[string]any{}
	}
	return notes
}

// awaitSentinel waits (real time, bounded) until the handler has received
// the sentinel named name.
func (rec *recorder) awaitSentinel(name string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rec.mu.Lock()
		seen := rec.sentinel
		rec.mu.Unlock()
		if seen == name {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}
