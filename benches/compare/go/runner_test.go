package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func cm(name, rv string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"` + rv + `"},"data":{"k":"v"}}`
}

func writeWorkload(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "workload.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func smallWorkload(t *testing.T) string {
	return writeWorkload(t,
		`{"type":"LIST","object":{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"3"},"items":[`+
			cm("a", "1")+","+cm("b", "2")+","+cm("c", "3")+`]}}`,
		`{"type":"MODIFIED","object":`+cm("a", "4")+`}`,
		`{"type":"MODIFIED","object":`+cm("b", "5")+`}`,
		`{"type":"DELETED","object":`+cm("c", "6")+`}`,
	)
}

func TestEveryHandlerSeesEveryEvent(t *testing.T) {
	report, err := run(smallWorkload(t), 3, false, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if report["events"] != uint64(6) || report["deliveries_per_subscriber"] != uint64(6) {
		t.Fatalf("events %v, deliveries %v; want 6 and 6", report["events"], report["deliveries_per_subscriber"])
	}
	if report["runner"] != "client-go" || report["rss_after_list"] == nil {
		t.Fatalf("unexpected report %v", report)
	}
}

func TestSlowVariantReportsBacklog(t *testing.T) {
	report, err := run(smallWorkload(t), 2, true, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	backlog, ok := report["slow_backlog"].(uint64)
	if !ok || backlog > 6 {
		t.Fatalf("slow_backlog %v", report["slow_backlog"])
	}
}

func TestBadWorkloadsAreErrors(t *testing.T) {
	cases := map[string]string{
		"unknown type": writeWorkload(t,
			`{"type":"LIST","object":{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[]}}`,
			`{"type":"BOOKMARKED","object":`+cm("a", "1")+`}`),
		"no list":   writeWorkload(t, `{"type":"ADDED","object":`+cm("a", "1")+`}`),
		"malformed": writeWorkload(t, `{"type":`),
	}
	for name, path := range cases {
		if _, err := loadWorkload(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
