// Command informer-trace runs informer scripts (see conformance/TRACE_FORMAT.md,
// "Informer scripts") through client-go's sharedIndexInformer, fed by a
// scripted ListerWatcher and driven by a fake clock, and prints what each
// event handler received after every step.
//
// Like fifo-trace it reads any number of scripts from stdin and answers each
// with one block of lines.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func main() {
	installFeatureGates()
	// client-go logs warnings (e.g. a raised resync period) that are part of
	// the behaviour under test, not of the output.
	klog.SetLogger(logr.Discard())
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()

	var run *scriptRun
	var block bytes.Buffer
	for in.Scan() {
		line := bytes.TrimSpace(in.Bytes())
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Script *string `json:"script"`
			End    bool    `json:"end"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			fatalf("malformed line %q: %v", line, err)
		}
		switch {
		case probe.Script != nil:
			var h header
			if err := json.Unmarshal(line, &h); err != nil {
				fatalf("malformed header %q: %v", line, err)
			}
			block.Reset()
			run = newScriptRun(h, &block)
		case probe.End:
			if run == nil {
				fatalf("end line without a header")
			}
			run.stop()
			writeJSON(&block, map[string]any{"end": true})
			out.Write(block.Bytes())
			out.Flush()
			run = nil
		default:
			if run == nil {
				fatalf("step before any header: %q", line)
			}
			var s step
			if err := json.Unmarshal(line, &s); err != nil {
				fatalf("malformed step %q: %v", line, err)
			}
			run.apply(s)
		}
	}
	if err := in.Err(); err != nil {
		fatalf("reading stdin: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informer-trace: "+format+"\n", args...)
	os.Exit(2)
}

func writeJSON(out *bytes.Buffer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fatalf("encoding %v: %v", v, err)
	}
	out.Write(b)
	out.WriteByte('\n')
}
