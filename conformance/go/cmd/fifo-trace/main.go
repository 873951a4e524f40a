// Command fifo-trace runs DeltaFifo traces (see conformance/TRACE_FORMAT.md)
// through client-go's DeltaFIFO and prints what an observer sees.
//
// It reads any number of traces from stdin, one after the other, and answers
// each with one block of result lines, so one process serves a whole run.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()

	var run *traceRun
	var block bytes.Buffer
	for in.Scan() {
		line := bytes.TrimSpace(in.Bytes())
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Trace *string `json:"trace"`
			End   bool    `json:"end"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			fatalf("malformed line %q: %v", line, err)
		}
		switch {
		case probe.Trace != nil:
			var h header
			if err := json.Unmarshal(line, &h); err != nil {
				fatalf("malformed header %q: %v", line, err)
			}
			block.Reset()
			run = newTraceRun(h, &block)
		case probe.End:
			if run == nil {
				fatalf("end line without a header")
			}
			writeJSON(&block, map[string]any{"end": true})
			// The whole answer is written only once the trace is read, so a
			// caller that writes a full trace before reading never deadlocks.
			out.Write(block.Bytes())
			out.Flush()
			run = nil
		default:
			if run == nil {
				fatalf("operation before any header: %q", line)
			}
			var o op
			if err := json.Unmarshal(line, &o); err != nil {
				fatalf("malformed operation %q: %v", line, err)
			}
			run.apply(o)
		}
	}
	if err := in.Err(); err != nil {
		fatalf("reading stdin: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fifo-trace: "+format+"\n", args...)
	os.Exit(2)
}
