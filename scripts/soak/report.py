"""The soak's figures, from the files soak.py wrote into a results folder:

    python3 report.py RESULTS_DIR     # writes RESULTS_DIR/summary.json, prints it

- duration, writes by operation, failed writes, restarts, compactions;
- RSS and connections to the apiserver: at the start, at the end of the
  warm-up, at the end, and their least-squares slope over the churn's
  samples after the warm-up (SOAK_WARMUP_MINUTES, default 5, or a third of
  a run shorter than 15 minutes), per minute and as % of their mean;
- reconciles per change: reconciles from the churn's start to the end's
  quiet, over the churn's successful writes;
- the operator's error lines by class (errors.py), cross-checked with the
  error counters of its last metrics;
- the end check, as events.jsonl recorded it.
Exit status 1 when the end check did not hold at quiescence or an error
line is unexplained.
"""

import csv
import json
import os
import sys

import errors


def slope(points):
    """Least-squares slope of [(x, y)]; None for fewer than 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def trend(rows, column, t_from, t_to):
    """Slope per minute over the samples in [t_from, t_to], with its mean."""
    points = [(r["t"] / 60, r[column]) for r in rows if t_from <= r["t"] <= t_to]
    per_minute = slope(points)
    mean = sum(y for _, y in points) / len(points) if points else None
    return {
        "samples": len(points),
        "mean": mean,
        "min": min((y for _, y in points), default=None),
        "max": max((y for _, y in points), default=None),
        "slope_per_minute": per_minute,
        "slope_percent_of_mean_per_minute": 100 * per_minute / mean if per_minute is not None and mean else None,
    }


def at(rows, t):
    """The first sample at or after t (the last one if none)."""
    return next((r for r in rows if r["t"] >= t), rows[-1])


def calm_stretches(events, t_end):
    """(from, to) from each restart's end to the next restart's start (the
    last one to t_end)."""
    ends = [e["t"] for e in events if e["event"] == "restart-end"]
    begins = [e["t"] for e in events if e["event"] == "restart-begin"][1:] + [t_end]
    return list(zip(ends, begins))


def failed_outside_restarts(results, events):
    """Churn writes that failed outside every restart window (errors.py's)."""
    windows = errors.restart_windows(events)
    lines = [json.loads(l) for l in open(os.path.join(results, "churn.jsonl"))]
    return [
        l for l in lines
        if l["outcome"] != "ok" and not any(a <= l["t"] <= b for a, b in windows)
    ]


def build(results):
    meta = json.load(open(os.path.join(results, "meta.json")))
    events = [json.loads(l) for l in open(os.path.join(results, "events.jsonl"))]
    with open(os.path.join(results, "samples.csv"), newline="") as f:
        rows = [{k: float(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]
    first = {}
    for e in events:
        first.setdefault(e["event"], e)
    last = {e["event"]: e for e in events}
    minutes = meta["settings"]["minutes"]
    warmup = float(os.environ.get("SOAK_WARMUP_MINUTES") or (minutes / 3 if minutes < 15 else 5)) * 60

    t_start = first["operator-start"]["t"]
    churn_start, churn_end = first["churn-start"], last["churn-end"]
    t_warm = t_start + warmup
    quiet_end = next((e for e in events if e["event"] == "quiet" and e["phase"] == "end"), None)
    writes = sum(churn_end["writes"].values())
    end_checks = [e for e in events if e["event"] == "check" and e["phase"] == "end"]
    restarts = [e for e in events if e["event"] == "restart-end"]
    compactions = [e for e in events if e["event"] == "compact"]
    begins = {e["number"]: e for e in events if e["event"] == "restart-begin"}
    log = errors.account(
        os.path.join(results, "operator.log"), events, os.path.join(results, "churn.jsonl")
    )
    final = rows[-1]
    lines_by_source = {}
    for c in log["classes"]:
        lines_by_source[c["source"]] = lines_by_source.get(c["source"], 0) + c["lines"]

    summary = {
        "meta": meta,
        "warmup_seconds": warmup,
        "churn_seconds": round(churn_end["t"] - churn_start["t"], 1),
        "run_seconds": round(events[-1]["t"], 1),
        "writes": writes,
        "writes_by_op": churn_end["writes"],
        "failed_writes": churn_end["failures"],
        "failed_writes_outside_restarts": failed_outside_restarts(results, events),
        "copy_writes_that_found_no_copy": churn_end["copy_misses"],
        "restarts": [
            {
                "number": e["number"],
                "signal": begins[e["number"]]["signal"],
                "at": begins[e["number"]]["t"],
                "took": round(e["t"] - begins[e["number"]]["t"], 1),
                "ok": e["code"] == 0,
            }
            for e in restarts
        ],
        "compactions": [{"at": e["t"], "revision": e["revision"], "ok": e["code"] == 0} for e in compactions],
        "rss_bytes": {
            "start": rows[0]["rss_bytes"],
            "after_warmup": at(rows, t_warm)["rss_bytes"],
            "end_of_churn": at(rows, churn_end["t"])["rss_bytes"],
            "end": final["rss_bytes"],
            "max": max(r["rss_bytes"] for r in rows),
            "after_warmup_trend": trend(rows, "rss_bytes", t_warm, churn_end["t"]),
        },
        "connections": {
            "start": rows[0]["conns_apiserver"],
            "after_warmup": at(rows, t_warm)["conns_apiserver"],
            "end": final["conns_apiserver"],
            "max": max(r["conns_apiserver"] for r in rows),
            "not_established_max": max(r["conns_apiserver_other"] for r in rows),
            "after_warmup_trend": trend(rows, "conns_apiserver", t_warm, churn_end["t"]),
        },
        # Between two restarts (from one's end to the next's start), so a
        # climb within quiet stretches is told from steps at the restarts.
        "rss_between_restarts": [
            {"from": a, "to": b, **trend(rows, "rss_bytes", a, b)} for a, b in calm_stretches(events, churn_end["t"])
        ],
        "fds_after_warmup_trend": trend(rows, "fds", t_warm, churn_end["t"]),
        "cpu_seconds": final["cpu_seconds"],
        "load1": {"mean": sum(r["load1"] for r in rows) / len(rows), "max": max(r["load1"] for r in rows)},
        "reconciles": {
            "total": final["reconciles"],
            "during_churn_and_settling": (quiet_end or last["churn-end"]).get("reconciles", final["reconciles"])
            - churn_start["reconciles"],
            "errors_metric": final["reconcile_errors"],
            "panics_metric": final["reconcile_panics"],
        },
        "informer_errors_metric": final["informer_errors"],
        "source_errors_metric": {
            k[len("source_errors_"):]: v for k, v in final.items() if k.startswith("source_errors_") and v
        },
        "relists": {"expired": final["relists_expired"], "error": final["relists_error"]},
        "watch_starts": final["watch_starts"],
        "log": log,
        "log_lines_by_source": lines_by_source,
        "end_check": {
            "held_at_quiescence": bool(end_checks) and end_checks[0]["held"],
            "checks": [
                {"t": e["t"], "held": e["held"], "differences": e["differences"], "resyncs": e.get("resyncs")}
                for e in end_checks
            ],
            # Resync notifications the controller got between the churn's
            # end and the first end check (None: not recorded by this run).
            "resyncs_before_check": (
                end_checks[0]["resyncs"] - churn_end["resyncs"]
                if end_checks and end_checks[0].get("resyncs") is not None and churn_end.get("resyncs") is not None
                else None
            ),
            "quiet_after_seconds": quiet_end and quiet_end["after"],
            "final_counts": last.get("final-counts"),
        },
    }
    summary["reconciles"]["per_change"] = (
        summary["reconciles"]["during_churn_and_settling"] / writes if writes else None
    )
    # Every reconcile error is one "reconcile of ... failed" line, every
    # informer error one "informer error" line.
    summary["log_matches_metrics"] = {
        "reconcile_lines": lines_by_source.get("reconcile", 0),
        "reconcile_errors_metric": final["reconcile_errors"],
        "informer_lines": lines_by_source.get("informer", 0),
        "informer_errors_metric": final["informer_errors"],
    }
    return summary


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = sys.argv[1]
    summary = build(results)
    with open(os.path.join(results, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("meta", "log")}, indent=2))
    print(json.dumps(summary["log"]["classes"], indent=2))
    for line in summary["log"]["unexplained"][:20]:
        print(f"UNEXPLAINED at {line['t']:.1f}s: {line['line']}")
    ok = summary["end_check"]["held_at_quiescence"] and not summary["log"]["unexplained"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
