package main

import (
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// settleClock is the fake clock the queue runs on, instrumented so the
// harness knows when the queue's waiting goroutine has caught up: every
// timer it creates is counted (the goroutine makes one after each change of
// its waiting set while that set is not empty).
//
// Tickers never fire. The only ticker of an unnamed queue is the delaying
// queue's 10 s heartbeat, an insurance against lost timers that changes no
// outcome but would wake the goroutine at times the harness cannot see.
type settleClock struct {
	*testingclock.FakeClock
	timers atomic.Int64
}

func (c *settleClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.timers.Add(1)
	return t
}

func (c *settleClock) NewTicker(time.Duration) clock.Ticker { return inertTicker{} }

type inertTicker struct{}

func (inertTicker) C() <-chan time.Time { return nil }
func (inertTicker) Stop()               {}
