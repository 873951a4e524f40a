"""What the soak samples from the operator process, every few seconds.

- From /proc: its resident set (VmRSS), its open file descriptors, its CPU
  time, and its TCP sockets to the apiserver: the socket inodes among its
  descriptors, looked up in /proc/net/tcp{,6}, counted when their peer is the
  apiserver's port (established ones apart from the rest, e.g. CLOSE_WAIT,
  which would show connections the operator forgot to close).
- From its /metrics page (Prometheus text format): the counters named in
  METRICS below, summed over their labels unless a label is given.
- The machine's 1-minute load average, since other work shares the cores.
"""

import http.client
import os
import re

# Column name -> (metric name, {label: value} that must match).
METRICS = {
    "reconciles": ("controller_runtime_reconcile_total", {}),
    "reconcile_errors": ("controller_runtime_reconcile_errors_total", {}),
    "reconcile_panics": ("controller_runtime_reconcile_panics_total", {}),
    "active_workers": ("controller_runtime_active_workers", {}),
    "queue_depth": ("workqueue_depth", {}),
    "queue_retries": ("workqueue_retries_total", {}),
    "informer_errors": ("kube_informer_errors_total", {}),
    "watch_starts": ("kube_informer_watch_starts_total", {}),
    "relists_expired": ("kube_informer_relists_total", {"cause": "expired"}),
    "relists_error": ("kube_informer_relists_total", {"cause": "error"}),
    "cached_sources": ("kube_informer_store_objects", {"informer": "sources"}),
    "cached_copies": ("kube_informer_store_objects", {"informer": "copies"}),
    # Resync notifications handed to the controller: a round can repair a
    # missed event, so the end check says whether one ran.
    "resyncs": ("kube_informer_subscription_delivered_total", {"kind": "resync"}),
}

# Source errors by class (kube_informer_source_errors_total{class=...}).
SOURCE_ERROR_CLASSES = (
    "http_410", "http_429", "http_4xx", "http_5xx", "transport", "decode",
    "malformed_line", "timeout", "other",
)

COLUMNS = (
    ["t", "rss_bytes", "fds", "conns_apiserver", "conns_apiserver_other", "cpu_seconds", "load1"]
    + list(METRICS)
    + [f"source_errors_{c}" for c in SOURCE_ERROR_CLASSES]
)

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
TCP_ESTABLISHED = "01"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_metrics(text):
    """[(name, {label: value}, float)] for every sample line of a page."""
    samples = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        found = _SAMPLE.match(line)
        if found:
            labels = dict(_LABEL.findall(found.group(2) or ""))
            samples.append((found.group(1), labels, float(found.group(3))))
    return samples


def metric_sum(samples, name, labels):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in labels.items()))


def scrape(addr):
    """The operator's /metrics page, parsed; `addr` is host:port."""
    return parse_metrics(page(addr))


def page(addr):
    """The operator's /metrics page as text."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/metrics")
        reply = conn.getresponse()
        body = reply.read().decode()
        if reply.status != 200:
            raise RuntimeError(f"/metrics answered {reply.status}")
        return body
    finally:
        conn.close()


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def tcp_peers():
    """inode -> (remote port, state) of every TCP socket in this namespace."""
    peers = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table, encoding="ascii").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            peers[fields[9]] = (remote_port, fields[3])
    return peers


def process_figures(pid, apiserver_port):
    status = open(f"/proc/{pid}/status", encoding="ascii").read()
    rss_kib = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    stat = open(f"/proc/{pid}/stat", encoding="ascii").read()
    # Fields after the command name, which may hold spaces: utime and stime
    # are the 14th and 15th fields of the line.
    after_name = stat.rsplit(")", 1)[1].split()
    cpu = (int(after_name[11]) + int(after_name[12])) / CLOCK_TICKS
    inodes = socket_inodes(pid)
    peers = tcp_peers()
    established = other = 0
    for inode in inodes:
        port, state = peers.get(inode, (None, None))
        if port == apiserver_port:
            if state == TCP_ESTABLISHED:
                established += 1
            else:
                other += 1
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kib * 1024, fds, established, other, cpu


def sample(t, pid, apiserver_port, metrics_addr):
    """One row of COLUMNS. Raises OSError when the process is gone."""
    rss, fds, established, other, cpu = process_figures(pid, apiserver_port)
    load1 = float(open("/proc/loadavg", encoding="ascii").read().split()[0])
    row = {
        "t": round(t, 1), "rss_bytes": rss, "fds": fds, "conns_apiserver": established,
        "conns_apiserver_other": other, "cpu_seconds": round(cpu, 2), "load1": load1,
    }
    samples = scrape(metrics_addr)
    for column, (name, labels) in METRICS.items():
        row[column] = int(metric_sum(samples, name, labels))
    for c in SOURCE_ERROR_CLASSES:
        row[f"source_errors_{c}"] = int(metric_sum(samples, "kube_informer_source_errors_total", {"class": c}))
    return row
