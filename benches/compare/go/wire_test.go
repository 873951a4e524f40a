package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func pod(name, rv string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"` + rv +
		`","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{}}}]},` +
		`"spec":{"containers":[{"name":"app","image":"app:1"}]}}`
}

// fakeWireServer answers like `kube-informer-compare serve` for three Pods:
// a list at resourceVersion 3, then MODIFIED a, MODIFIED b, DELETED c once
// released; after an expiry, watches get a 410 ERROR event and the list
// moves to resourceVersion 7.
func fakeWireServer(t *testing.T) *httptest.Server {
	t.Helper()
	var lists atomic.Uint64
	released := make(chan struct{})
	expired := make(chan struct{})
	var releaseOnce, expireOnce sync.Once
	isExpired := func() bool {
		select {
		case <-expired:
			return true
		default:
			return false
		}
	}
	expiredLine := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}` + "\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/bench/reset", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{}`) })
	mux.HandleFunc("/bench/info", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"objects":3,"updates":2,"deletes":1,"mean_item_bytes":250}`)
	})
	mux.HandleFunc("/bench/release", func(w http.ResponseWriter, _ *http.Request) {
		releaseOnce.Do(func() { close(released) })
		fmt.Fprint(w, `{}`)
	})
	mux.HandleFunc("/bench/expire", func(w http.ResponseWriter, _ *http.Request) {
		expireOnce.Do(func() { close(expired) })
		fmt.Fprint(w, `{}`)
	})
	mux.HandleFunc("/bench/stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"lists":%d}`, lists.Load())
	})
	mux.HandleFunc("/api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		query := r.URL.Query()
		if query.Get("watch") != "true" && query.Get("watch") != "1" {
			lists.Add(1)
			rv := "3"
			if isExpired() {
				rv = "7"
			}
			fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%s"},"items":[%s,%s,%s]}`,
				rv, pod("a", "1"), pod("b", "2"), pod("c", "3"))
			return
		}
		flusher := w.(http.Flusher)
		from, _ := strconv.Atoi(query.Get("resourceVersion"))
		if isExpired() && from < 7 {
			fmt.Fprint(w, expiredLine)
			return
		}
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
		if from < 7 {
			select {
			case <-released:
				for _, line := range []string{
					`{"type":"MODIFIED","object":` + pod("a", "4") + "}\n",
					`{"type":"MODIFIED","object":` + pod("b", "5") + "}\n",
					`{"type":"DELETED","object":` + pod("c", "6") + "}\n",
				} {
					fmt.Fprint(w, line)
				}
				flusher.Flush()
			case <-expired:
				fmt.Fprint(w, expiredLine)
				return
			case <-r.Context().Done():
				return
			}
		}
		select {
		case <-expired:
			if from < 7 {
				fmt.Fprint(w, expiredLine)
			}
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return server
}

func TestWireBurstTellsEveryHandlerEveryEvent(t *testing.T) {
	server := fakeWireServer(t)
	report, err := runWire(server.URL, wireJSON, 3, true, false, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if report["events"] != uint64(6) || report["deliveries_per_subscriber"] != uint64(6) {
		t.Fatalf("events %v, deliveries %v; want 6 and 6", report["events"], report["deliveries_per_subscriber"])
	}
	if report["variant"] != "burst" || report["strip"] != true {
		t.Fatalf("variant %v strip %v", report["variant"], report["strip"])
	}
	if cpu, _ := report["cpu_seconds"].(float64); cpu <= 0 {
		t.Fatalf("cpu seconds %v", report["cpu_seconds"])
	}
}

func TestWireRelistListsAgainAfterA410(t *testing.T) {
	server := fakeWireServer(t)
	report, err := runWire(server.URL, wireJSON, 2, false, true, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if report["variant"] != "relist" || report["deliveries_per_subscriber"] != uint64(6) {
		t.Fatalf("variant %v, deliveries %v; want relist and 6", report["variant"], report["deliveries_per_subscriber"])
	}
	if stats := report["server"].(serverStats); stats.Lists != 2 {
		t.Fatalf("lists %d; want 2", stats.Lists)
	}
}

func TestStripClearsManagedFields(t *testing.T) {
	var object corev1.Pod
	if err := json.Unmarshal([]byte(pod("a", "1")), &object); err != nil {
		t.Fatal(err)
	}
	if len(object.ManagedFields) != 1 {
		t.Fatalf("the test Pod should carry managedFields")
	}
	if _, err := stripManagedFields(&object); err != nil {
		t.Fatal(err)
	}
	if len(object.ManagedFields) != 0 || object.Name != "a" {
		t.Fatalf("after the transform: name %q, managedFields %v", object.Name, object.ManagedFields)
	}
}
