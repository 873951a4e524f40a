package main

import (
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// slowPause is how long the slow subscriber of the slow variant sleeps per notification.
const slowPause = time.Millisecond

// targets are the notifications one subscriber has seen at the end of each phase.
type targets struct {
	list, updates, last uint64
}

// subscriber counts notifications and touches each object: the trivial work
// every runner's subscribers do. client-go calls one handler from one
// goroutine at a time, so only the count the driver reads is atomic.
type subscriber struct {
	slow       bool
	seen       atomic.Uint64
	touched    uint64
	milestones [3]uint64
	next       int
	reached    [3]chan struct{}
}

func newSubscriber(t targets, slow bool) *subscriber {
	s := &subscriber{slow: slow, milestones: [3]uint64{t.list, t.updates, t.last}}
	for i := range s.reached {
		s.reached[i] = make(chan struct{})
	}
	return s
}

func (s *subscriber) observe(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if object, ok := obj.(*corev1.ConfigMap); ok {
		s.touched += uint64(len(object.ResourceVersion) + len(object.Data))
	}
	seen := s.seen.Add(1)
	for s.next < len(s.milestones) && seen >= s.milestones[s.next] {
		close(s.reached[s.next])
		s.next++
	}
	if s.slow {
		time.Sleep(slowPause)
	}
}

func (s *subscriber) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, newObj interface{}) { s.observe(newObj) },
		DeleteFunc: s.observe,
	}
}
