// Live mode, client-go's side: the wire mode's informer (podInformer, JSON,
// no client-side rate limit) on a real kube-apiserver from a kubeconfig,
// measured from READY (when live.sh starts the writer) until every handler
// has seen the U updates that `kube-informer-compare live-writer update`
// makes at a steady rate. The Rust side is `kube-informer-compare live`
// (benches/compare/src/live/runner.rs); live.sh runs one runner at a time.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// liveReport computes the JSON line from the CPU times (user, system) read
// at READY and once every handler had seen the updates; the same fields as
// the Rust LiveReport.
func liveReport(runner string, objects, updates uint64, subscriberCount int, syncSeconds, watchSeconds float64, startUser, startSystem, endUser, endSystem float64) map[string]any {
	user := max(endUser-startUser, 0)
	system := max(endSystem-startSystem, 0)
	perEvent := func(seconds float64) float64 { return seconds / float64(max(updates, 1)) * 1e6 }
	return map[string]any{
		"mode":                      "live",
		"runner":                    runner,
		"allocator":                 "go",
		"objects":                   objects,
		"updates":                   updates,
		"subscribers":               subscriberCount,
		"deliveries_per_subscriber": objects + updates,
		"sync_seconds":              syncSeconds,
		"watch_seconds":             watchSeconds,
		"watch_cpu_seconds":         user + system,
		"user_seconds":              user,
		"system_seconds":            system,
		"watch_cpu_us_per_event":    perEvent(user + system),
		"user_us_per_event":         perEvent(user),
		"system_us_per_event":       perEvent(system),
		"rss":                       uint64(0),
		"peak_rss":                  uint64(0),
		"watch_peak_rss":            uint64(0),
		"rss_at_ready":              uint64(0),
	}
}

// runLive syncs, calls ready (which prints the READY line), then waits for
// the updates; ready runs before the first CPU reading.
//
// With protobuf, the clientset asks for Kubernetes' protobuf encoding
// instead of JSON, as kube-controller-manager and kube-scheduler configure
// theirs; the runner is then named client-go-protobuf. The Rust clients
// have no protobuf decoder, so the JSON row is the like-for-like one.
func runLive(kubeconfig string, protobuf bool, objects, updates uint64, subscriberCount int, timeout time.Duration, ready func(syncSeconds float64)) (map[string]any, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cannot use kubeconfig %s: %w", kubeconfig, err)
	}
	runner := "client-go"
	if protobuf {
		runner = "client-go-protobuf"
	}
	client, err := liveClient(config, protobuf)
	if err != nil {
		return nil, err
	}
	subscribers := make([]*wireSubscriber, subscriberCount)
	for i := range subscribers {
		subscribers[i] = newWireSubscriber(objects, objects+updates)
	}
	informer, err := podInformer(client, false, subscribers)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	defer close(stop)

	clock := time.Now()
	go informer.Run(stop)
	if err := waitMilestone(subscribers, 0, timeout); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	syncSeconds := time.Since(clock).Seconds()

	// The peak of the watch phase alone; the process's peak (sync
	// included) is read before the reset.
	rssAtReady, peakBeforeWatch := resident()
	resetPeak()
	ready(syncSeconds)
	startUser, startSystem := cpuTimes()
	watching := time.Now()
	if err := waitMilestone(subscribers, 1, timeout); err != nil {
		return nil, fmt.Errorf("updates: %w", err)
	}
	endUser, endSystem := cpuTimes()
	report := liveReport(runner, objects, updates, subscriberCount, syncSeconds, time.Since(watching).Seconds(),
		startUser, startSystem, endUser, endSystem)
	rss, watchPeak := resident()
	report["rss"] = rss
	report["peak_rss"] = max(watchPeak, peakBeforeWatch)
	report["watch_peak_rss"] = watchPeak
	report["rss_at_ready"] = rssAtReady
	return report, nil
}

// liveClient is wireClient's clientset, asking for protobuf when told to.
func liveClient(config *rest.Config, protobuf bool) (*kubernetes.Clientset, error) {
	if !protobuf {
		return wireClient(config)
	}
	config.QPS = -1
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfig(config)
}

// startCPUProfile starts a CPU profile into path; the file stays open until
// the process exits, after pprof.StopCPUProfile has flushed it.
func startCPUProfile(path string) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	return pprof.StartCPUProfile(file)
}
