package workqueuebench

import (
	"fmt"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

const (
	keyCount = 10000
	repeats  = 10
)

// keys are built once, outside the timed loops, as the Rust bench does.
var keys = func() []string {
	out := make([]string, keyCount)
	for i := range out {
		out[i] = fmt.Sprintf("default/cm-%d", i)
	}
	return out
}()

// queue is what a shape needs from a work queue; both client-go queues
// below provide it.
type queue interface {
	Add(string)
	Get() (string, bool)
	Done(string)
	Len() int
	ShutDown()
}

// newPlain is client-go's plain typed queue (dedup and one holder per key).
func newPlain() queue { return workqueue.NewTyped[string]() }

// newRateLimiting is the queue a controller builds: the plain queue behind
// the delaying and rate-limiting layers, with the default controller rate
// limiter. Add, Get and Done go straight to the plain queue underneath.
func newRateLimiting() queue {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
}

// batch adds every key `times` times, then takes and releases them all.
func batch(q queue, times int) int {
	for r := 0; r < times; r++ {
		for _, k := range keys {
			q.Add(k)
		}
	}
	taken := 0
	for q.Len() > 0 {
		k, _ := q.Get()
		q.Done(k)
		taken++
	}
	return taken
}

// interleaved adds one key, takes it and releases it, for every key.
func interleaved(q queue) int {
	for _, k := range keys {
		q.Add(k)
		got, _ := q.Get()
		q.Done(got)
	}
	return len(keys)
}

// channelBatch and channelInterleaved are Go's floor: a buffered channel
// with no dedup and no processing set, as the mpsc floor on the Rust side.
func channelBatch(times int) int {
	ch := make(chan string, keyCount*times)
	for r := 0; r < times; r++ {
		for _, k := range keys {
			ch <- k
		}
	}
	close(ch)
	taken := 0
	for range ch {
		taken++
	}
	return taken
}

func channelInterleaved() int {
	ch := make(chan string, 1)
	for _, k := range keys {
		ch <- k
		<-ch
	}
	return len(keys)
}

func run(b *testing.B, want int, shape func() int) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if got := shape(); got != want {
			b.Fatalf("handed out %d keys, want %d", got, want)
		}
	}
}

func withQueue(newQueue func() queue, shape func(queue) int) func() int {
	return func() int {
		q := newQueue()
		n := shape(q)
		q.ShutDown()
		return n
	}
}

func BenchmarkBatchPlain(b *testing.B) {
	run(b, keyCount, withQueue(newPlain, func(q queue) int { return batch(q, 1) }))
}

func BenchmarkBatchRateLimiting(b *testing.B) {
	run(b, keyCount, withQueue(newRateLimiting, func(q queue) int { return batch(q, 1) }))
}

func BenchmarkBatchChannel(b *testing.B) { run(b, keyCount, func() int { return channelBatch(1) }) }

func BenchmarkInterleavedPlain(b *testing.B) {
	run(b, keyCount, withQueue(newPlain, interleaved))
}

func BenchmarkInterleavedRateLimiting(b *testing.B) {
	run(b, keyCount, withQueue(newRateLimiting, interleaved))
}

func BenchmarkInterleavedChannel(b *testing.B) { run(b, keyCount, channelInterleaved) }

func BenchmarkDedupPlain(b *testing.B) {
	run(b, keyCount, withQueue(newPlain, func(q queue) int { return batch(q, repeats) }))
}

func BenchmarkDedupRateLimiting(b *testing.B) {
	run(b, keyCount, withQueue(newRateLimiting, func(q queue) int { return batch(q, repeats) }))
}

func BenchmarkDedupChannel(b *testing.B) {
	run(b, keyCount*repeats, func() int { return channelBatch(repeats) })
}
