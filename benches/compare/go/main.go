// Runner (c) of the side-by-side benchmark: client-go's shared index informer
// with S event handlers, fed the shared workload by a fake ListerWatcher
// (in-memory mode), or listing and watching the loopback server with its
// real REST client (wire mode, -wire URL; see wire.go), or a real
// kube-apiserver's Pods while a writer updates them (live mode, -live
// KUBECONFIG; see live.go).
// It measures what the Rust runners measure (see benches/compare/src/drive.rs)
// and prints the same JSON line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func main() {
	workloadPath := flag.String("workload", "", "workload file (required)")
	subscriberCount := flag.Int("subscribers", 1, "number of event handlers")
	slow := flag.Bool("slow", false, "handler 0 sleeps 1 ms per notification")
	timeout := flag.Duration("timeout", 900*time.Second, "give up when a wait lasts longer")
	apiserverKubeconfig := flag.String("apiserver-kubeconfig", "", "measure against this cluster instead of a workload file")
	objects := flag.Int("objects", 2000, "with -apiserver-kubeconfig: ConfigMaps to create; with -live: Pods the writer created")
	liveKubeconfig := flag.String("live", "", "live mode: kubeconfig of the cluster kube-informer-compare live-writer writes to")
	updates := flag.Int("updates", 0, "with -live: updates the writer makes")
	protobuf := flag.Bool("protobuf", false, "with -live or -wire: ask the server for protobuf instead of JSON")
	metadataOnly := flag.Bool("metadata", false, "with -wire: client-go's metadata informer (PartialObjectMetadata) instead of the Pod informer")
	encodeProtobuf := flag.Bool("encode-protobuf", false, "encoder mode: read length-prefixed Pod JSON on stdin, write length-prefixed protobuf envelopes on stdout")
	cpuProfile := flag.String("cpuprofile", "", "with -live: write a CPU profile of the watch phase (from READY) to this file")
	wireServer := flag.String("wire", "", "wire mode: base URL of the loopback server (kube-informer-compare serve)")
	strip := flag.Bool("strip", false, "wire mode: strip managedFields with SetTransform")
	relist := flag.Bool("relist", false, "wire mode: measure a relist (410, then a full list) instead of a watch burst")
	flag.Parse()
	if *encodeProtobuf {
		if err := encodePods(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "encoding failed: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if *wireServer != "" {
		if *subscriberCount < 1 || (*protobuf && *metadataOnly) {
			fmt.Fprintln(os.Stderr, "usage: client-go-runner -wire URL -subscribers S [-protobuf | -metadata] [-strip] [-relist]")
			os.Exit(2)
		}
		flavour := wireJSON
		if *protobuf {
			flavour = wireProtobuf
		} else if *metadataOnly {
			flavour = wireMetadata
		}
		report, err := runWire(*wireServer, flavour, *subscriberCount, *strip, *relist, *timeout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go wire run failed: %v\n", err)
			os.Exit(1)
		}
		line, _ := json.Marshal(report)
		fmt.Println(string(line))
		os.Exit(0)
	}
	if *liveKubeconfig != "" {
		if *subscriberCount < 1 || *objects < 1 || *updates < 1 {
			fmt.Fprintln(os.Stderr, "usage: client-go-runner -live KUBECONFIG -objects N -updates U [-protobuf] [-subscribers 1] [-timeout 900s]")
			os.Exit(2)
		}
		ready := func(syncSeconds float64) {
			// The profile covers what the CPU figure covers: the watch phase.
			if *cpuProfile != "" {
				if err := startCPUProfile(*cpuProfile); err != nil {
					fmt.Fprintf(os.Stderr, "no CPU profile: %v\n", err)
				}
			}
			fmt.Printf("READY client-go sync_seconds=%.3f\n", syncSeconds)
		}
		report, err := runLive(*liveKubeconfig, *protobuf, uint64(*objects), uint64(*updates), *subscriberCount, *timeout, ready)
		pprof.StopCPUProfile()
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go live run failed: %v\n", err)
			os.Exit(1)
		}
		line, _ := json.Marshal(report)
		fmt.Println(string(line))
		os.Exit(0)
	}
	if *apiserverKubeconfig != "" {
		report, err := runAgainstAPIServer(*apiserverKubeconfig, *objects, *subscriberCount, *timeout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go apiserver run failed: %v\n", err)
			os.Exit(1)
		}
		line, _ := json.Marshal(report)
		fmt.Println(string(line))
		os.Exit(0)
	}
	if *workloadPath == "" || *subscriberCount < 1 || (*slow && *subscriberCount < 2) {
		fmt.Fprintln(os.Stderr, "usage: client-go-runner -workload FILE -subscribers S [-slow] (S >= 2 with -slow)\n   or: client-go-runner -apiserver-kubeconfig FILE [-objects 2000] [-subscribers 4]")
		os.Exit(2)
	}
	report, err := run(*workloadPath, *subscriberCount, *slow, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client-go run failed: %v\n", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
	// The slow handler may still be sleeping: do not wait for it.
	os.Exit(0)
}

func run(workloadPath string, subscriberCount int, slow bool, timeout time.Duration) (map[string]any, error) {
	work, err := loadWorkload(workloadPath)
	if err != nil {
		return nil, err
	}
	c := work.counts()
	t := targets{list: c.listed, updates: c.listed + c.applied, last: c.total()}

	source := newGatedListerWatcher(work)
	informer := cache.NewSharedIndexInformer(source.listerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	subscribers := make([]*subscriber, subscriberCount)
	for i := range subscribers {
		subscribers[i] = newSubscriber(t, slow && i == 0)
		if _, err := informer.AddEventHandler(subscribers[i].handlers()); err != nil {
			return nil, fmt.Errorf("cannot add handler: %w", err)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)

	releaseFreeMemory()
	before, _ := resident()
	resetPeak()

	started := time.Now()
	close(source.listOpen)
	if err := waitFast(subscribers, 0, t.list, timeout); err != nil {
		return nil, err
	}
	listTime := time.Since(started)

	var afterList any
	if !slow {
		releaseFreeMemory()
		now, _ := resident()
		afterList = now
	}

	restarted := time.Now()
	close(source.updatesOpen)
	close(source.deletesOpen)
	if err := waitFast(subscribers, 2, t.last, timeout); err != nil {
		return nil, err
	}
	elapsed := listTime + time.Since(restarted)
	_, peak := resident()
	if lists := source.lists.Load(); lists != 1 {
		return nil, fmt.Errorf("the reflector listed %d times; the measurement assumes one list", lists)
	}

	report := map[string]any{
		"runner":                    "client-go",
		"objects":                   c.listed,
		"updates":                   c.applied,
		"deletes":                   c.deleted,
		"subscribers":               subscriberCount,
		"slow":                      slow,
		"events":                    c.total(),
		"deliveries_per_subscriber": t.last,
		"seconds":                   elapsed.Seconds(),
		"list_seconds":              listTime.Seconds(),
		"rss_before":                before,
		"rss_after_list":            afterList,
		"peak_rss":                  peak,
		"slow_backlog":              nil,
		"events_per_second":         float64(c.total()) / elapsed.Seconds(),
		"bytes_per_object":          nil,
	}
	if now, ok := afterList.(uint64); ok {
		report["bytes_per_object"] = (float64(now) - float64(before)) / float64(c.listed)
	}
	if slow {
		report["slow_backlog"] = t.last - subscribers[0].seen.Load()
	}
	return report, nil
}

// waitFast waits until every subscriber that is not slow has reached the
// milestone; slow ones are not waited for.
func waitFast(subscribers []*subscriber, milestone int, target uint64, timeout time.Duration) error {
	deadline := time.After(timeout)
	for i, s := range subscribers {
		if s.slow {
			continue
		}
		select {
		case <-s.reached[milestone]:
		case <-deadline:
			return fmt.Errorf("subscriber %d saw %d of %d notifications within %v", i, s.seen.Load(), target, timeout)
		}
	}
	return nil
}
