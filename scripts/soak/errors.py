"""Every line the operator printed, sorted into what it is and whether the
soak explains it.

A line is information (INFO, the start and stop messages) or an error. An
error line has a source and a cause:

- source: `reconcile` (the operator's "reconcile of K failed: ...;
  retrying"), `reconcile-log` (the controller's ERROR "reconcile failed":
  the same error again), `informer` (WARN "informer error": a list or watch
  failed), `client` (kube's ERROR "failed with error": the failed request
  under one of the others), or `other`;
- cause: `transport`, `server` (5xx, 429), `expired` (410), `conflict`
  (409: modified, or a delete's precondition), `not-found` (404), `taken`
  (a copy's name held by a ConfigMap that is no copy), or `unknown`.

Which ones are expected, and why:
- transport and server errors within a restart window (from the restart's
  start to RESTART_GRACE_SECONDS after the apiserver is ready again): the
  apiserver went away and came back;
- 410 within a restart window: a new apiserver's watch cache starts at
  etcd's current revision, so a watch resumed from before is too old;
- a conflict or a 404 on a copy: only two writers touch copies, the churn
  and the operator. If the churn wrote that copy in the CHURN_WINDOW_SECONDS
  before, it is the churn's edit or delete behind the operator's back;
  else the write that moved the copy on was the operator's own, not yet in
  its copies' cache when it decided the next one (the example does not use
  the controller's read-your-own-writes gate); the verdict says whether the
  churn had written its source in the SOURCE_WINDOW_SECONDS before (a
  source write makes the operator write every copy, and each copy's event
  brings the source back while the others' may still be on their way).
  Both are retried.
Anything else is unexplained: a finding.
"""

import json
import re

RESTART_GRACE_SECONDS = 30
CHURN_WINDOW_SECONDS = 120
SOURCE_WINDOW_SECONDS = 5

INFO = re.compile(
    r"^\S+Z\s+INFO |^mirroring; Ctrl-C stops$|^operator: serving /metrics on |^stopped after \d+ reconciles"
)
SOURCES = [
    ("reconcile", re.compile(r"^reconcile of \S+ failed: .*; retrying$")),
    ("reconcile-log", re.compile(r"\sERROR .*reconcile failed")),
    ("informer", re.compile(r"\sWARN .*informer error")),
    ("client", re.compile(r"\sERROR .*kube_client.*failed with error")),
]
CAUSES = [
    ("conflict", re.compile(r"code: 409|the object has been modified|Precondition failed")),
    ("expired", re.compile(r"\b410\b|Expired|too old resource version")),
    ("not-found", re.compile(r"code: 404|NotFound")),
    ("taken", re.compile(r"is not a mirror copy")),
    ("server", re.compile(r"code: 5\d\d|code: 429|ServiceUnavailable|InternalError|TooManyRequests|etcdserver")),
    (
        "transport",
        re.compile(
            r"\(Connect\)|\(SendRequest\)|Connection refused|connection reset|peer closed connection|error reading a body"
            r"|broken pipe|IncompleteMessage|connection closed|timed out|unexpected EOF",
            re.I,
        ),
    ),
]
# "update NS/NAME:", "delete NS/NAME:", "create ...", "read ...": the copy a
# reconcile was writing; and the source it was reconciling.
WRITE = re.compile(r"\b(update|delete|create|read) (\S+/\S+): ")
SOURCE = re.compile(r"^reconcile of (\S+) failed|object\.ref=(\S+)")


def read_log(path):
    """[(t, stream, text)] of operator.log."""
    lines = []
    for raw in open(path, encoding="utf-8", errors="replace"):
        t, stream, text = raw.rstrip("\n").split("\t", 2)
        lines.append((float(t), stream, text))
    return lines


def restart_windows(events):
    begins = {e["number"]: e["t"] for e in events if e["event"] == "restart-begin"}
    return [
        (begins[e["number"]], e["t"] + RESTART_GRACE_SECONDS)
        for e in events
        if e["event"] == "restart-end" and e["number"] in begins
    ]


def churn_writes(churn_path):
    """object path -> times the churn wrote it (successfully or not: a
    write whose answer was lost may still have happened). A line's target
    is the path, or a word and the path ("create ns/name")."""
    writes = {}
    for raw in open(churn_path, encoding="utf-8"):
        line = json.loads(raw)
        if line["target"]:
            writes.setdefault(line["target"].split()[-1], []).append(line["t"])
    return writes


def wrote_within(churned, path, t, seconds):
    return any(0 <= t - w <= seconds for w in churned.get(path, []))


def classify(t, text, windows, churned):
    """(source, cause, verdict) for one error line; verdict is the reason
    it is expected, or None when nothing explains it."""
    source = next((name for name, pattern in SOURCES if pattern.search(text)), "other")
    cause = next((name for name, pattern in CAUSES if pattern.search(text)), "unknown")
    in_restart = any(a <= t <= b for a, b in windows)
    verdict = None
    if cause in ("transport", "server") and in_restart:
        verdict = "apiserver restart"
    elif cause == "expired" and in_restart:
        verdict = "watch resumed on a restarted apiserver"
    elif cause in ("conflict", "not-found") and source != "informer":
        write, source_key = WRITE.search(text), SOURCE.search(text)
        if write and wrote_within(churned, write.group(2), t, CHURN_WINDOW_SECONDS):
            verdict = "the churn wrote the copy"
        elif write and source_key:
            changed = wrote_within(churned, source_key.group(1) or source_key.group(2), t, SOURCE_WINDOW_SECONDS)
            verdict = "the operator's own earlier write" + (", its source just changed" if changed else "")
    return source, cause, verdict


def account(log_path, events, churn_path):
    """The classes with their counts, and the unexplained lines."""
    windows = restart_windows(events)
    churned = churn_writes(churn_path)
    classes, unexplained, info = {}, [], 0
    for t, _, text in read_log(log_path):
        if INFO.search(text):
            info += 1
            continue
        source, cause, verdict = classify(t, text, windows, churned)
        key = (source, cause, verdict or "UNEXPLAINED")
        classes[key] = classes.get(key, 0) + 1
        if verdict is None:
            unexplained.append((t, text))
    return {
        "info_lines": info,
        "classes": [
            {"source": s, "cause": c, "verdict": v, "lines": n} for (s, c, v), n in sorted(classes.items())
        ],
        "unexplained": [{"t": t, "line": text[:600]} for t, text in unexplained],
    }
