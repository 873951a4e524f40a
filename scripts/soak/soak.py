"""The soak itself, run by run.sh inside a private e2e cluster: the mirror
operator under churn, apiserver restarts and etcd compactions, sampled all
along, then checked once everything has gone quiet.

    python3 soak.py OPERATOR_BINARY RESULTS_DIR

The cluster comes from the environment e2e/cluster.sh exports
(KUBE_INFORMER_E2E_KUBECONFIG, KUBE_INFORMER_E2E_CLUSTER_SCRIPT). Settings
(environment, minutes unless named otherwise):

    SOAK_MINUTES=30        length of the churn
    SOAK_RATE=3            churn writes per second
    SOAK_RESTART_EVERY=5   apiserver restarts (SIGTERM and SIGKILL in turn)
    SOAK_COMPACT_EVERY=3   etcd compactions, half a period after the restarts
    SOAK_SAMPLE_SECONDS=5  sampling period
    SOAK_SEED=1            the churn's random seed
    SOAK_OPERATOR_RESYNC   the operator's --resync in seconds (its own
                           default, 300, when unset; 0: never)

With fewer than 15 minutes the restart and compaction periods shrink to a
third of the run, so a short try (SOAK_MINUTES=3) sees each happen.

Phases, each bounded in time: setup (namespaces and sources, before the
operator runs), operator start, first convergence (quiet, then checked),
churn with the restarts and compactions, quiet again, the end check
(repeated until it holds or one operator resync period has passed), the
operator's stop. Everything lands in RESULTS_DIR: samples.csv (probe.py's
columns), events.jsonl (the phases, restarts, compactions, checks),
churn.jsonl (every write), operator.log (its stdout and stderr, each line
stamped with the soak's clock). Exit status 0 when the end check held at
quiescence, 1 when it did not.
"""

import csv
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time

import check
import churn
import probe
from kubeapi import Client, Kubeconfig

# The operator's default resync period (examples/operator/main.rs, RESYNC):
# how long the end check goes on when it fails, to tell a copy that is late
# from one no resync puts right.
OPERATOR_RESYNC_SECONDS = 300
QUIET_SECONDS = 30  # no reconcile for this long, an empty queue: quiet
QUIET_LIMIT_SECONDS = 600
START_LIMIT_SECONDS = 120
STOP_LIMIT_SECONDS = 60
RESTART_LIMIT_SECONDS = 300
# A restart or compaction this close to the churn's end is not started:
# the run's end is quiescence, not recovery.
CHAOS_MARGIN_SECONDS = 45


def setting(name, default):
    value = os.environ.get(name)
    return float(value) if value else default


class Soak:
    def __init__(self, binary, results):
        self.binary = binary
        self.results = results
        self.t0 = time.monotonic()
        self.events = open(os.path.join(results, "events.jsonl"), "a", encoding="utf-8")
        self.lock = threading.Lock()
        config = Kubeconfig(os.environ["KUBE_INFORMER_E2E_KUBECONFIG"])
        self.apiserver_port = config.port
        self.client = Client(config)
        self.churn_client = Client(config)
        self.cluster_script = os.environ["KUBE_INFORMER_E2E_CLUSTER_SCRIPT"]
        self.operator = None
        self.metrics_addr = None
        self.addr_seen = threading.Event()
        self.sampling = threading.Event()

    def now(self):
        return time.monotonic() - self.t0

    def event(self, name, **fields):
        line = json.dumps({"t": round(self.now(), 2), "event": name, **fields})
        with self.lock:
            self.events.write(line + "\n")
            self.events.flush()
        print(f"soak: {line}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------ the operator

    def start_operator(self):
        env = dict(os.environ, KUBECONFIG=os.environ["KUBE_INFORMER_E2E_KUBECONFIG"])
        env.setdefault("RUST_LOG", "warn,kube_informer=info")
        resync = os.environ.get("SOAK_OPERATOR_RESYNC")
        self.operator = subprocess.Popen(
            [self.binary, "--metrics-addr", "127.0.0.1:0", *(["--resync", resync] if resync else [])],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
        )
        log = open(os.path.join(self.results, "operator.log"), "a", encoding="utf-8")
        for stream, pipe in (("out", self.operator.stdout), ("err", self.operator.stderr)):
            threading.Thread(target=self.read_lines, args=(stream, pipe, log), daemon=True).start()
        self.event("operator-start", pid=self.operator.pid)
        if not self.addr_seen.wait(START_LIMIT_SECONDS):
            raise RuntimeError("the operator did not serve /metrics in time (see operator.log)")

    def read_lines(self, stream, pipe, log):
        marker = "serving /metrics on http://"
        for line in pipe:
            line = line.rstrip("\n")
            with self.lock:
                log.write(f"{self.now():.2f}\t{stream}\t{line}\n")
                log.flush()
            if marker in line and not self.addr_seen.is_set():
                self.metrics_addr = line.split(marker, 1)[1].split("/", 1)[0]
                self.addr_seen.set()

    def stop_operator(self):
        self.operator.send_signal(signal.SIGINT)
        try:
            code = self.operator.wait(STOP_LIMIT_SECONDS)
            self.event("operator-exit", code=code)
        except subprocess.TimeoutExpired:
            self.operator.kill()
            self.event("operator-exit", code=self.operator.wait(), killed=True)

    # ------------------------------------------------------------ sampling

    def sample_loop(self, period):
        path = os.path.join(self.results, "samples.csv")
        with open(path, "w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=probe.COLUMNS)
            writer.writeheader()
            next_at = time.monotonic()
            while not self.sampling.is_set() and self.operator.poll() is None:
                try:
                    writer.writerow(probe.sample(self.now(), self.operator.pid, self.apiserver_port, self.metrics_addr))
                    out.flush()
                except Exception as error:  # the process ended or /metrics failed
                    self.event("sample-failed", error=repr(error))
                next_at += period
                self.sampling.wait(max(0.0, next_at - time.monotonic()))

    def resyncs(self):
        try:
            return int(self.metrics()["resyncs"])
        except Exception:
            return None

    def metrics(self):
        samples = probe.scrape(self.metrics_addr)
        return {c: probe.metric_sum(samples, n, l) for c, (n, l) in probe.METRICS.items()}

    def wait_quiet(self, phase):
        """Until no reconcile ran for QUIET_SECONDS with nothing queued or
        running; at most QUIET_LIMIT_SECONDS. Returns the seconds it took,
        or None when it never got quiet."""
        began = time.monotonic()
        last, still_since = None, None
        while time.monotonic() - began < QUIET_LIMIT_SECONDS:
            try:
                m = self.metrics()
            except Exception as error:
                self.event("quiet-scrape-failed", error=repr(error))
                time.sleep(5)
                continue
            idle = m["queue_depth"] == 0 and m["active_workers"] == 0
            if idle and m["reconciles"] == last:
                if time.monotonic() - still_since >= QUIET_SECONDS:
                    took = time.monotonic() - began
                    self.event("quiet", phase=phase, after=round(took, 1), reconciles=int(m["reconciles"]))
                    return took
            else:
                last, still_since = m["reconciles"], time.monotonic()
            time.sleep(2)
        self.event("not-quiet", phase=phase, limit=QUIET_LIMIT_SECONDS)
        return None

    def check_until_held(self, phase, limit):
        """The end check now, then again every 15 s while it fails, for at
        most `limit` seconds. Returns whether the first check held."""
        began = time.monotonic()
        first = None
        while True:
            try:
                found = check.differences(self.client)
            except Exception as error:
                self.event("check-failed-to-read", phase=phase, error=repr(error))
                found = None
            if found is not None:
                by_kind = {}
                for kind, _, _ in found:
                    by_kind[kind] = by_kind.get(kind, 0) + 1
                self.event("check", phase=phase, held=not found, differences=by_kind, examples=found[:10],
                           resyncs=self.resyncs())
                if first is None:
                    first = not found
                if not found:
                    return first
            if time.monotonic() - began >= limit:
                return bool(first)
            time.sleep(15)

    # ------------------------------------------------------------ chaos

    def chaos_plan(self, seconds, restart_every, compact_every):
        plan = []
        t = restart_every
        while t < seconds - CHAOS_MARGIN_SECONDS:
            plan.append((t, "restart"))
            t += restart_every
        t = compact_every / 2
        while t < seconds - CHAOS_MARGIN_SECONDS:
            plan.append((t, "compact"))
            t += compact_every
        return sorted(plan)

    def cluster(self, *args, limit):
        done = subprocess.run(
            ["bash", self.cluster_script, *args], capture_output=True, text=True, timeout=limit
        )
        return done.returncode, done.stdout.strip(), done.stderr.strip()[-400:]

    def restart(self, number):
        how = ["--kill"] if number % 2 == 0 else []
        self.event("restart-begin", number=number, signal="KILL" if how else "TERM")
        code, _, err = self.cluster("restart-apiserver", *how, "--down-for", "2", limit=RESTART_LIMIT_SECONDS)
        self.event("restart-end", number=number, code=code, **({"stderr": err} if code else {}))

    def compact(self):
        code, out, err = self.cluster("compact", limit=60)
        self.event("compact", code=code, revision=out, **({"stderr": err} if code else {}))

    # ------------------------------------------------------------ the run

    def run(self):
        minutes = setting("SOAK_MINUTES", 30)
        rate = setting("SOAK_RATE", 3)
        short = minutes < 15
        restart_every = setting("SOAK_RESTART_EVERY", minutes / 3 if short else 5) * 60
        compact_every = setting("SOAK_COMPACT_EVERY", minutes / 3 if short else 3) * 60
        sample_period = setting("SOAK_SAMPLE_SECONDS", 5)
        seed = int(setting("SOAK_SEED", 1))
        self.write_meta(minutes=minutes, rate=rate, restart_every_s=restart_every,
                        compact_every_s=compact_every, sample_seconds=sample_period, seed=seed,
                        operator_resync_s=float(os.environ.get("SOAK_OPERATOR_RESYNC") or OPERATOR_RESYNC_SECONDS))

        driver = churn.Churn(self.churn_client, seed, os.path.join(self.results, "churn.jsonl"))
        driver.setup()
        self.event("setup-done", sources=churn.TARGET_POPULATION, targets=sum(driver.targets.values()))

        self.start_operator()
        sampler = threading.Thread(target=self.sample_loop, args=(sample_period,), daemon=True)
        sampler.start()
        self.wait_quiet("start")
        self.check_until_held("start", 120)

        seconds = minutes * 60
        driver.started = self.t0
        before = int(self.metrics()["reconciles"])
        thread, stop = churn.start(driver, rate, seconds)
        began = time.monotonic()
        self.event("churn-start", rate=rate, seconds=seconds, reconciles=before)
        restarts = 0
        for at, action in self.chaos_plan(seconds, restart_every, compact_every):
            wait = began + at - time.monotonic()
            if wait > 0 and stop.wait(wait):
                break
            if action == "restart":
                restarts += 1
                self.restart(restarts)
            else:
                self.compact()
        thread.join(max(0.0, began + seconds - time.monotonic()) + 60)
        stop.set()
        thread.join(60)
        self.event("churn-end", writes=driver.writes, failures=driver.failures,
                   copy_misses=driver.misses, stuck=thread.is_alive(), resyncs=self.resyncs())

        self.wait_quiet("end")
        held = self.check_until_held("end", OPERATOR_RESYNC_SECONDS + 60)
        try:
            sources, targets, copies = check.counts(self.client)
            self.event("final-counts", sources=sources, targets=targets, copies=copies)
        except Exception as error:
            self.event("final-counts-failed", error=repr(error))
        # One sample of the quiet operator before it is asked to stop, and
        # its last metrics page, whole.
        time.sleep(sample_period)
        try:
            with open(os.path.join(self.results, "metrics-end.txt"), "w", encoding="utf-8") as f:
                f.write(probe.page(self.metrics_addr))
        except Exception as error:
            self.event("metrics-page-failed", error=repr(error))
        self.sampling.set()
        sampler.join(30)
        self.stop_operator()
        return held

    def write_meta(self, **settings):
        def out(*cmd):
            try:
                return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
            except Exception:
                return ""

        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
        meta = {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": out("git", "rev-parse", "--short", "HEAD"),
            "dirty": bool(out("git", "status", "--porcelain", "--untracked-files=no")),
            "cpus": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "mem_total_kib": int(open("/proc/meminfo").readline().split()[1]),
            "load_at_start": open("/proc/loadavg").read().split()[:3],
            "kube_version": os.environ.get("KUBE_INFORMER_E2E_KUBE_VERSION"),
            "etcd_version": os.environ.get("KUBE_INFORMER_E2E_ETCD_VERSION"),
            "operator": self.binary, "apiserver_port": self.apiserver_port,
            "settings": settings,
        }
        with open(os.path.join(self.results, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, results = sys.argv[1], sys.argv[2]
    os.makedirs(results, exist_ok=True)
    soak = Soak(binary, results)
    try:
        held = soak.run()
    finally:
        if soak.operator is not None and soak.operator.poll() is None:
            soak.operator.kill()
            soak.operator.wait()
    soak.event("done", end_check_held=held)
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
