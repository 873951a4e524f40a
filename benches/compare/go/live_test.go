package main

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLiveReportDividesTheWatchPhaseByTheUpdates(t *testing.T) {
	report := liveReport("client-go", 100, 400, 2, 0.5, 2.0, 1.0, 0.25, 1.06, 0.27)
	near := func(field string, want float64) {
		t.Helper()
		if got := report[field].(float64); math.Abs(got-want) > 1e-9 {
			t.Fatalf("%s = %v; want %v", field, got, want)
		}
	}
	near("watch_cpu_seconds", 0.08)
	near("user_seconds", 0.06)
	near("system_seconds", 0.02)
	near("watch_cpu_us_per_event", 200)
	near("user_us_per_event", 150)
	near("system_us_per_event", 50)
	if report["deliveries_per_subscriber"] != uint64(500) || report["runner"] != "client-go" || report["mode"] != "live" {
		t.Fatalf("report %v", report)
	}
}

// The fake server's three Pods, then MODIFIED a, MODIFIED b, DELETED c once
// released: N = 3, U = 3 for the live runner, released when it is READY.
func TestLiveRunnerCountsTheUpdatesAfterReady(t *testing.T) {
	server := fakeWireServer(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server.URL +
		"\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	readied := false
	ready := func(float64) {
		readied = true
		if err := (control{base: server.URL}).call(http.MethodPost, "/bench/release", nil); err != nil {
			t.Error(err)
		}
	}
	report, err := runLive(kubeconfig, false, 3, 3, 2, 20*time.Second, ready)
	if err != nil {
		t.Fatal(err)
	}
	if !readied || report["updates"] != uint64(3) || report["subscribers"] != 2 {
		t.Fatalf("readied %v, report %v", readied, report)
	}
	if cpu := report["watch_cpu_seconds"].(float64); cpu < 0 {
		t.Fatalf("watch CPU %v", cpu)
	}
}
