package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// header is the first line of a trace: the FIFO's options.
type header struct {
	Trace        string `json:"trace"`
	EmitReplaced bool   `json:"emitReplaced"`
	KnownObjects bool   `json:"knownObjects"`
	Transform    bool   `json:"transform"`
}

// object identifies a ConfigMap; a missing name makes a nameless object.
type object struct {
	Namespace string  `json:"ns,omitempty"`
	Name      *string `json:"name,omitempty"`
	RV        string  `json:"rv"`
}

type op struct {
	Op    string   `json:"op"`
	Obj   *object  `json:"obj,omitempty"`
	Items []object `json:"items,omitempty"`
	RV    string   `json:"rv,omitempty"`
}

// transformCount is the annotation the trace transform increments, so a
// popped object shows how many times the transform ran on it.
const transformCount = "conformance/transformed"

// rejectPrefix: the trace transform fails for objects named like this.
const rejectPrefix = "reject"

var errRejected = errors.New("conformance transform rejects this object")

// errNameless is what the harness key function returns for an object without
// a name. client-go's own key function accepts it (key "ns/"); the harness
// uses a strict one because kube-informer rejects such objects (rule F2).
var errNameless = errors.New("object has no name")

func strictKeyFunc(obj interface{}) (string, error) {
	if m, ok := obj.(metav1.Object); ok && m.GetName() == "" {
		return "", errNameless
	}
	return cache.MetaNamespaceKeyFunc(obj)
}

// sortedKnown is the informer's indexer as the FIFO's known objects, except
// that it lists keys sorted. client-go queues the tombstones of vanished known
// keys in ListKeys order, which a plain indexer leaves to Go's random map
// order; sorting makes every run of a trace reproducible.
type sortedKnown struct{ cache.Indexer }

func (s sortedKnown) ListKeys() []string {
	keys := s.Indexer.ListKeys()
	sort.Strings(keys)
	return keys
}

type traceRun struct {
	out      *bytes.Buffer
	fifo     *cache.DeltaFIFO
	known    cache.Indexer
	lastPop  cache.Deltas
	index    int
	hasKnown bool
}

func newTraceRun(h header, out *bytes.Buffer) *traceRun {
	r := &traceRun{out: out}
	opts := cache.DeltaFIFOOptions{
		KeyFunction:           strictKeyFunc,
		EmitDeltaTypeReplaced: h.EmitReplaced,
	}
	if h.KnownObjects {
		r.known = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		opts.KnownObjects = sortedKnown{r.known}
		r.hasKnown = true
	}
	if h.Transform {
		opts.Transformer = traceTransform
	}
	r.fifo = cache.NewDeltaFIFOWithOptions(opts)
	writeJSON(out, map[string]any{"trace": h.Trace})
	return r
}

func traceTransform(obj interface{}) (interface{}, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	if strings.HasPrefix(cm.Name, rejectPrefix) {
		return nil, errRejected
	}
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	n, _ := strconv.Atoi(cm.Annotations[transformCount])
	cm.Annotations[transformCount] = strconv.Itoa(n + 1)
	return cm, nil
}

func (o object) configMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	cm.Namespace = o.Namespace
	if o.Name != nil {
		cm.Name = *o.Name
	}
	cm.ResourceVersion = o.RV
	return cm
}

// Apply runs one operation line.
func (r *traceRun) Apply(raw []byte) {
	var o op
	if err := json.Unmarshal(raw, &o); err != nil {
		fatalf("malformed operation %q: %v", raw, err)
	}
	r.apply(o)
}

// Finish has nothing to release: a FIFO needs no stopping.
func (r *traceRun) Finish() {}

func (r *traceRun) apply(o op) {
	line := map[string]any{"i": r.index, "op": o.Op}
	r.index++
	var err error
	switch o.Op {
	case "add", "update", "delete":
		if o.Obj == nil {
			line["err"] = "harness: missing obj"
			break
		}
		cm := o.Obj.configMap()
		switch o.Op {
		case "add":
			err = r.fifo.Add(cm)
		case "update":
			err = r.fifo.Update(cm)
		default:
			err = r.fifo.Delete(cm)
		}
	case "replace":
		list := make([]interface{}, 0, len(o.Items))
		for _, it := range o.Items {
			list = append(list, it.configMap())
		}
		err = r.fifo.Replace(list, o.RV)
	case "resync":
		err = r.fifo.Resync()
	case "close":
		r.fifo.Close()
	case "pop":
		r.pop(line)
	case "requeue":
		if r.lastPop == nil {
			line["result"] = "nothing"
			break
		}
		err = requeue(r.fifo, r.lastPop)
	default:
		line["err"] = "harness: unknown op " + o.Op
	}
	if err != nil {
		line["err"] = errorKind(err)
	} else if _, set := line["err"]; !set {
		line["err"] = nil
	}
	line["synced"] = r.fifo.HasSynced()
	line["len"] = queueLen(r.fifo)
	writeJSON(r.out, line)
}

func (r *traceRun) pop(line map[string]any) {
	if queueLen(r.fifo) == 0 && !r.fifo.IsClosed() {
		// Pop would wait forever: record that the queue was empty.
		line["result"] = "empty"
		return
	}
	var initial bool
	item, err := r.fifo.Pop(func(obj interface{}, isInInitialList bool) error {
		initial = isInInitialList
		if r.hasKnown {
			applyToKnown(r.known, obj.(cache.Deltas))
		}
		return nil
	})
	if errors.Is(err, cache.ErrFIFOClosed) {
		line["result"] = "closed"
		return
	}
	if err != nil {
		line["result"] = "error"
		line["err"] = errorKind(err)
		return
	}
	deltas := item.(cache.Deltas)
	r.lastPop = deltas
	line["result"] = "item"
	line["initial"] = initial
	key, _ := r.fifo.KeyOf(deltas)
	line["key"] = key
	line["deltas"] = describeDeltas(deltas)
}

// applyToKnown updates the indexer from popped deltas the way client-go's
// informer does: Deleted removes, every other type adds or updates.
func applyToKnown(known cache.Indexer, deltas cache.Deltas) {
	for _, d := range deltas {
		switch d.Type {
		case cache.Deleted:
			_ = known.Delete(d.Object)
		default:
			if _, exists, err := known.Get(d.Object); err == nil && exists {
				_ = known.Update(d.Object)
			} else {
				_ = known.Add(d.Object)
			}
		}
	}
}

func describeDeltas(deltas cache.Deltas) []map[string]any {
	out := make([]map[string]any, 0, len(deltas))
	for _, d := range deltas {
		entry := map[string]any{"type": string(d.Type), "tombstone": false}
		obj := d.Object
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			entry["tombstone"] = true
			entry["key"] = t.Key
			obj = t.Obj
		} else if key, err := strictKeyFunc(obj); err == nil {
			entry["key"] = key
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm != nil {
			entry["rv"] = cm.ResourceVersion
			if n, err := strconv.Atoi(cm.Annotations[transformCount]); err == nil {
				entry["tx"] = n
			} else {
				entry["tx"] = 0
			}
		} else {
			entry["rv"] = nil
		}
		out = append(out, entry)
	}
	return out
}

// errorKind reduces an error to the category both runners agree on; the
// messages themselves differ between the two implementations.
func errorKind(err error) string {
	switch {
	case errors.Is(err, errNameless) || strings.Contains(err.Error(), errNameless.Error()):
		return "key"
	case errors.Is(err, errRejected) || strings.Contains(err.Error(), errRejected.Error()):
		return "transform"
	case errors.Is(err, cache.ErrFIFOClosed):
		return "closed"
	default:
		return "other: " + err.Error()
	}
}
