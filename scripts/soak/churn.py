"""The soak's churn: a steady, bounded stream of writes to the mirror
operator's inputs and outputs, from a seeded random choice.

The world it writes to is fixed in size:
- `SLOTS` source ConfigMaps at most, each slot a fixed namespace and name;
  the namespaces are SOURCE_NAMESPACES plus one target namespace, so some
  sources live where copies go (they get no copy in their own namespace);
- the TARGET_NAMESPACES, each labelled `mirror-target=true` or not, never
  fewer than MIN_TARGETS labelled.
So at most SLOTS x len(TARGET_NAMESPACES) copies exist.

One write per tick, at `rate` ticks a second, picked by WEIGHTS:
- parents: update a source's data, create or delete one (the population
  drifts back to TARGET_POPULATION), remove or restore its `mirror=true`;
- children, behind the operator's back: edit a copy's data, delete a copy
  (the operator must repair both);
- a target namespace gains or loses its label (every source then moves).

The churn keeps its own model of the sources and namespaces to choose
writes; a write whose outcome is unknown (the apiserver went away mid-call)
marks its object for a fresh read before it is used again, so the model
never drifts from the server for long. Only writes the server answered with
success count as writes.
"""

import json
import random
import threading
import time

from kubeapi import ApiError, configmaps, namespace

SOURCE_LABEL, TARGET_LABEL = "mirror", "mirror-target"
SOURCE_NAMESPACES = ["soak-src-a", "soak-src-b", "soak-src-c"]
TARGET_NAMESPACES = [f"soak-tgt-{i}" for i in range(6)]
SLOTS = 200
TARGET_POPULATION = 150
MIN_TARGETS = 3
WEIGHTS = {
    "source-update": 40,
    "source-create-or-delete": 14,
    "source-label": 8,
    "copy-edit": 15,
    "copy-delete": 10,
    "namespace-label": 1,
}


def slot_key(slot):
    spaces = SOURCE_NAMESPACES + TARGET_NAMESPACES[:1]
    return spaces[slot % len(spaces)], f"cfg-{slot:03d}"


class Churn:
    """The model and the writes; `run` is the loop, for a thread."""

    def __init__(self, client, seed, log_path):
        self.client = client
        self.rng = random.Random(seed)
        self.log = open(log_path, "a", encoding="utf-8")
        # slot -> None (absent) or {"labelled": bool}; namespace -> labelled.
        self.sources = {slot: None for slot in range(SLOTS)}
        self.targets = {ns: False for ns in TARGET_NAMESPACES}
        self.stale = set()  # slots or namespaces to read again before use
        self.writes = {}  # op -> successful writes
        self.failures = {}  # "op: class" -> failed writes
        self.misses = 0  # copy writes that found no copy (not yet made, or gone)
        self.seq = 0
        self.current = ""  # the object the write in progress is for
        self.started = time.monotonic()

    # ------------------------------------------------------------ setup

    def setup(self, initial_targets=5):
        """Namespaces, TARGET_POPULATION labelled sources, `initial_targets`
        labelled target namespaces; before the operator starts."""
        for ns in SOURCE_NAMESPACES + TARGET_NAMESPACES:
            self.client.create(namespace(), {"metadata": {"name": ns}})
        for ns in TARGET_NAMESPACES[:initial_targets]:
            self.client.merge_patch(namespace(ns), {"metadata": {"labels": {TARGET_LABEL: "true"}}})
            self.targets[ns] = True
        for slot in self.rng.sample(range(SLOTS), TARGET_POPULATION):
            ns, name = slot_key(slot)
            self.client.create(configmaps(ns), self.source_object(name, True))
            self.sources[slot] = {"labelled": True}

    def source_object(self, name, labelled):
        labels = {SOURCE_LABEL: "true"} if labelled else {"soak": "unlabelled"}
        return {"metadata": {"name": name, "labels": labels}, "data": self.data()}

    def data(self):
        self.seq += 1
        # Sizes vary so copies grow and shrink, as real config does.
        payload = "".join(self.rng.choices("abcdef0123456789", k=self.rng.randrange(32, 1024)))
        return {"seq": str(self.seq), "payload": payload}

    # ------------------------------------------------------------ the loop

    def run(self, rate, deadline, stop):
        """One write per tick until `deadline` (monotonic) or `stop` is set.
        A tick missed while a write was slow is skipped, never caught up."""
        period = 1.0 / rate
        next_tick = time.monotonic()
        while not stop.is_set() and next_tick < deadline:
            self.tick()
            next_tick += period
            now = time.monotonic()
            if next_tick < now:
                next_tick = now
            stop.wait(max(0.0, next_tick - now))
        self.log.close()

    def tick(self):
        ops = list(WEIGHTS)
        op = self.rng.choices(ops, weights=[WEIGHTS[o] for o in ops])[0]
        self.current = ""
        try:
            done = getattr(self, op.replace("-", "_"))()
        except ApiError as error:
            self.failed(op, f"http_{error.status}")
            return
        except Exception as error:  # transport: refused, reset, timeout
            self.failed(op, type(error).__name__)
            return
        if done is not None:
            self.writes[op] = self.writes.get(op, 0) + 1
            self.record(op, done, "ok")

    def failed(self, op, cls):
        key = f"{op}: {cls}"
        self.failures[key] = self.failures.get(key, 0) + 1
        self.record(op, self.current, cls)

    def record(self, op, target, outcome):
        line = {"t": round(time.monotonic() - self.started, 2), "op": op, "target": target, "outcome": outcome}
        self.log.write(json.dumps(line) + "\n")

    # ------------------------------------------------------------ helpers

    def refresh_source(self, slot):
        """Reads a source whose last write had no answer; False if that
        read fails too (the op is then skipped)."""
        ns, name = slot_key(slot)
        try:
            found = self.client.request("GET", configmaps(ns, name))
            labels = found["metadata"].get("labels") or {}
            self.sources[slot] = {"labelled": labels.get(SOURCE_LABEL) == "true"}
        except ApiError as error:
            if error.status != 404:
                return False
            self.sources[slot] = None
        except Exception:
            return False
        self.stale.discard(slot)
        return True

    def pick_slot(self, want):
        """A slot whose state `want` accepts (after a fresh read if stale)."""
        for _ in range(8):
            slot = self.rng.randrange(SLOTS)
            if slot in self.stale and not self.refresh_source(slot):
                continue
            if want(self.sources[slot]):
                self.current = "/".join(slot_key(slot))
                return slot
        return None

    def unsure(self, what):
        """Marks a slot or namespace for a fresh read until its write is
        answered: if it never is, its outcome is unknown."""
        self.stale.add(what)

    # ------------------------------------------------------------ parents

    def source_update(self):
        slot = self.pick_slot(lambda s: s is not None)
        if slot is None:
            return None
        ns, name = slot_key(slot)
        self.unsure(slot)
        self.client.merge_patch(configmaps(ns, name), {"data": self.data()})
        self.stale.discard(slot)
        return f"{ns}/{name}"

    def source_create_or_delete(self):
        present = sum(1 for s in self.sources.values() if s is not None)
        absent = SLOTS - present
        # Creation odds fall as the population grows: it settles at
        # TARGET_POPULATION, where creates and deletes are even.
        spare = TARGET_POPULATION * absent / (SLOTS - TARGET_POPULATION)
        create = self.rng.random() < spare / (spare + present)
        slot = self.pick_slot((lambda s: s is None) if create else (lambda s: s is not None))
        if slot is None:
            return None
        ns, name = slot_key(slot)
        self.unsure(slot)
        if create:
            labelled = self.rng.random() < 0.9
            self.client.create(configmaps(ns), self.source_object(name, labelled))
            self.sources[slot] = {"labelled": labelled}
        else:
            self.client.delete(configmaps(ns, name))
            self.sources[slot] = None
        self.stale.discard(slot)
        return f"{'create' if create else 'delete'} {ns}/{name}"

    def source_label(self):
        relabel = self.rng.random() < 0.5
        slot = self.pick_slot(lambda s: s is not None and s["labelled"] != relabel)
        if slot is None:
            return None
        ns, name = slot_key(slot)
        self.unsure(slot)
        labels = {SOURCE_LABEL: "true"} if relabel else {SOURCE_LABEL: None}
        self.client.merge_patch(configmaps(ns, name), {"metadata": {"labels": labels}})
        self.sources[slot]["labelled"] = relabel
        self.stale.discard(slot)
        return f"{'label' if relabel else 'unlabel'} {ns}/{name}"

    # ------------------------------------------------------------ children

    def pick_copy(self):
        """A copy that should exist now, by the model: (namespace, name)."""
        slot = self.pick_slot(lambda s: s is not None and s["labelled"])
        if slot is None:
            return None
        ns, name = slot_key(slot)
        places = [t for t, on in self.targets.items() if on and t != ns]
        if not places:
            return None
        target = (self.rng.choice(places), f"{ns}.{name}")
        self.current = "/".join(target)
        return target

    def copy_write(self, write):
        copy = self.pick_copy()
        if copy is None:
            return None
        try:
            write(*copy)
        except ApiError as error:
            if error.status != 404:
                raise
            self.misses += 1
            return None
        return "/".join(copy)

    def copy_edit(self):
        return self.copy_write(
            lambda ns, name: self.client.merge_patch(
                configmaps(ns, name), {"data": {"seq": f"edited-{self.seq}"}}
            )
        )

    def copy_delete(self):
        return self.copy_write(lambda ns, name: self.client.delete(configmaps(ns, name)))

    # ------------------------------------------------------------ namespaces

    def namespace_label(self):
        ns = self.rng.choice(TARGET_NAMESPACES)
        self.current = ns
        if ns in self.stale and not self.refresh_namespace(ns):
            return None
        on = not self.targets[ns]
        if not on and sum(self.targets.values()) <= MIN_TARGETS:
            return None
        self.unsure(ns)
        value = "true" if on else None
        self.client.merge_patch(namespace(ns), {"metadata": {"labels": {TARGET_LABEL: value}}})
        self.targets[ns] = on
        self.stale.discard(ns)
        return f"{'label' if on else 'unlabel'} {ns}"

    def refresh_namespace(self, ns):
        try:
            found = self.client.request("GET", namespace(ns))
        except Exception:
            return False
        self.targets[ns] = (found["metadata"].get("labels") or {}).get(TARGET_LABEL) == "true"
        self.stale.discard(ns)
        return True


def start(churn, rate, seconds):
    """Runs `churn` on a thread for `seconds`; returns (thread, stop event)."""
    stop = threading.Event()
    deadline = time.monotonic() + seconds
    thread = threading.Thread(target=churn.run, args=(rate, deadline, stop), name="churn", daemon=True)
    thread.start()
    return thread, stop
