package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"kube-informer/conformance/go/internal/blocks"
)

// header is the first line of a work queue trace.
type header struct {
	Workqueue string `json:"workqueue"`
}

type op struct {
	Op   string `json:"op"`
	Item string `json:"item,omitempty"`
	Ms   int64  `json:"ms,omitempty"`
	Nth  int    `json:"nth,omitempty"`
}

// settleTimeout bounds the wait for the queue's goroutine; reaching it means
// the harness's idea of the waiting set is wrong, which is a harness bug.
const settleTimeout = 10 * time.Second

// countingQueue is the plain queue under the delaying queue; it counts Add
// calls so the harness can wait for the waiting goroutine's adds.
type countingQueue struct {
	workqueue.TypedInterface[string]
	adds atomic.Int64
}

func (q *countingQueue) Add(item string) {
	q.TypedInterface.Add(item)
	q.adds.Add(1)
}

// recordingLimiter is client-go's default controller rate limiter, recording
// the delay of each When so the trace output shows it.
type recordingLimiter struct {
	workqueue.TypedRateLimiter[string]
	last time.Duration
}

func (l *recordingLimiter) When(item string) time.Duration {
	l.last = l.TypedRateLimiter.When(item)
	return l.last
}

type queueRun struct {
	out     *bytes.Buffer
	clock   *settleClock
	base    *countingQueue
	limiter *recordingLimiter
	queue   workqueue.TypedRateLimitingInterface[string]
	index   int
	// The harness's own copy of the waiting set (item -> earliest deadline),
	// only to know how many adds an advance of the clock must cause.
	waiting map[string]time.Time
	// Items handed out and not yet done, oldest first.
	held []string
}

func newQueueRun(h header, out *bytes.Buffer) *queueRun {
	clk := &settleClock{FakeClock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	base := &countingQueue{TypedInterface: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Clock: clk})}
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Clock: clk, Queue: base})
	limiter := &recordingLimiter{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[string]()}
	q := workqueue.NewTypedRateLimitingQueueWithConfig[string](limiter, workqueue.TypedRateLimitingQueueConfig[string]{
		Clock:         clk,
		DelayingQueue: delaying,
	})
	blocks.WriteJSON(out, map[string]any{"trace": h.Workqueue})
	return &queueRun{out: out, clock: clk, base: base, limiter: limiter, queue: q, waiting: map[string]time.Time{}}
}

// Apply runs one operation line.
func (r *queueRun) Apply(raw []byte) {
	var o op
	if err := json.Unmarshal(raw, &o); err != nil {
		blocks.Fatalf("malformed operation %q: %v", raw, err)
	}
	line := map[string]any{"i": r.index, "op": o.Op}
	r.index++
	switch o.Op {
	case "add":
		line["item"] = o.Item
		r.queue.Add(o.Item)
	case "add_after":
		line["item"] = o.Item
		r.addAfter(o.Item, func() time.Duration {
			delay := time.Duration(o.Ms) * time.Millisecond
			r.queue.AddAfter(o.Item, delay)
			return delay
		})
	case "add_rate_limited":
		line["item"] = o.Item
		r.addAfter(o.Item, func() time.Duration {
			r.queue.AddRateLimited(o.Item)
			return r.limiter.last
		})
		line["delayMs"] = r.limiter.last.Milliseconds()
	case "forget":
		line["item"] = o.Item
		r.queue.Forget(o.Item)
	case "requeues":
		line["item"] = o.Item
		line["requeues"] = r.queue.NumRequeues(o.Item)
	case "get":
		// Get never blocks here: with nothing queued on an open queue the
		// harness records "empty" without calling it.
		if r.queue.Len() == 0 && !r.queue.ShuttingDown() {
			line["result"] = "empty"
		} else if item, shutdown := r.queue.Get(); shutdown {
			line["result"] = "shutdown"
		} else {
			line["result"] = "item"
			line["item"] = item
			r.held = append(r.held, item)
		}
	case "done":
		// Done only for an item this harness holds: by name, or the nth held
		// (modulo how many are held).
		at := -1
		for i, h := range r.held {
			if (o.Item != "" && h == o.Item) || (o.Item == "" && i == o.Nth%len(r.held)) {
				at = i
				break
			}
		}
		if at < 0 {
			line["result"] = "not held"
			if o.Item != "" {
				line["item"] = o.Item
			}
			break
		}
		item := r.held[at]
		r.held = append(r.held[:at], r.held[at+1:]...)
		line["item"] = item
		r.queue.Done(item)
	case "shutdown":
		r.queue.ShutDown()
		r.waiting = map[string]time.Time{}
	case "advance":
		line["ms"] = o.Ms
		r.advance(time.Duration(o.Ms) * time.Millisecond)
	default:
		blocks.Fatalf("unknown operation %q", o.Op)
	}
	line["len"] = r.queue.Len()
	line["shuttingDown"] = r.queue.ShuttingDown()
	blocks.WriteJSON(r.out, line)
}

// addAfter runs add (an AddAfter, returning its delay) and, when that put
// the item in the waiting set, waits until the waiting goroutine has taken
// the entry in and armed its timer.
func (r *queueRun) addAfter(item string, add func() time.Duration) {
	down := r.queue.ShuttingDown()
	before := r.clock.timers.Load()
	delay := add()
	if down || delay <= 0 {
		return
	}
	r.waitFor(func() bool { return r.clock.timers.Load() > before })
	at := r.clock.Now().Add(delay)
	if cur, ok := r.waiting[item]; !ok || at.Before(cur) {
		r.waiting[item] = at
	}
}

// advance steps the fake clock and waits for the goroutine to add every item
// that came due and to arm its timer for the next deadline.
func (r *queueRun) advance(d time.Duration) {
	now := r.clock.Now().Add(d)
	due := 0
	for item, at := range r.waiting {
		if !at.After(now) {
			due++
			delete(r.waiting, item)
		}
	}
	adds, timers := r.base.adds.Load(), r.clock.timers.Load()
	r.clock.Step(d)
	if due == 0 {
		return
	}
	r.waitFor(func() bool { return r.base.adds.Load() >= adds+int64(due) })
	if len(r.waiting) > 0 {
		r.waitFor(func() bool { return r.clock.timers.Load() > timers })
	}
}

func (r *queueRun) waitFor(cond func() bool) {
	deadline := time.Now().Add(settleTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			blocks.Fatalf("the queue's waiting goroutine did not settle (operation %d)", r.index-1)
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

// Finish stops the queue's goroutine.
func (r *queueRun) Finish() {
	r.queue.ShutDown()
}
