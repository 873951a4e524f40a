// Wire mode, client-go's side: a SharedIndexInformer on Pods from the
// clientset's real REST client, pointed at the loopback server that
// `kube-informer-compare serve` runs. It measures what the Rust wire runners
// measure (benches/compare/src/wire/drive.rs) and prints the same JSON line.
//
// Three flavours (runner names): client-go (the clientset speaking JSON,
// as the Rust clients do), client-go-protobuf (the clientset asking for
// protobuf, as kube-controller-manager configures its own) and
// client-go-metadata (the metadata informer, which caches
// PartialObjectMetadata and asks for it in protobuf first). The last two
// need a server started with --protobuf-encoder.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// wireFlavour is what the Go runner lists and watches with.
type wireFlavour string

const (
	wireJSON     wireFlavour = "client-go"
	wireProtobuf wireFlavour = "client-go-protobuf"
	wireMetadata wireFlavour = "client-go-metadata"
)

// stripManagedFields is the transform every runner applies with -strip (what
// controller-runtime ships as TransformStripManagedFields).
func stripManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// wireSubscriber counts notifications and touches each Pod. client-go calls
// one handler from one goroutine at a time; only the count is shared.
type wireSubscriber struct {
	seen       atomic.Uint64
	touched    uint64
	milestones []uint64
	next       int
	reached    []chan struct{}
}

func newWireSubscriber(milestones ...uint64) *wireSubscriber {
	s := &wireSubscriber{milestones: milestones, reached: make([]chan struct{}, len(milestones))}
	for i := range s.reached {
		s.reached[i] = make(chan struct{})
	}
	return s
}

func (s *wireSubscriber) observe(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	switch object := obj.(type) {
	case *corev1.Pod:
		s.touched += uint64(len(object.ResourceVersion) + len(object.Spec.Containers))
	case *metav1.PartialObjectMetadata:
		s.touched += uint64(len(object.ResourceVersion) + len(object.Labels))
	}
	seen := s.seen.Add(1)
	for s.next < len(s.milestones) && seen >= s.milestones[s.next] {
		close(s.reached[s.next])
		s.next++
	}
}

func (s *wireSubscriber) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, newObj any) { s.observe(newObj) },
		DeleteFunc: s.observe,
	}
}

// waitMilestone waits until every subscriber passed milestone i.
func waitMilestone(subscribers []*wireSubscriber, i int, timeout time.Duration) error {
	deadline := time.After(timeout)
	for n, s := range subscribers {
		select {
		case <-s.reached[i]:
		case <-deadline:
			return fmt.Errorf("subscriber %d saw %d of %d notifications within %v", n, s.seen.Load(), s.milestones[i], timeout)
		}
	}
	return nil
}

func cpuSeconds() float64 {
	user, system := cpuTimes()
	return user + system
}

// cpuTimes returns the user and system CPU seconds this process has used.
func cpuTimes() (user, system float64) {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0, 0
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime), seconds(usage.Stime)
}

// peakSample is the memory sample with the largest resident size.
type peakSample struct {
	AtSeconds    float64 `json:"at_seconds"`
	RSS          uint64  `json:"rss"`
	HeapInUse    uint64  `json:"heap_in_use"`
	HeapFreeKept uint64  `json:"heap_free_kept"`
}

// sampleMemory reads RSS and the Go heap every 20 ms until stop closes and
// returns the sample with the largest RSS.
func sampleMemory(clock time.Time, stop <-chan struct{}) <-chan peakSample {
	out := make(chan peakSample, 1)
	go func() {
		samples := []metrics.Sample{
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/free:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"},
		}
		var best peakSample
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				out <- best
				return
			case <-ticker.C:
			}
			rss, _ := resident()
			if rss > best.RSS {
				metrics.Read(samples)
				best = peakSample{
					AtSeconds:    time.Since(clock).Seconds(),
					RSS:          rss,
					HeapInUse:    samples[0].Value.Uint64(),
					HeapFreeKept: samples[1].Value.Uint64() + samples[2].Value.Uint64(),
				}
			}
		}
	}()
	return out
}

// control talks to the loopback server's /bench endpoints.
type control struct{ base string }

func (c control) call(method, path string, into any) error {
	request, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return fmt.Errorf("control %s: %w", path, err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return fmt.Errorf("control %s: %w", path, err)
	}
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("control %s: %s: %s", path, response.Status, body)
	}
	if into != nil {
		return json.Unmarshal(body, into)
	}
	return nil
}

// wireClient is the clientset every Go runner measures with: JSON both
// ways, as the Rust clients speak; no client-side rate limit, as the Rust
// clients have none.
func wireClient(config *rest.Config) (*kubernetes.Clientset, error) {
	config.QPS = -1
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	return kubernetes.NewForConfig(config)
}

// podInformer is the shared informer on Pods in all namespaces (no resync),
// one event handler per subscriber; with strip, managedFields are dropped
// by a transform.
func podInformer(client kubernetes.Interface, strip bool, subscribers []*wireSubscriber) (cache.SharedIndexInformer, error) {
	var options []informers.SharedInformerOption
	if strip {
		options = append(options, informers.WithTransform(stripManagedFields))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, options...)
	informer := factory.Core().V1().Pods().Informer()
	for _, s := range subscribers {
		if _, err := informer.AddEventHandler(s.handlers()); err != nil {
			return nil, fmt.Errorf("cannot add handler: %w", err)
		}
	}
	return informer, nil
}

// metadataInformer is client-go's metadata informer on Pods in all
// namespaces (no resync, no client-side rate limit), one event handler per
// subscriber; with strip, managedFields are dropped by a transform.
func metadataInformer(config *rest.Config, strip bool, subscribers []*wireSubscriber) (cache.SharedIndexInformer, error) {
	config.QPS = -1
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	var options []metadatainformer.SharedInformerOption
	if strip {
		options = append(options, metadatainformer.WithTransform(stripManagedFields))
	}
	factory := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, options...)
	informer := factory.ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
	for _, s := range subscribers {
		if _, err := informer.AddEventHandler(s.handlers()); err != nil {
			return nil, fmt.Errorf("cannot add handler: %w", err)
		}
	}
	return informer, nil
}

// flavourInformer is the informer flavour measures with.
func flavourInformer(config *rest.Config, flavour wireFlavour, strip bool, subscribers []*wireSubscriber) (cache.SharedIndexInformer, error) {
	if flavour == wireMetadata {
		return metadataInformer(config, strip, subscribers)
	}
	client, err := liveClient(config, flavour == wireProtobuf)
	if err != nil {
		return nil, err
	}
	return podInformer(client, strip, subscribers)
}

type serverInfo struct {
	Objects       uint64  `json:"objects"`
	Updates       uint64  `json:"updates"`
	Deletes       uint64  `json:"deletes"`
	MeanItemBytes float64 `json:"mean_item_bytes"`
	// Null unless the server was given the protobuf encoder.
	MeanItemProtobufBytes *float64 `json:"mean_item_protobuf_bytes"`
}

type serverStats struct {
	Lists          uint64 `json:"lists"`
	Pages          uint64 `json:"pages"`
	Watches        uint64 `json:"watches"`
	EventsSent     uint64 `json:"events_sent"`
	ExpiredWatches uint64 `json:"expired_watches"`
}

func runWire(server string, flavour wireFlavour, subscriberCount int, strip, relist bool, timeout time.Duration) (map[string]any, error) {
	ctl := control{base: strings.TrimSuffix(server, "/")}
	if err := ctl.call(http.MethodPost, "/bench/reset", nil); err != nil {
		return nil, err
	}
	var info serverInfo
	if err := ctl.call(http.MethodGet, "/bench/info", &info); err != nil {
		return nil, err
	}
	// Without protobuf the server would answer these flavours in JSON (their
	// Accept headers allow it): a different measurement under their name.
	if flavour != wireJSON && info.MeanItemProtobufBytes == nil {
		return nil, fmt.Errorf("%s needs a server that speaks protobuf (serve --protobuf-encoder)", flavour)
	}
	n, u, d := info.Objects, info.Updates, info.Deletes
	last := n + u + d
	if relist {
		last = 2 * n
	}

	subscribers := make([]*wireSubscriber, subscriberCount)
	for i := range subscribers {
		subscribers[i] = newWireSubscriber(n, last)
	}
	informer, err := flavourInformer(&rest.Config{Host: ctl.base}, flavour, strip, subscribers)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	defer close(stop)

	releaseFreeMemory()
	before, _ := resident()
	resetPeak()
	cpuStart := cpuSeconds()
	clock := time.Now()
	stopSampling := make(chan struct{})
	var stopSamplingOnce sync.Once
	defer stopSamplingOnce.Do(func() { close(stopSampling) })
	sampled := sampleMemory(clock, stopSampling)

	go informer.Run(stop)
	if err := waitMilestone(subscribers, 0, timeout); err != nil {
		return nil, err
	}
	syncTime := time.Since(clock)
	syncCPU := cpuSeconds() - cpuStart
	untrimmed, syncPeak := resident()
	releaseFreeMemory()
	afterSync, _ := resident()

	var seconds, cpu float64
	var events uint64
	if relist {
		resetPeak()
		cpuRelist := cpuSeconds()
		restarted := time.Now()
		if err := ctl.call(http.MethodPost, "/bench/expire", nil); err != nil {
			return nil, err
		}
		if err := waitMilestone(subscribers, 1, timeout); err != nil {
			return nil, err
		}
		seconds = time.Since(restarted).Seconds()
		cpu = cpuSeconds() - cpuRelist
		events = n
	} else {
		cpuBurst := cpuSeconds()
		restarted := time.Now()
		if err := ctl.call(http.MethodPost, "/bench/release?phase=all", nil); err != nil {
			return nil, err
		}
		if err := waitMilestone(subscribers, 1, timeout); err != nil {
			return nil, err
		}
		seconds = (syncTime + time.Since(restarted)).Seconds()
		cpu = syncCPU + cpuSeconds() - cpuBurst
		events = n + u + d
	}
	_, peak := resident()
	stopSamplingOnce.Do(func() { close(stopSampling) })
	sample := <-sampled
	var stats serverStats
	if err := ctl.call(http.MethodGet, "/bench/stats", &stats); err != nil {
		return nil, err
	}
	expectedLists := uint64(1)
	if relist {
		expectedLists = 2
	}
	if stats.Lists != expectedLists {
		return nil, fmt.Errorf("the informer made %d lists; expected %d", stats.Lists, expectedLists)
	}
	variant := "burst"
	if relist {
		variant = "relist"
	}
	perObject := 0.0
	if n > 0 {
		perObject = (float64(afterSync) - float64(before)) / float64(n)
	}
	return map[string]any{
		"mode":                      "wire",
		"runner":                    string(flavour),
		"variant":                   variant,
		"strip":                     strip,
		"objects":                   n,
		"updates":                   u,
		"deletes":                   d,
		"subscribers":               subscriberCount,
		"events":                    events,
		"deliveries_per_subscriber": last,
		"mean_pod_bytes":            info.MeanItemBytes,
		"mean_pod_protobuf_bytes":   info.MeanItemProtobufBytes,
		"sync_seconds":              syncTime.Seconds(),
		"seconds":                   seconds,
		"events_per_second":         float64(events) / seconds,
		"cpu_seconds":               cpu,
		"cpu_us_per_event":          cpu / float64(events) * 1e6,
		"sync_cpu_seconds":          syncCPU,
		"rss_before":                before,
		"rss_after_sync_untrimmed":  untrimmed,
		"rss_after_sync":            afterSync,
		"bytes_per_object":          perObject,
		"sync_peak_rss":             syncPeak,
		"peak_rss":                  peak,
		"peak_sample":               sample,
		"most_pending":              nil,
		"server":                    stats,
	}, nil
}
