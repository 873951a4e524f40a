// The real-apiserver measurement (issue 7, item 4), client-go's side: a shared
// informer on ConfigMaps of one fresh namespace with S handlers; the clock
// starts, N ConfigMaps are created with a fixed number of requests in flight,
// and it stops when every handler has been told about all N. The Rust side
// is `kube-informer-compare apiserver` (benches/compare/src/apiserver.rs).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// createsInFlight matches CREATES_IN_FLIGHT on the Rust side.
const createsInFlight = 16

func runAgainstAPIServer(kubeconfig string, objects, subscriberCount int, timeout time.Duration) (map[string]any, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cannot use kubeconfig %s: %w", kubeconfig, err)
	}
	// The Rust client does not rate-limit; neither does this one.
	config.QPS = -1
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	namespace := fmt.Sprintf("compare-go-%d", os.Getpid())
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	defer client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	counts := make([]atomic.Int64, subscriberCount)
	done := make(chan int, subscriberCount)
	for i := range counts {
		count := &counts[i]
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				_ = obj.(*corev1.ConfigMap).ResourceVersion
				if count.Add(1) == int64(objects) {
					done <- i
				}
			},
		})
		if err != nil {
			return nil, err
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		return nil, fmt.Errorf("the informer did not sync")
	}

	started := time.Now()
	indexes := make(chan int)
	errs := make(chan error, createsInFlight)
	var workers sync.WaitGroup
	for range createsInFlight {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for index := range indexes {
				if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, configMap(index), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for index := range objects {
		indexes <- index
	}
	close(indexes)
	workers.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	created := time.Since(started)
	deadline := time.After(timeout)
	for range subscriberCount {
		select {
		case <-done:
		case <-deadline:
			return nil, fmt.Errorf("handlers had not seen %d objects within %v", objects, timeout)
		}
	}
	seen := time.Since(started)
	return map[string]any{
		"runner":                        "client-go",
		"objects":                       objects,
		"subscribers":                   subscriberCount,
		"creates_in_flight":             createsInFlight,
		"create_seconds":                created.Seconds(),
		"seconds":                       seen.Seconds(),
		"lag_after_last_create_seconds": (seen - created).Seconds(),
	}, nil
}

// configMap is the same object the Rust side creates.
func configMap(index int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("cm-%05d", index),
			Labels: map[string]string{"app": "compare", "shard": strconv.Itoa(index % 8)},
		},
		Data: map[string]string{
			"index":   strconv.Itoa(index),
			"color":   "blue",
			"payload": strings.Repeat("x", 256),
		},
	}
}
