package main

// The wire server's protobuf and metadata-only answers, read by client-go's
// own decoders, carry the same Pods as its JSON ones:
//
//   - W-PB1: protobuf list pages and watch events decode to the Pods of the
//     JSON ones, event types and order included.
//   - W-PB2: metadata-only answers (protobuf, which client-go's metadata
//     client asks for first, and JSON) carry each Pod's metadata, as
//     PartialObjectMetadata(List) of meta.k8s.io/v1.
//
// (W-PB3, the Accept negotiation itself, is checked by the Rust tests in
// benches/compare/tests/wire.rs.) The server is the real one: set
// COMPARE_BIN to a kube-informer-compare binary (wire.sh builds one at
// $CARGO_TARGET_DIR/release/kube-informer-compare); the test binary itself
// is the server's protobuf encoder.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// TestMain turns the test binary into the encoder when the server runs it
// with -encode-protobuf.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-encode-protobuf" {
		if err := encodePods(os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// wireObjects: 120 Pods, listed in pages of 50; 240 updates and 12 deletes.
const wireObjects = 120

// startRustServer starts `kube-informer-compare serve` with protobuf and
// metadata-only JSON and returns its URL.
func startRustServer(t *testing.T) string {
	t.Helper()
	binary := os.Getenv("COMPARE_BIN")
	if binary == "" {
		t.Skip("set COMPARE_BIN to a kube-informer-compare binary to test the real server")
	}
	address := filepath.Join(t.TempDir(), "address")
	server := exec.Command(binary, "serve", "--objects", "120", "--address-file", address,
		"--protobuf-encoder", os.Args[0], "--metadata")
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = server.Process.Kill()
		_ = server.Wait()
	})
	for range 600 {
		if url, err := os.ReadFile(address); err == nil && len(url) > 0 {
			return string(url)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the server did not start")
	return ""
}

func clientset(t *testing.T, url string, protobuf bool) *kubernetes.Clientset {
	t.Helper()
	client, err := liveClient(&rest.Config{Host: url}, protobuf)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// listPods lists in pages of 50, checking every page's resourceVersion.
func listPods(t *testing.T, client kubernetes.Interface) ([]corev1.Pod, string) {
	t.Helper()
	var pods []corev1.Pod
	options := metav1.ListOptions{Limit: 50}
	for {
		page, err := client.CoreV1().Pods("").List(context.Background(), options)
		if err != nil {
			t.Fatal(err)
		}
		if page.ResourceVersion != "120" {
			t.Fatalf("page resourceVersion %q; want 120", page.ResourceVersion)
		}
		pods = append(pods, page.Items...)
		if page.Continue == "" {
			return pods, page.ResourceVersion
		}
		options.Continue = page.Continue
	}
}

// release opens the server's gate on every watch event.
func release(t *testing.T, url string) {
	t.Helper()
	if err := (control{base: url}).call(http.MethodPost, "/bench/release?phase=all", nil); err != nil {
		t.Fatal(err)
	}
}

// drain reads count events from a watch and stops it.
func drain(t *testing.T, events watch.Interface, count int) []watch.Event {
	t.Helper()
	defer events.Stop()
	var out []watch.Event
	timeout := time.After(20 * time.Second)
	for len(out) < count {
		select {
		case event, ok := <-events.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %d of %d events", len(out), count)
			}
			out = append(out, event)
		case <-timeout:
			t.Fatalf("%d of %d events within 20 s", len(out), count)
		}
	}
	return out
}

func watchPods(t *testing.T, client kubernetes.Interface, from string) []watch.Event {
	t.Helper()
	events, err := client.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, events, 3*wireObjects-wireObjects+wireObjects/10)
}

// samePod compares two decoded Pods apart from their TypeMeta, which the
// JSON form carries per item and the protobuf form in the envelope only.
func samePod(t *testing.T, what string, jsonPod, protobufPod corev1.Pod) {
	t.Helper()
	jsonPod.TypeMeta, protobufPod.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if !equality.Semantic.DeepEqual(jsonPod, protobufPod) {
		t.Fatalf("%s: the protobuf Pod differs from the JSON one:\n%+v\n%+v", what, protobufPod, jsonPod)
	}
}

func TestWPB1ProtobufListAndWatchDecodeToTheJSONPods(t *testing.T) {
	url := startRustServer(t)
	jsonClient, protobufClient := clientset(t, url, false), clientset(t, url, true)
	jsonPods, rv := listPods(t, jsonClient)
	protobufPods, _ := listPods(t, protobufClient)
	if len(jsonPods) != wireObjects || len(protobufPods) != wireObjects {
		t.Fatalf("%d JSON and %d protobuf Pods; want %d", len(jsonPods), len(protobufPods), wireObjects)
	}
	if len(jsonPods[0].ManagedFields) != 2 || len(jsonPods[0].Spec.Containers) != 2 {
		t.Fatalf("the workload's Pods are not the full ones: %+v", jsonPods[0])
	}
	for i := range jsonPods {
		samePod(t, "list item "+jsonPods[i].Name, jsonPods[i], protobufPods[i])
	}
	release(t, url)
	jsonEvents, protobufEvents := watchPods(t, jsonClient, rv), watchPods(t, protobufClient, rv)
	for i := range jsonEvents {
		if jsonEvents[i].Type != protobufEvents[i].Type {
			t.Fatalf("event %d: %s in JSON, %s in protobuf", i, jsonEvents[i].Type, protobufEvents[i].Type)
		}
		samePod(t, "watch event", *jsonEvents[i].Object.(*corev1.Pod), *protobufEvents[i].Object.(*corev1.Pod))
	}
	if jsonEvents[len(jsonEvents)-1].Type != watch.Deleted {
		t.Fatalf("the last event is %s; want DELETED", jsonEvents[len(jsonEvents)-1].Type)
	}
}

// sameMetadata compares a PartialObjectMetadata with a Pod's metadata.
func sameMetadata(t *testing.T, what string, pod corev1.Pod, partial metav1.PartialObjectMetadata) {
	t.Helper()
	if !equality.Semantic.DeepEqual(pod.ObjectMeta, partial.ObjectMeta) {
		t.Fatalf("%s: the metadata differs from the Pod's:\n%+v\n%+v", what, partial.ObjectMeta, pod.ObjectMeta)
	}
}

// getAccepting fetches path with an Accept header and returns the
// Content-Type and the body.
func getAccepting(t *testing.T, url, path, accept string) (string, []byte) {
	t.Helper()
	request, err := http.NewRequest(http.MethodGet, url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Accept", accept)
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	if response.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, response.Status)
	}
	return response.Header.Get("Content-Type"), body
}

func TestWPB2MetadataListAndWatchDecodeToThePodsMetadata(t *testing.T) {
	url := startRustServer(t)
	jsonPods, rv := listPods(t, clientset(t, url, false))

	// client-go's metadata client asks for protobuf first, as it does of
	// a kube-apiserver.
	config := &rest.Config{Host: url}
	client, err := metadata.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	pods := client.Resource(corev1.SchemeGroupVersion.WithResource("pods"))
	list, err := pods.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != wireObjects || list.ResourceVersion != rv {
		t.Fatalf("%d items at %q; want %d at %s", len(list.Items), list.ResourceVersion, wireObjects, rv)
	}
	for i := range jsonPods {
		sameMetadata(t, "protobuf list item", jsonPods[i], list.Items[i])
	}
	listAccept := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	if contentType, _ := getAccepting(t, url, "/api/v1/pods", listAccept); contentType != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("the metadata client's list was answered in %q; want protobuf", contentType)
	}

	// The JSON form, as a kube-apiserver writes it.
	contentType, body := getAccepting(t, url, "/api/v1/pods?limit=50",
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	var jsonList metav1.PartialObjectMetadataList
	if err := json.Unmarshal(body, &jsonList); err != nil {
		t.Fatal(err)
	}
	if contentType != "application/json" || jsonList.Kind != "PartialObjectMetadataList" ||
		jsonList.APIVersion != "meta.k8s.io/v1" || len(jsonList.Items) != 50 || jsonList.Continue == "" {
		t.Fatalf("JSON metadata page: %s %s/%s, %d items, continue %q", contentType, jsonList.APIVersion, jsonList.Kind, len(jsonList.Items), jsonList.Continue)
	}
	for i := range jsonList.Items {
		if jsonList.Items[i].Kind != "PartialObjectMetadata" {
			t.Fatalf("item kind %q", jsonList.Items[i].Kind)
		}
		sameMetadata(t, "JSON list item", jsonPods[i], jsonList.Items[i])
	}

	release(t, url)
	jsonEvents := watchPods(t, clientset(t, url, false), rv)
	watcher, err := pods.Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	events := drain(t, watcher, len(jsonEvents))
	for i := range events {
		if events[i].Type != jsonEvents[i].Type {
			t.Fatalf("event %d: %s; want %s", i, events[i].Type, jsonEvents[i].Type)
		}
		sameMetadata(t, "protobuf watch event", *jsonEvents[i].Object.(*corev1.Pod), *events[i].Object.(*metav1.PartialObjectMetadata))
	}

	// The JSON watch: one line per event, objects PartialObjectMetadata.
	contentType, body = getAccepting(t, url, "/api/v1/pods?watch=true&timeoutSeconds=1&resourceVersion="+rv,
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if contentType != "application/json" || len(lines) != len(jsonEvents) {
		t.Fatalf("JSON metadata watch: %s, %d lines; want %d", contentType, len(lines), len(jsonEvents))
	}
	for i, line := range lines {
		var event struct {
			Type   string                       `json:"type"`
			Object metav1.PartialObjectMetadata `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &event); err != nil {
			t.Fatal(err)
		}
		if event.Type != string(jsonEvents[i].Type) || event.Object.Kind != "PartialObjectMetadata" {
			t.Fatalf("line %d: %s %s", i, event.Type, event.Object.Kind)
		}
		sameMetadata(t, "JSON watch event", *jsonEvents[i].Object.(*corev1.Pod), event.Object)
	}
}
