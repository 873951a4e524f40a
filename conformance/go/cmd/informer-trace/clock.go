package main

import (
	"reflect"
	"time"
	"unsafe"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// timerMade reports a timer the informer created on the script clock.
type timerMade struct {
	d        time.Duration
	deadline time.Time
}

// scriptClock is a fake clock that tells the harness about every timer the
// informer creates: the reflector's resync timer (the check period) and its
// relist backoff timers. Knowing them, the harness advances time exactly to
// a resync round, or past a backoff, and knows when the informer got there.
type scriptClock struct {
	*testingclock.FakeClock
	timers chan timerMade
}

func newScriptClock() *scriptClock {
	return &scriptClock{
		FakeClock: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		timers:    make(chan timerMade, 4096),
	}
}

func (c *scriptClock) NewTimer(d time.Duration) clock.Timer {
	t := &reportingTimer{Timer: c.FakeClock.NewTimer(d), clock: c}
	c.report(d)
	return t
}

func (c *scriptClock) report(d time.Duration) {
	c.timers <- timerMade{d: d, deadline: c.Now().Add(d)}
}

// reportingTimer reports a Reset too: the reflector's backoff reuses one
// timer for every wait after the first.
type reportingTimer struct {
	clock.Timer
	clock *scriptClock
}

func (t *reportingTimer) Reset(d time.Duration) bool {
	active := t.Timer.Reset(d)
	t.clock.report(d)
	return active
}

// installClock puts the script clock into a not yet started informer.
// client-go keeps the informer's clock in unexported fields (its own tests
// set them directly); the informer hands it on to its controller, reflector,
// backoff and processor, so these two fields are all there is to set.
func installClock(informer cache.SharedIndexInformer, c clock.Clock) {
	v := reflect.ValueOf(informer).Elem()
	setUnexported(v.FieldByName("clock"), c)
	setUnexported(v.FieldByName("processor").Elem().FieldByName("clock"), c)
}

func setUnexported(field reflect.Value, value any) {
	if !field.IsValid() {
		fatalf("client-go changed: informer clock field not found")
	}
	reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Set(reflect.ValueOf(value))
}
