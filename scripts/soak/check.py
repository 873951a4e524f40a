"""The soak's end check, read from the apiserver (not from any cache): every
source is mirrored into every target namespace but its own, with the same
data, and no copy exists that should not.

- a source: a ConfigMap labelled `mirror=true`, not being deleted;
- a target: a namespace labelled `mirror-target=true`, not being deleted;
- a copy: a ConfigMap with the label `mirror.kube-informer.dev/source`; the
  copy of source `ns/name` in target `t` is `t/ns.name`, labelled `ns.name`.
"""

from kubeapi import namespace

COPY_LABEL = "mirror.kube-informer.dev/source"


def live(items):
    return [i for i in items if not i["metadata"].get("deletionTimestamp")]


def differences(client):
    """A list of (kind, object, detail) where the cluster is not as the
    operator should have left it; empty when it is. Raises on a failed read."""
    sources = live(client.list("/api/v1/configmaps", "mirror=true"))
    targets = [n["metadata"]["name"] for n in live(client.list(namespace(), "mirror-target=true"))]
    copies = {
        (c["metadata"]["namespace"], c["metadata"]["name"]): c
        for c in client.list("/api/v1/configmaps", COPY_LABEL)
    }
    found = []
    wanted = set()
    for source in sources:
        ns, name = source["metadata"]["namespace"], source["metadata"]["name"]
        value = f"{ns}.{name}"
        for target in targets:
            if target == ns:
                continue
            wanted.add((target, value))
            copy = copies.get((target, value))
            if copy is None:
                found.append(("missing", f"{target}/{value}", f"copy of {ns}/{name}"))
            elif copy["metadata"].get("labels", {}).get(COPY_LABEL) != value:
                found.append(("mislabelled", f"{target}/{value}", str(copy["metadata"].get("labels"))))
            elif (copy.get("data"), copy.get("binaryData")) != (source.get("data"), source.get("binaryData")):
                found.append(("stale", f"{target}/{value}", f"seq {seq(copy)} != source's {seq(source)}"))
    for key, copy in sorted(copies.items()):
        if key not in wanted:
            found.append(("orphan", "/".join(key), f"labelled {copy['metadata']['labels'].get(COPY_LABEL)}"))
    return found


def seq(configmap):
    return (configmap.get("data") or {}).get("seq")


def counts(client):
    """(sources, targets, copies) on the server now, for the report."""
    return (
        len(live(client.list("/api/v1/configmaps", "mirror=true"))),
        len(live(client.list(namespace(), "mirror-target=true"))),
        len(client.list("/api/v1/configmaps", COPY_LABEL)),
    )

