package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// header is the first line of a script.
type header struct {
	Script           string    `json:"script"`
	ResyncCheck      string    `json:"resyncCheck"`
	Handlers         []handler `json:"handlers"`
	InOrderInformers bool      `json:"inOrderInformers"`
}

type handler struct {
	Name   string `json:"name"`
	Resync string `json:"resync"`
}

type object struct {
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name"`
	RV        string `json:"rv"`
}

type step struct {
	Step    string   `json:"step"`
	Event   string   `json:"event,omitempty"`
	Obj     *object  `json:"obj,omitempty"`
	Items   []object `json:"items,omitempty"`
	RV      string   `json:"rv,omitempty"`
	Handler *handler `json:"handler,omitempty"`
}

// Sentinels are objects the harness alone writes: after every step it adds a
// new sentinel (and deletes the previous one) and waits until every handler
// received it. A new key takes the last place in the queue, and handlers
// receive notifications in order, so by then each one has received
// everything the step caused. (Reusing one sentinel key would not do: a
// resync can queue it ahead of other keys.) Notifications about sentinels
// are dropped.
const sentinelNamespace = "conformance-sentinel"

// relistBackoffStep is how far the clock moves to get past the reflector's
// backoff before a relist: at least its longest backoff (30 s, jitter 1.0).
const relistBackoffStep = 60 * time.Second

const waitLimit = 20 * time.Second

// syncedLimit bounds settleSynced's wait for the synced flags to land.
const syncedLimit = 5 * time.Second

func (o object) configMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	cm.Namespace = o.Namespace
	cm.Name = o.Name
	cm.ResourceVersion = o.RV
	return cm
}

// scriptLW serves the scripted list and hands every watch to the harness.
type scriptLW struct {
	mu       sync.Mutex
	items    []object
	rv       string
	sentinel string
	watches  chan *watch.RaceFreeFakeWatcher
}

func (lw *scriptLW) list(context.Context, metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	list := &corev1.ConfigMapList{}
	list.ResourceVersion = lw.rv
	for _, it := range lw.items {
		list.Items = append(list.Items, *it.configMap())
	}
	list.Items = append(list.Items, *sentinelObject(lw.sentinel))
	return list, nil
}

func (lw *scriptLW) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	lw.watches <- w
	return w, nil
}

func sentinelObject(name string) *corev1.ConfigMap {
	return object{Namespace: sentinelNamespace, Name: name, RV: "1"}.configMap()
}

type scriptRun struct {
	out         *bytes.Buffer
	header      header
	clock       *scriptClock
	lw          *scriptLW
	informer    cache.SharedIndexInformer
	recorders   []*recorder
	watcher     *watch.RaceFreeFakeWatcher
	checkPeriod time.Duration
	resyncAt    time.Time
	sentinel    int
	index       int
	cancel      context.CancelFunc
	done        chan struct{}
	failed      string
}

func newScriptRun(h header, out *bytes.Buffer) *scriptRun {
	inOrderInformers.Store(h.InOrderInformers)
	r := &scriptRun{
		out:    out,
		header: h,
		clock:  newScriptClock(),
		lw:     &scriptLW{watches: make(chan *watch.RaceFreeFakeWatcher, 16), sentinel: "s0"},
	}
	writeJSON(out, map[string]any{"script": h.Script})
	var err error
	if r.checkPeriod, err = parseDuration(h.ResyncCheck); err != nil {
		r.fail("resyncCheck: %v", err)
		return r
	}
	if r.checkPeriod != 0 && r.checkPeriod <= relistBackoffStep {
		r.fail("resyncCheck must be 0 or above %v", relistBackoffStep)
		return r
	}
	lw := &cache.ListWatch{ListWithContextFunc: r.lw.list, WatchFuncWithContext: r.lw.watch}
	r.informer = cache.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{ResyncPeriod: r.checkPeriod})
	installClock(r.informer, r.clock)
	for _, h := range h.Handlers {
		r.subscribe(h)
	}
	return r
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

func (r *scriptRun) fail(format string, args ...any) {
	if r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

func (r *scriptRun) subscribe(h handler) {
	period, err := parseDuration(h.Resync)
	if err != nil {
		r.fail("handler %s: %v", h.Name, err)
		return
	}
	if period != 0 && period <= relistBackoffStep {
		r.fail("handler %s: resync must be 0 or above %v", h.Name, relistBackoffStep)
		return
	}
	rec := newRecorder(h.Name)
	reg, err := r.informer.AddEventHandlerWithResyncPeriod(rec.funcs(), period)
	if err != nil {
		r.fail("handler %s: %v", h.Name, err)
		return
	}
	rec.registration = reg
	r.recorders = append(r.recorders, rec)
}

// Apply runs one step line.
func (r *scriptRun) Apply(raw []byte) {
	var s step
	if err := json.Unmarshal(raw, &s); err != nil {
		fatalf("malformed step %q: %v", raw, err)
	}
	r.apply(s)
}

// Finish stops the informer.
func (r *scriptRun) Finish() { r.stop() }

func (r *scriptRun) apply(s step) {
	line := map[string]any{"step": r.index, "op": s.Step}
	r.index++
	if r.failed == "" {
		r.run(s)
	}
	if r.failed == "" {
		r.quiesce()
	}
	if r.failed != "" {
		line["harness_error"] = r.failed
		writeJSON(r.out, line)
		return
	}
	line["synced"] = r.informer.HasSynced()
	handlers := make([]map[string]any, 0, len(r.recorders))
	for _, rec := range r.recorders {
		handlers = append(handlers, map[string]any{
			"name":   rec.name,
			"synced": rec.registration.HasSynced(),
			"n":      canonical(s.Step, rec.take()),
		})
	}
	line["handlers"] = handlers
	writeJSON(r.out, line)
}

func (r *scriptRun) run(s step) {
	if r.done == nil && s.Step != "list" {
		r.fail("the first step must be list")
		return
	}
	switch s.Step {
	case "list":
		if r.done != nil {
			r.fail("list is only the first step; use relist")
			return
		}
		r.setList(s.Items, s.RV)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel, r.done = cancel, make(chan struct{})
		go func() {
			defer close(r.done)
			r.informer.RunWithContext(ctx)
		}()
		r.awaitListAndWatch()
	case "watch":
		if s.Obj == nil {
			r.fail("watch step without obj")
			return
		}
		cm := s.Obj.configMap()
		switch s.Event {
		case "ADDED":
			r.watcher.Add(cm)
		case "MODIFIED":
			r.watcher.Modify(cm)
		case "DELETED":
			r.watcher.Delete(cm)
		case "BOOKMARK":
			r.watcher.Action(watch.Bookmark, cm)
		default:
			r.fail("unknown watch event %q", s.Event)
		}
	case "relist":
		// The watch ends with 410 Gone; after its backoff the reflector
		// lists again and gets the new list.
		r.setList(s.Items, s.RV)
		r.watcher.Error(&apierrors.NewResourceExpired("conformance relist").ErrStatus)
		r.awaitListAndWatch()
	case "resync":
		if r.resyncAt.IsZero() {
			r.fail("resync step, but the informer has no resync timer")
			return
		}
		r.clock.SetTime(r.resyncAt)
		// The reflector makes its next resync timer once the round's
		// Resync returned.
		if !r.awaitTimer(r.isResyncTimer) {
			r.fail("resync round did not finish")
		}
	case "subscribe":
		if s.Handler == nil {
			r.fail("subscribe step without handler")
			return
		}
		r.subscribe(*s.Handler)
	default:
		r.fail("unknown step %q", s.Step)
	}
}

// isResyncTimer tells the reflector's resync timer from its backoff timers
// by length: backoffs never exceed relistBackoffStep, and scripts keep every
// resync period above it. (The resync timer's length is the check period,
// which a handler registered before start may have lowered, L3.)
func (r *scriptRun) isResyncTimer(t timerMade) bool {
	return t.d > relistBackoffStep
}

func (r *scriptRun) setList(items []object, rv string) {
	r.lw.mu.Lock()
	defer r.lw.mu.Unlock()
	r.lw.items, r.lw.rv = items, rv
}

// awaitListAndWatch waits for the watch that follows a list and, when resync
// is on, for the resync timer that list started. A backoff before the list
// on the script clock (client-go v0.34) is passed by moving the clock
// relistBackoffStep; later releases back off on the real clock, and then
// the list simply arrives after that short real wait.
func (r *scriptRun) awaitListAndWatch() {
	limit := time.After(waitLimit)
	watching, resyncing := false, r.checkPeriod == 0
	for !watching || !resyncing {
		select {
		case r.watcher = <-r.lw.watches:
			watching = true
		case t := <-r.clock.timers:
			if r.isResyncTimer(t) {
				r.resyncAt = t.deadline
				resyncing = true
			} else if !watching {
				r.clock.Step(relistBackoffStep)
			}
		case <-limit:
			r.fail("no list and watch (watching %v, resync timer %v)", watching, resyncing)
			return
		}
	}
}

// awaitTimer waits for a timer matching want; every resync timer seen on the
// way moves the next resync deadline.
func (r *scriptRun) awaitTimer(want func(timerMade) bool) bool {
	limit := time.After(waitLimit)
	for {
		select {
		case t := <-r.clock.timers:
			if r.isResyncTimer(t) {
				r.resyncAt = t.deadline
			}
			if want(t) {
				return true
			}
		case <-limit:
			return false
		}
	}
}

// quiesce replaces the sentinel with a new one and waits until every
// handler received it, then until the synced flags have landed.
func (r *scriptRun) quiesce() {
	r.lw.mu.Lock()
	previous := r.lw.sentinel
	r.sentinel++
	next := fmt.Sprintf("s%d", r.sentinel)
	r.lw.sentinel = next
	r.lw.mu.Unlock()
	r.watcher.Delete(sentinelObject(previous))
	r.watcher.Add(sentinelObject(next))
	for _, rec := range r.recorders {
		if !rec.awaitSentinel(next, waitLimit) {
			r.fail("handler %s never received sentinel %s", rec.name, next)
			return
		}
	}
	r.settleSynced(syncedLimit)
}

// settleSynced waits (real time, bounded) until the informer and every
// handler report synced, so that a step's line records them settled.
// From v0.36 client-go sets both from goroutines of their own: the
// informer's once its queue has handed out the initial list, a handler's
// once the informer's is set and the handler has taken every item of the
// initial list (or of its replay). So a handler that has received the
// step's sentinel can still read false for a moment, on a busy machine
// long enough to be sampled. Earlier releases set them in line, and this
// returns at once. Every script starts with a list, after which both flags
// only become true; one that stays false past the limit is recorded as it
// is.
func (r *scriptRun) settleSynced(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		settled := r.informer.HasSynced()
		for _, rec := range r.recorders {
			settled = settled && rec.registration.HasSynced()
		}
		if settled {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *scriptRun) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
}

// canonical orders what client-go leaves to Go's map order: a late
// handler's replay of the cache and a resync round visit the store's keys
// in map order, and a relist queues the tombstones of vanished keys in that
// order too. Those runs are sorted by key; everything else keeps its order.
func canonical(op string, notes []map[string]any) []map[string]any {
	byKey := func(s []map[string]any) {
		sort.SliceStable(s, func(i, j int) bool { return s[i]["key"].(string) < s[j]["key"].(string) })
	}
	switch op {
	case "subscribe", "resync":
		byKey(notes)
	default:
		for i := 0; i < len(notes); {
			j := i
			for j < len(notes) && notes[j]["tombstone"] == true {
				j++
			}
			if j > i {
				byKey(notes[i:j])
				i = j
			} else {
				i++
			}
		}
	}
	return notes
}
