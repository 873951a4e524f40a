package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// resident returns VmRSS and VmHWM of this process, in bytes.
func resident() (now, peak uint64) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			now = kibToBytes(value)
		} else if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = kibToBytes(value)
		}
	}
	return now, peak
}

func kibToBytes(field string) uint64 {
	kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(field), "kB")), 10, 64)
	if err != nil {
		return 0
	}
	return kib * 1024
}

// resetPeak sets VmHWM back to the current resident size, so the peak belongs
// to the measured run rather than to decoding the workload.
func resetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// releaseFreeMemory collects garbage and hands free pages back to the kernel,
// as the Rust runners do with malloc_trim, so both read live memory.
func releaseFreeMemory() {
	debug.FreeOSMemory()
}
