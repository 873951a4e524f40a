// Command informer-trace runs informer scripts (see conformance/TRACE_FORMAT.md,
// "Informer scripts") through client-go's sharedIndexInformer, fed by a
// scripted ListerWatcher and driven by a fake clock, and prints what each
// event handler received after every step.
//
// Like fifo-trace it reads any number of scripts from stdin and answers each
// with one block of lines.
package main

import (
	"bytes"
	"encoding/json"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"kube-informer/conformance/go/internal/blocks"
)

func main() {
	installFeatureGates()
	// client-go logs warnings (e.g. a raised resync period) that are part of
	// the behaviour under test, not of the output.
	klog.SetLogger(logr.Discard())
	blocks.Serve("informer-trace", "script", func(line []byte, out *bytes.Buffer) blocks.Run {
		var h header
		if err := json.Unmarshal(line, &h); err != nil {
			blocks.Fatalf("malformed header %q: %v", line, err)
		}
		return newScriptRun(h, out)
	})
}

func fatalf(format string, args ...any) { blocks.Fatalf(format, args...) }

func writeJSON(out *bytes.Buffer, v any) { blocks.WriteJSON(out, v) }
