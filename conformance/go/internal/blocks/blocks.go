// Package blocks is the stdin/stdout protocol the Go harnesses share: any
// number of blocks (a header line, operation lines, then {"end":true}), each
// answered with one block of JSON lines written only once its input is read,
// so a caller that writes a whole block before reading never deadlocks.
package blocks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Run is one block being executed.
type Run interface {
	// Apply runs one operation line.
	Apply(line []byte)
	// Finish is called at the end line, before the answer is written.
	Finish()
}

var program = "harness"

// Serve reads blocks from stdin until EOF. A line holding headerField starts
// a block: start gets the header line and the buffer that becomes the answer.
func Serve(name, headerField string, start func(header []byte, out *bytes.Buffer) Run) {
	program = name
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()

	var run Run
	var block bytes.Buffer
	for in.Scan() {
		line := bytes.TrimSpace(in.Bytes())
		if len(line) == 0 {
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(line, &probe); err != nil {
			Fatalf("malformed line %q: %v", line, err)
		}
		_, isHeader := probe[headerField]
		switch {
		case isHeader:
			block.Reset()
			run = start(line, &block)
		case string(probe["end"]) == "true":
			if run == nil {
				Fatalf("end line without a header")
			}
			run.Finish()
			WriteJSON(&block, map[string]any{"end": true})
			out.Write(block.Bytes())
			out.Flush()
			run = nil
		default:
			if run == nil {
				Fatalf("operation before any header: %q", line)
			}
			run.Apply(line)
		}
	}
	if err := in.Err(); err != nil {
		Fatalf("reading stdin: %v", err)
	}
}

// Fatalf reports a broken input or harness and exits with status 2.
func Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, program+": "+format+"\n", args...)
	os.Exit(2)
}

// WriteJSON appends v to out as one line.
func WriteJSON(out *bytes.Buffer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		Fatalf("encoding %v: %v", v, err)
	}
	out.Write(b)
	out.WriteByte('\n')
}
