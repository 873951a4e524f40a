#!/usr/bin/env python3
"""Counts what a public-API listing holds, to see the surface at a glance.

Reads the output of `cargo public-api -ss` (public-api.txt, or a listing
of the same form given as the first argument) and prints:

- types: structs, enums, unions, traits and type aliases;
- functions and methods: free functions, inherent methods and the methods
  a public trait declares; the methods of trait impls (`clone`, `fmt`,
  `poll_next`, ...) are counted apart;
- error types: the types the listing shows implementing
  `core::error::Error`, by name;
- sync waits: the methods named `wait_until_synced`, `wait_for_sync` or
  `wait_for_cache_sync`, with their shapes (arguments and return type);
- the modules with the most types and functions, where to look next.

The listing names an item at every path it can be reached by (its module,
a re-export at the crate root, the prelude); each item is counted once: two
entries are the same item when they read the same with module paths left
out, members included. Python 3 standard library only.
"""

import re
import sys
from collections import Counter

HEADER = re.compile(r"^(?:#\[[^\]]*\] )*pub (mod|struct|enum|union|trait|type|fn|async fn|const fn|const|static|macro|use) (\S+)")
IMPL = re.compile(r"^(?:unsafe )?impl\b")
ERROR_IMPL = re.compile(r"^impl(?:<.*?>)? (?:core|std)::error::Error for (\S+)")
WAIT = re.compile(r"::(wait_until_synced|wait_for_sync|wait_for_cache_sync)\b")
MODULE_PATH = re.compile(r"\b(?:[a-z_][a-z0-9_]*::)+")
TYPE_KINDS = {"struct", "enum", "union", "trait", "type"}


def plain(line):
    """The line with every module path left out."""
    return MODULE_PATH.sub("", line)


def owner(path):
    """`kube_informer::a::B<K>::f` -> `B<K>` when `f` is a method (its
    owner starts with a capital), else None."""
    parts = re.sub(r"<[^<>]*(?:<[^<>]*>[^<>]*)*>", "", path).split("::")
    return parts[-2] if len(parts) > 2 and parts[-2][:1].isupper() else None


def module(path):
    parts = path.split("::")
    return parts[1] if len(parts) > 2 and parts[1][:1].islower() else "(root)"


def item_path(rest):
    """The path an item line names: up to the first space, `(`, `=` or
    `: ` outside angle brackets, so generics with several parameters
    (`Builder<K, S>::f`) stay whole."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "<":
            depth += 1
        elif ch == ">" and i > 0 and rest[i - 1] != "-":
            depth -= 1
        elif depth == 0 and (ch in " (=" or (ch == ":" and rest[i + 1 : i + 2] == " ")):
            return rest[:i]
    return rest


def fn_name(line):
    """The path of the function a line declares, or None."""
    m = HEADER.match(line)
    if not m or not m.group(1).endswith("fn"):
        return None
    return item_path(line[m.start(2):])


def blocks(lines):
    """Items with the lines that follow them (fields, variants, impls and
    their members), in listing order."""
    current = None
    for line in lines:
        m = HEADER.match(line)
        if m:
            kind = m.group(1)
            path = item_path(line[m.start(2):])
            # A method, an associated type or constant of an impl (also of
            # a blanket impl, `S::keys`, or of a reference, `&'a T`), is a
            # member of the item above it.
            member = kind not in ("mod", "struct", "enum", "union", "trait", "macro", "use") and (
                not path.startswith("kube_informer") or owner(path)
            )
            if not member:
                if current:
                    yield current
                current = (kind, path, [line])
                continue
        if current:
            current[2].append(line)
    if current:
        yield current


def main():
    listing = sys.argv[1] if len(sys.argv) > 1 else "public-api.txt"
    with open(listing, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]

    # One entry per item: the path it is counted under is its module's,
    # not a re-export's at the root or in the prelude, when it has one.
    items = {}
    for kind, path, body in blocks(lines):
        key = tuple(plain(line) for line in body)
        known = items.get(key)
        if known is None or module(known[1]) in ("(root)", "prelude"):
            items[key] = (kind, path, body)

    types = Counter()
    fns = impl_fns = 0
    by_module = Counter()
    waits = []
    for kind, path, body in items.values():
        if kind in TYPE_KINDS:
            types[kind] += 1
            by_module[module(path)] += 1
        elif kind in ("fn", "async fn", "const fn"):
            fns += 1
            by_module[module(path)] += 1
        in_trait_impl = False
        for line in body[1:]:
            if IMPL.match(line):
                in_trait_impl = " for " in line
                continue
            if fn_name(line) is None:
                continue
            if in_trait_impl:
                impl_fns += 1
                continue
            fns += 1
            by_module[module(path)] += 1
            if WAIT.search(line):
                waits.append(plain(line).replace("pub async fn ", "").replace("pub fn ", ""))

    errors = sorted({m.group(1) for line in lines if (m := ERROR_IMPL.match(line))})
    errors = [re.sub(r"<.*", "", e).replace("kube_informer::", "") for e in errors]
    shapes = sorted({re.sub(r"^.*?::wait_\w+", "", w) for w in waits})

    total = sum(types.values())
    print(f"public-api: {total} types ({', '.join(f'{n} {k}' for k, n in sorted(types.items()))})")
    print(f"public-api: {fns} functions and methods (and {impl_fns} methods of trait impls)")
    print(f"public-api: {len(errors)} error types: {', '.join(errors)}")
    print(f"public-api: {len(waits)} sync waits in {len(shapes)} shapes")
    for wait in sorted(waits):
        print(f"public-api:   {wait}")
    top = ", ".join(f"{m} {n}" for m, n in by_module.most_common(10))
    print(f"public-api: most types and functions by module: {top}")


if __name__ == "__main__":
    main()
