package main

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// gatedListerWatcher serves the pre-built workload to a reflector: the list
// once the list gate opens, then one watch that sends the updates and the
// deletes once their gates open. The watch never ends by itself, so the
// reflector never relists during a run.
type gatedListerWatcher struct {
	work                               *phases
	listOpen, updatesOpen, deletesOpen chan struct{}
	lists                              atomic.Int32
	watchOnce                          sync.Once
}

func newGatedListerWatcher(work *phases) *gatedListerWatcher {
	return &gatedListerWatcher{
		work:        work,
		listOpen:    make(chan struct{}),
		updatesOpen: make(chan struct{}),
		deletesOpen: make(chan struct{}),
	}
}

func (lw *gatedListerWatcher) listerWatcher() cache.ListerWatcher {
	return &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			<-lw.listOpen
			lw.lists.Add(1)
			return lw.work.list, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			events := make(chan watch.Event)
			first := false
			lw.watchOnce.Do(func() { first = true })
			if first {
				go func() {
					<-lw.updatesOpen
					for _, event := range lw.work.updates {
						events <- event
					}
					<-lw.deletesOpen
					for _, event := range lw.work.deletes {
						events <- event
					}
				}()
			}
			return watch.NewProxyWatcher(events), nil
		},
	}
}
