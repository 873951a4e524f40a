#!/usr/bin/env python3
"""Generate src/protobuf/schema_generated.rs from the Kubernetes .proto files.

The protobuf decoder (src/protobuf/) walks the wire format by a table of
messages: for each field its number, the JSON name k8s-openapi's
`Deserialize` impls match on, its type, and three flags read from the Go
struct fields (`json:",inline"`, `omitempty` on a non-pointer field, and
a non-pointer field, which Go's encoder writes even when zero; the testing
crate's encoder reads that one). The
.proto files give numbers and types; the Go sources beside them give the JSON
names (the proto name is the JSON name almost everywhere, the Go tag is the
authority), which fields are inlined into their parent in JSON, which
fields JSON leaves out when they hold the zero value, and which messages
are named slices (`type ExtraValue []string`: an array in JSON).

Usage:
    scripts/protobuf/gen_schema.py [--check] [--list-renames] [--api DIR] [--apimachinery DIR]

Without the directories it downloads the pinned modules with
`go mod download -json`. With --check it fails if the checked-in file
differs from what it would write.
"""
import argparse
import json
import os
import re
import subprocess
import sys

from generated_file import write_or_check

VERSION = "v0.34.13"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "src", "protobuf", "schema_generated.rs")

APIMACHINERY_PROTOS = [
    "pkg/apis/meta/v1",
    "pkg/api/resource",
    "pkg/util/intstr",
    "pkg/runtime",
]

SCALARS = {
    "string": "Str",
    "bytes": "Bytes",
    "bool": "Bool",
    "int32": "I32",
    "int64": "I64",
}
# The pinned .proto files use no other scalar types (unsigned, floating
# point); the decoder would need a Kind for each before the table names one.

# Messages whose JSON form is not an object of their fields.
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "RawJson",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawJson",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
}


def download(module):
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{VERSION}"],
        check=True, capture_output=True, text=True, cwd="/tmp",
    ).stdout
    return json.loads(out)["Dir"]


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


FIELD_RE = re.compile(
    r"^\s*(?:(optional|repeated|required)\s+([\w.]+)|map<\s*(\w+)\s*,\s*([\w.]+)\s*>)\s+(\w+)\s*=\s*(\d+)\s*(\[[^\]]*\])?\s*;")


def parse_proto(path):
    """Returns (package, [(message name, [(label, type, key type, name, number, packed)])])."""
    text = strip_comments(open(path).read())
    package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)
    messages = []
    depth = 0
    current = None
    for line in text.splitlines():
        m = re.match(r"^\s*message\s+(\w+)\s*\{", line)
        if m:
            if depth != 0:
                sys.exit(f"{path}: nested message {m.group(1)} is not supported")
            current = (m.group(1), [])
            messages.append(current)
            depth = 1
            continue
        if re.match(r"^\s*(enum|oneof)\b", line):
            sys.exit(f"{path}: {line.strip()} is not supported")
        if current and depth == 1:
            f = FIELD_RE.match(line)
            if f:
                label, typ, ktyp, vtyp, name, number, opts = f.groups()
                packed = bool(opts and "packed=true" in opts)
                if ktyp:
                    current[1].append(("map", vtyp, ktyp, name, int(number), packed))
                else:
                    current[1].append((label, typ, None, name, int(number), packed))
            elif line.strip() not in ("", "}") and not line.strip().startswith("reserved"):
                sys.exit(f"{path}: cannot read line {line.strip()!r}")
        depth += line.count("{") - line.count("}") if not re.match(r"^\s*message", line) else 0
        if depth == 0:
            current = None
    return package, messages


STRUCT_RE = re.compile(r"^type\s+(\w+)\s+struct\s*\{(?:\}|(.*?)^\})", re.S | re.M)
SLICE_RE = re.compile(r"^type\s+(\w+)\s+\[\](\S+)\s*$", re.M)
DEFINED_RE = re.compile(r"^type\s+(\w+)\s+(\w+)\.(\w+)\s*$", re.M)
IMPORT_RE = re.compile(r'^\s*(?:(\w+)\s+)?"(k8s\.io/api/[\w/]+)"', re.M)
GOFIELD_RE = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`", re.M)


def parse_go(directory):
    """Per Go struct: proto field number -> (json name, omitempty, pointer, inline).
    Also the named slice types of the package."""
    structs, slices, defined = {}, set(), {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".go") or name.endswith("_test.go") or name.startswith("zz_") or name == "generated.pb.go":
            continue
        text = open(os.path.join(directory, name)).read()
        text = re.sub(r"//[^\n]*", "", text)
        for s in STRUCT_RE.finditer(text):
            fields = {}
            for f in GOFIELD_RE.finditer(s.group(2) or ""):
                _, gotype, tags = f.groups()
                pb = re.search(r'protobuf:"([^"]*)"', tags)
                js = re.search(r'json:"([^"]*)"', tags)
                if not pb or len(pb.group(1).split(",")) < 2:
                    continue
                # Keyed by field number: the tag's name= is sometimes left out.
                pbname = int(pb.group(1).split(",")[1])
                jparts = js.group(1).split(",") if js else [""]
                fields[pbname] = (
                    jparts[0],
                    "omitempty" in jparts[1:],
                    gotype.startswith("*"),
                    "inline" in jparts[1:],
                )
            structs[s.group(1)] = fields
        for s in SLICE_RE.finditer(text):
            slices.add(s.group(1))
        imports = {(m.group(1) or m.group(2).rsplit("/", 1)[1]): m.group(2) for m in IMPORT_RE.finditer(text)}
        for s in DEFINED_RE.finditer(text):
            if s.group(2) in imports:
                # `type MatchCondition v1.MatchCondition`: the other package's fields.
                defined[s.group(1)] = (imports[s.group(2)], s.group(3))
    return structs, slices, defined


def group_name(directory):
    reg = os.path.join(directory, "register.go")
    if os.path.exists(reg):
        m = re.search(r'GroupName\s*=\s*"([^"]*)"', open(reg).read())
        if m:
            return m.group(1)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--list-renames", action="store_true",
                    help="print the fields whose JSON name differs from the proto name")
    ap.add_argument("--api")
    ap.add_argument("--apimachinery")
    args = ap.parse_args()
    api = args.api or download("k8s.io/api")
    machinery = args.apimachinery or download("k8s.io/apimachinery")

    dirs = []  # (proto path, go dir, apiVersion or None)
    for dirpath, _, files in sorted(os.walk(api)):
        if "generated.proto" in files:
            rel = os.path.relpath(dirpath, api)
            group, version = rel.split("/")
            gname = group_name(dirpath)
            if gname is None:
                sys.exit(f"{dirpath}: no GroupName")
            api_version = f"{gname}/{version}" if gname else version
            dirs.append((os.path.join(dirpath, "generated.proto"), dirpath, api_version))
    for rel in APIMACHINERY_PROTOS:
        d = os.path.join(machinery, rel)
        dirs.append((os.path.join(d, "generated.proto"), d, None))

    messages = []  # (full name, short name, fields, go struct fields, is slice, apiVersion)
    for proto, godir, api_version in dirs:
        package, msgs = parse_proto(proto)
        structs, slices, defined = parse_go(godir)
        for name, (path, other) in defined.items():
            structs.setdefault(name, parse_go(os.path.join(api, path[len("k8s.io/api/"):]))[0].get(other))
        for name, fields in msgs:
            messages.append((f"{package}.{name}", name, package, fields, structs.get(name), name in slices, api_version, proto))

    index = {m[0]: i for i, m in enumerate(messages)}
    lines = []
    renamed = []
    for full, name, package, fields, gofields, is_slice, api_version, proto in messages:
        special = SPECIAL.get(full, "List" if is_slice else "Object")
        if is_slice and (len(fields) != 1 or fields[0][3] != "items" or fields[0][0] != "repeated"):
            sys.exit(f"{full}: a named slice whose message is not `repeated items = 1`")
        if gofields is None and special == "Object":
            # e.g. core/v1 `type List metav1.List`: proto names, no flags.
            print(f"note: {full}: no Go struct beside its .proto; proto names used", file=sys.stderr)
        out = []
        for label, typ, ktyp, pname, number, packed in sorted(fields, key=lambda f: f[4]):
            def kind(t):
                if t in SCALARS:
                    return SCALARS[t]
                if t[0].islower():
                    sys.exit(f"{full}.{pname}: scalar type {t} has no Kind in src/protobuf/schema.rs")
                fq = t.lstrip(".") if t.startswith(".") else f"{package}.{t}"
                if fq not in index:
                    sys.exit(f"{full}.{pname}: unknown type {t}")
                return f"Msg({index[fq]})"
            jname, omit, ptr, inline = (gofields or {}).get(number, (pname, False, False, False))
            if gofields is not None and number not in gofields and special == "Object":
                sys.exit(f"{full}.{pname}: no Go field with this protobuf name")
            if jname != pname and not inline and jname:
                renamed.append(f"{full}.{pname} -> {jname}")
            if not jname and not inline:
                jname = pname
            if label == "map":
                if ktyp != "string":
                    sys.exit(f"{full}.{pname}: map key {ktyp} is not supported")
                lab = "Map"
            elif label == "repeated":
                lab = "Repeated"
            else:
                lab = "Single"
            flags = []
            if inline:
                flags.append("INLINE")
                jname = ""
            # JSON leaves out a zero-valued non-pointer scalar marked omitempty;
            # gogo protobuf writes it anyway, so the decoder drops it.
            if omit and not ptr and lab == "Single" and typ in SCALARS:
                flags.append("OMIT_ZERO")
            # Go writes a non-pointer field even when it holds the zero value
            # (a nil []byte excepted); an encoder writes that zero value for a
            # field JSON leaves out.
            if gofields is not None and not ptr and not inline and lab == "Single" and typ != "bytes":
                flags.append("ALWAYS_WRITTEN")
            out.append(f'f({number}, "{jname}", {kind(typ)}, {lab}, {"|".join(flags) or "0"})')
        if len(out) > 128:
            sys.exit(f"{full}: more than 128 fields")
        body = ", ".join(out)
        lines.append(f'    m("{name}", {special}, &[{body}]),')

    kinds = []
    for i, (full, name, package, fields, gofields, is_slice, api_version, proto) in enumerate(messages):
        if api_version is None:
            continue
        src = open(os.path.join(os.path.dirname(proto), "types.go")).read() if os.path.exists(os.path.join(os.path.dirname(proto), "types.go")) else ""
        m = re.search(r"^type\s+" + name + r"\s+struct\s*\{(.*?)^\}", src, re.S | re.M)
        if m and re.search(r"^\s*metav1\.TypeMeta\b", m.group(1), re.M):
            kinds.append((api_version, name, i))
    kinds.sort()

    text = [
        "// @generated by scripts/protobuf/gen_schema.py from the .proto files and Go",
        f"// struct tags of k8s.io/api and k8s.io/apimachinery {VERSION}. Do not edit.",
        "",
        "use super::schema::{Kind::*, Label::*, Shape::*, *};",
        "",
        f"pub(super) static MESSAGES: [Message; {len(lines)}] = [",
        *lines,
        "];",
        "",
        "/// Top-level kinds: (apiVersion, kind, message), sorted.",
        f"pub(super) static KINDS: [(&str, &str, u16); {len(kinds)}] = [",
        *[f'    ("{a}", "{k}", {i}),' for a, k, i in kinds],
        "];",
        "",
    ]
    content = "\n".join(text)
    if renamed and args.list_renames:
        print("fields whose JSON name differs from the proto name:", *renamed, sep="\n  ", file=sys.stderr)
    write_or_check(OUT, content, args.check, "scripts/protobuf/gen_schema.py",
                   f"wrote {OUT}: {len(lines)} messages, {len(kinds)} kinds")


if __name__ == "__main__":
    main()
