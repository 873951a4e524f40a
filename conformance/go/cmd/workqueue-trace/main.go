// Command workqueue-trace runs work queue traces (see
// conformance/TRACE_FORMAT.md, "Work queue traces") through client-go's
// TypedRateLimitingQueue on a fake clock and prints what an observer sees.
//
// It reads any number of traces from stdin, one after the other, and answers
// each with one block of result lines, so one process serves a whole run.
package main

import (
	"bytes"
	"encoding/json"

	"kube-informer/conformance/go/internal/blocks"
)

func main() {
	blocks.Serve("workqueue-trace", "workqueue", func(line []byte, out *bytes.Buffer) blocks.Run {
		var h header
		if err := json.Unmarshal(line, &h); err != nil {
			blocks.Fatalf("malformed header %q: %v", line, err)
		}
		return newQueueRun(h, out)
	})
}
