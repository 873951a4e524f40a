// Command fifo-trace runs DeltaFifo traces (see conformance/TRACE_FORMAT.md)
// through client-go's DeltaFIFO and prints what an observer sees.
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
	blocks.Serve("fifo-trace", "trace", func(line []byte, out *bytes.Buffer) blocks.Run {
		var h header
		if err := json.Unmarshal(line, &h); err != nil {
			blocks.Fatalf("malformed header %q: %v", line, err)
		}
		return newTraceRun(h, out)
	})
}

func fatalf(format string, args ...any) { blocks.Fatalf(format, args...) }

func writeJSON(out *bytes.Buffer, v any) { blocks.WriteJSON(out, v) }
