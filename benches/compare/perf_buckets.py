"""Sorts `perf report --no-children --sort dso,sym --stdio` output into the
buckets NOTES.md shows: decode, allocator, kernel scheduling and futex,
the informer's own logic, and the rest. Called by wire.sh (run.sh
--wire-profile):

    python perf_buckets.py --out wire-profile.json --objects N ours=perf-ours.txt ...

Each symbol's self time goes to the first bucket whose rule matches its
library or name. Rules cover Rust (glibc malloc, serde, tokio, hyper) and Go
(runtime allocator and GC, sigs.k8s.io/json, client-go's cache).
"""

import argparse
import json
import re

LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[([.k])\]\s+(.*?)\s*$")

# (bucket, kernel symbol?, pattern on "dso symbol"), first match wins.
RULES = [
    ("kernel: scheduling, futex, wake-ups", True,
     r"futex|schedule|__switch|switch_to|finish_task_switch|wake|ttwu|enqueue_|dequeue_|pick_next|sched|"
     r"update_curr|update_load|select_task_rq|idle|hrtimer|_raw_spin|queued_spin|do_nanosleep|epoll|ep_poll|"
     r"native_sched_clock|psi_|cpuacct|__cgroup_account|rseq"),
    ("kernel: network, copies, page faults, other syscalls", True, r"."),
    ("allocator: malloc, free (glibc) / mallocgc (Go)", False,
     r"\bmalloc|\bfree\b|cfree|_int_malloc|_int_free|_int_realloc|realloc|calloc|tcache|unlink_chunk|"
     r"malloc_consolidate|sysmalloc|systrim|arena_|__libc_free|__libc_malloc|alloc::alloc::|__rust_alloc|__rust_dealloc|"
     r"runtime\.mallocgc|runtime\.nextFreeFast|runtime\.\(\*mcache\)|runtime\.\(\*mcentral\)|runtime\.\(\*mheap\)|"
     r"runtime\.\(\*mspan\)|runtime\.memclrNoHeapPointers|runtime\.heapBitsSetType|runtime\.\(\*sweepLocked\)|"
     r"runtime\.sweepone|runtime\.bgsweep|runtime\.newobject|runtime\.makeslice|runtime\.growslice|runtime\.mapassign|"
     r"runtime\.makemap|runtime\.rawstring|runtime\.slicebytetostring|runtime\.concatstring|runtime\.allocSpan|"
     r"runtime\.\(\*pageAlloc\)|runtime\.heapSetType|runtime\.mallocgcSmall|runtime\.mallocgcTiny|runtime\.mallocgcLarge"),
    ("Go garbage collector (mark, scan, write barriers)", False,
     r"runtime\.scanobject|runtime\.greyobject|runtime\.findObject|runtime\.gcDrain|runtime\.markBits|runtime\.scanblock|"
     r"runtime\.wbBuf|runtime\.bulkBarrier|runtime\.gcmarknewobject|runtime\.scanstack|runtime\.markroot|"
     r"runtime\.\(\*gcWork\)|runtime\.gcBgMarkWorker|runtime\.spanOf|runtime\.typePointers|runtime\.\(\*gcBits\)|"
     r"runtime\.tryDeferToSpanScan|runtime\.scanSpan|runtime\.\(\*spanInlineMarkBits\)|runtime\.gcFlush|runtime\.\(\*mspan\)\.typePointers"),
    ("freeing objects: drop glue (Rust)", False, r"drop_in_place|<alloc::.*as core::ops::drop::Drop>|core::ptr::drop"),
    ("decode: JSON into typed objects", False,
     r"serde_json|serde::|serde_core|Deserialize|deserialize|Visitor|visit_|source::decode|"
     r"encoding/json|sigs\.k8s\.io/json|k8s\.io/apimachinery/pkg/runtime/serializer|k8s\.io/apimachinery/pkg/runtime\.|"
     r"json-iterator|reflect\.|strconv\.|unicode/utf8|core::str::|from_utf8|memchr|"
     r"k8s\.io/api/core/v1\.|k8s\.io/apimachinery/pkg/apis/meta/v1\.|k8s\.io/apimachinery/pkg/util/intstr|"
     r"k8s\.io/apimachinery/pkg/api/resource|k8s\.io/apimachinery/pkg/watch|k8s\.io/apimachinery/pkg/util/framer|"
     r"k8s\.io/client-go/rest/watch|k8s\.io/apimachinery/pkg/runtime/serializer/streaming|time\.parse|time\.Parse|"
     r"chrono::|jiff::"),
    ("the informer's own logic (queue, store, dispatch, maps, hashing)", False,
     r"kube_informer|kube_runtime|k8s\.io/client-go/tools/cache|dashmap|hashbrown|ahash|core::hash|siphash|"
     r"std::collections::hash|BTreeMap|btree|k8s\.io/client-go/informers|k8s\.io/apimachinery/pkg/util/sets|"
     r"k8s\.io/utils/buffer|runtime\.mapaccess|runtime\.mapdelete|runtime\.memhash|runtime\.strhash|aeshash"),
    ("memory copies (memcpy, memmove)", False, r"memcpy|memmove|memset|__memcpy|__memmove|runtime\.memmove"),
    ("async runtime, channels, HTTP client", False,
     r"tokio|futures|hyper|h2::|tower|bytes::|mio::|parking_lot|std::sync|std::thread|async_broadcast|event_listener|"
     r"kube_client|http_body|pin_project|async_stream|crossbeam|"
     r"runtime\.schedule|runtime\.findRunnable|runtime\.park|runtime\.notewake|runtime\.futex|runtime\.runqget|"
     r"runtime\.stealWork|runtime\.lock|runtime\.unlock|runtime\.mcall|runtime\.gopark|runtime\.goready|runtime\.ready|"
     r"runtime\.netpoll|runtime\.selectgo|runtime\.chansend|runtime\.chanrecv|runtime\.send|runtime\.recv|runtime\.casgstatus|"
     r"runtime\.execute|runtime\.resetspinning|runtime\.wakep|runtime\.startm|runtime\.stopm|runtime\.usleep|runtime\.nanotime|"
     r"runtime\.procyield|runtime\.osyield|runtime\.semrelease|runtime\.semacquire|runtime\.systemstack|runtime\.morestack|"
     r"sync\.|net/http|bufio\.|io\.|net\.|internal/poll|syscall\.|runtime\.entersyscall|runtime\.exitsyscall|context\.|"
     r"__lll_lock|pthread_|__GI___lll|syscall|epoll_wait|__futex"),
]
BUCKETS = []
for name, _, _ in RULES:
    if name not in BUCKETS:
        BUCKETS.append(name)
BUCKETS.append("other")
COMPILED = [(name, kernel, re.compile(pattern)) for name, kernel, pattern in RULES]


def classify(dso, kind, symbol):
    is_kernel = kind == "k" or dso.startswith("[kernel")
    text = f"{dso} {symbol}"
    for name, kernel_rule, pattern in COMPILED:
        if kernel_rule != is_kernel:
            continue
        if pattern.search(text):
            return name
    return "other"


def parse(path):
    buckets = {name: 0.0 for name in BUCKETS}
    symbols = []
    samples = 0
    with open(path) as report:
        for line in report:
            if line.startswith("# Samples:"):
                match = re.search(r"Samples:\s*([\d.]+)([KM]?)", line)
                if match:
                    scale = {"": 1, "K": 1_000, "M": 1_000_000}[match.group(2)]
                    samples = int(float(match.group(1)) * scale)
                continue
            match = LINE.match(line)
            if not match:
                continue
            share, dso, kind, symbol = float(match.group(1)), match.group(2), match.group(3), match.group(4)
            buckets[classify(dso, kind, symbol)] += share
            symbols.append((symbol[:90], share))
    symbols.sort(key=lambda item: -item[1])
    return {"buckets": buckets, "samples": samples, "top": symbols[:8]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--objects", type=int, required=True)
    parser.add_argument("reports", nargs="+", help="runner=perf-report.txt")
    args = parser.parse_args()
    runners = {}
    for item in args.reports:
        runner, path = item.split("=", 1)
        runners[runner] = parse(path)
    with open(args.out, "w") as out:
        json.dump(
            {
                "tool": "`perf record -e cpu-clock -F 1999` (Debian linux-perf), sampling every thread of the runner process, kernel included",
                "why": "This VM exposes no hardware counters (`perf stat -e instructions true` reports <not supported>), "
                "but the cpu-clock software event samples fine; unlike callgrind it sees kernel time (futex, "
                "scheduling, the socket) and runs the threads in parallel at full speed.",
                "objects": args.objects,
                "buckets": BUCKETS,
                "runners": runners,
            },
            out,
            indent=1,
        )


if __name__ == "__main__":
    main()
