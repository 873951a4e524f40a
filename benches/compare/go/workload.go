package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// record is one line of a workload file: {"type": T, "object": O}.
// See benches/compare/src/workload.rs for the format.
type record struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// phases is a workload decoded into memory, cut where the runners feed it.
type phases struct {
	list    *corev1.ConfigMapList
	updates []watch.Event // watch events before the first delete
	deletes []watch.Event // watch events from the first delete on
}

type counts struct {
	listed, applied, deleted uint64
}

func (c counts) total() uint64 { return c.listed + c.applied + c.deleted }

func (p *phases) counts() counts {
	c := counts{listed: uint64(len(p.list.Items))}
	for _, events := range [][]watch.Event{p.updates, p.deletes} {
		for _, event := range events {
			if event.Type == watch.Deleted {
				c.deleted++
			} else {
				c.applied++
			}
		}
	}
	return c
}

// loadWorkload reads and decodes a whole workload file.
func loadWorkload(path string) (*phases, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read workload %s: %w", path, err)
	}
	defer file.Close()
	decoder := json.NewDecoder(bufio.NewReaderSize(file, 1<<20))

	var first record
	if err := decoder.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("workload is empty")
		}
		return nil, fmt.Errorf("malformed workload record: %w", err)
	}
	if first.Type != "LIST" {
		return nil, errors.New("workload does not start with a LIST record")
	}
	result := &phases{list: &corev1.ConfigMapList{}}
	if err := json.Unmarshal(first.Object, result.list); err != nil {
		return nil, fmt.Errorf("malformed workload list: %w", err)
	}

	for {
		var next record
		if err := decoder.Decode(&next); err != nil {
			if errors.Is(err, io.EOF) {
				return result, nil
			}
			return nil, fmt.Errorf("malformed workload record: %w", err)
		}
		var kind watch.EventType
		switch next.Type {
		case "ADDED":
			kind = watch.Added
		case "MODIFIED":
			kind = watch.Modified
		case "DELETED":
			kind = watch.Deleted
		default:
			return nil, fmt.Errorf("unknown workload record type %q", next.Type)
		}
		object := &corev1.ConfigMap{}
		if err := json.Unmarshal(next.Object, object); err != nil {
			return nil, fmt.Errorf("malformed workload object: %w", err)
		}
		event := watch.Event{Type: kind, Object: object}
		if kind == watch.Deleted || len(result.deletes) > 0 {
			result.deletes = append(result.deletes, event)
		} else {
			result.updates = append(result.updates, event)
		}
	}
}
